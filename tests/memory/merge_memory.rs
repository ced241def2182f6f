//! `merge` combines raw exports without holding them: two shards' `profile_export.json` of
//! 100 000 requests each (tens of MB) merge into one file holding all their requests while the
//! process's peak resident memory grows by a small fraction of the files' size. One test at a time
//! in its binary (`tests/memory`), so nothing else moves the process's high-water mark.

use crate::common;

use std::io::{BufWriter, Write};
use std::path::Path;

use common::peak_rss;
use ttftbench::artifact::raw_export;
use ttftbench::load::Stimulus;
use ttftbench::merge::raw_export::merge_files;

const REQUESTS: u64 = 100_000;

/// Writes a one-level chat export of `REQUESTS` streamed requests as a shard does (request by
/// request, nothing held), its sends `offset` ns after the others'.
fn write_export(path: &Path, offset: u64) {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    out.write_all(raw_export::open(&Stimulus::Concurrency(8)).as_bytes())
        .unwrap();
    let t0 = 1_767_225_600_000_000_000u64 + offset;
    for i in 0..REQUESTS {
        let sent = t0 + i * 1_000_000;
        if i > 0 {
            out.write_all(b",").unwrap();
        }
        let times: Vec<String> = (1..=8)
            .map(|k| (sent + k * 5_000_000).to_string())
            .collect();
        let outs =
            [r#"{"response":"data: {\"choices\":[{\"delta\":{\"content\":\" tok\"}}]}\n\n"}"#; 8];
        write!(
            out,
            r#"{{"timestamp":{sent},"request_inputs":{{"payload":"{{\"model\":\"gpt2\",\"messages\":[{{\"role\":\"user\",\"content\":\"prompt {i}\"}}],\"stream\":true}}"}},"response_timestamps":[{}],"response_outputs":[{}]}}"#,
            times.join(","),
            outs.join(",")
        )
        .unwrap();
    }
    let end = t0 + (REQUESTS - 1) * 1_000_000 + 40_000_000;
    out.write_all(raw_export::experiment_close(Some((t0, end))).as_bytes())
        .unwrap();
    out.write_all(raw_export::footer("ttftbench 0", "openai", "v1/chat/completions").as_bytes())
        .unwrap();
    out.flush().unwrap();
}

#[test]
fn raw_exports_merge_in_flat_memory() {
    let _one = crate::ONE_AT_A_TIME.blocking_lock();
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    let b = tmp.path().join("b.json");
    write_export(&a, 0);
    write_export(&b, 500_000);
    let size = std::fs::metadata(&a).unwrap().len() + std::fs::metadata(&b).unwrap().len();
    let to = tmp.path().join("merged.json");
    let before = peak_rss();
    let n = merge_files(&[a, b], &to, Stimulus::Concurrency(16)).unwrap();
    let grown = peak_rss().saturating_sub(before);
    assert_eq!(n, 2 * REQUESTS);
    println!(
        "merged {n} requests from {:.1} MB of exports: peak RSS grew {:.1} MB (from {:.1} MB)",
        size as f64 / 1e6,
        grown as f64 / 1e6,
        before as f64 / 1e6
    );
    // Generous: buffers and the allocator's slack, far below the 2 × tens of MB read.
    assert!(
        grown < size / 8,
        "peak RSS grew {grown} bytes merging {size} bytes"
    );
    // The result is valid JSON (checked without building it in memory), and read back as an
    // export it holds every request.
    let file = || std::io::BufReader::new(std::fs::File::open(&to).unwrap());
    let _: serde::de::IgnoredAny = serde_json::from_reader(file()).unwrap();
    let again = tmp.path().join("again.json");
    assert_eq!(
        merge_files(std::slice::from_ref(&to), &again, Stimulus::Concurrency(16)).unwrap(),
        2 * REQUESTS
    );
    let mut head = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file(), 200), &mut head).unwrap();
    assert!(
        head.starts_with(r#"{"experiments":[{"experiment":{"mode":"concurrency","value":16},"requests":[{"timestamp":1767225600000000000,"#),
        "{head}"
    );
}
