//! Reading the real engines' wire captures in `tests/fixtures/engines/` for unit tests: a
//! response's body with its chunked framing undone, and a stream's SSE `data:` payloads.
//! (The capture format: `tests/fixtures/engines/README.md`.)

use std::path::PathBuf;

/// The bytes of `tests/fixtures/engines/{engine}/{name}.http`, exactly as captured.
pub fn raw(engine: &str, name: &str) -> Vec<u8> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests/fixtures/engines",
        engine,
        &format!("{name}.http"),
    ]
    .iter()
    .collect();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The response body of a capture as text: after the head, de-chunked when the head says
/// `Transfer-Encoding: chunked`.
pub fn body(engine: &str, name: &str) -> String {
    let bytes = raw(engine, name);
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head ending in a blank line");
    let head = String::from_utf8_lossy(&bytes[..split]).to_ascii_lowercase();
    let rest = &bytes[split + 4..];
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    String::from_utf8(body).expect("a UTF-8 body")
}

/// Undoes chunked framing: `SIZE\r\nDATA\r\n` until the `0` chunk.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .expect("a hex chunk size");
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&rest[start..start + size]);
        rest = &rest[start + size + 2..];
    }
}

/// The `data:` payloads of a captured SSE stream, in order (`[DONE]` included).
pub fn sse_data(engine: &str, name: &str) -> Vec<String> {
    body(engine, name)
        .split("\n\n")
        .flat_map(|event| event.lines())
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|d| d.trim_start().to_string())
        .collect()
}
