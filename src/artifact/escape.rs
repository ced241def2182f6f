//! How response bytes become the inside of a JSON string: the raw export writes every byte of
//! every response as JSON string contents, escaped exactly as `serde_json` escapes strings (`"`
//! and `\` with a backslash; the control bytes as `\b \f \n \r \t` or `\u00XX`; everything
//! else, non-ASCII included, as it is).
//!
//! Server-sent events are JSON, so a quote comes every few bytes: each byte goes through one
//! table lookup into a small block on the stack, without a branch per escape. (A vector path,
//! sixteen bytes at a time, was dropped: the export escapes a stream's shape once a request,
//! about two events' worth, so it saved under a microsecond a request.)

/// Each byte inside a JSON string: its first two bytes (the byte itself and a byte that the next
/// one overwrites, or a backslash and a letter, or the start of `\u00XX`) and its length.
static ESCAPE: [([u8; 2], u8); 256] = {
    let mut t = [([0u8; 2], 1u8); 256];
    let mut b = 0;
    while b < 256 {
        t[b] = if b < 0x20 {
            ([b'\\', b'u'], 6)
        } else {
            ([b as u8, 0], 1)
        };
        b += 1;
    }
    t[0x08] = ([b'\\', b'b'], 2);
    t[0x0c] = ([b'\\', b'f'], 2);
    t[b'\n' as usize] = ([b'\\', b'n'], 2);
    t[b'\r' as usize] = ([b'\\', b'r'], 2);
    t[b'\t' as usize] = ([b'\\', b't'], 2);
    t[b'"' as usize] = ([b'\\', b'"'], 2);
    t[b'\\' as usize] = ([b'\\', b'\\'], 2);
    t
};

/// Output gathered on the stack before it is appended to the caller's buffer.
const BLOCK: usize = 512;
/// Room after [`BLOCK`] for the longest write at a position below it (`\u00XX`).
const SLACK: usize = 6;

/// Appends `bytes` to `out` as the inside of a JSON string; invalid UTF-8 is replaced (U+FFFD),
/// as text readers do. Validity is checked only for text with a non-ASCII byte, which the escape
/// itself notices: most responses are ASCII.
pub fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    if escape_into(out, bytes) && std::str::from_utf8(bytes).is_err() {
        out.truncate(start);
        escape_into(out, String::from_utf8_lossy(bytes).as_bytes());
    }
}

/// Appends `text` (taken as UTF-8) to `out` as the inside of a JSON string; returns whether it
/// held a byte beyond ASCII.
pub fn escape_into(out: &mut Vec<u8>, text: &[u8]) -> bool {
    // A token's text (the raw export escapes each on its own) is a few bytes that need nothing:
    // copied as they are, without zeroing the block.
    if text.len() <= 16
        && text
            .iter()
            .all(|&b| b < 0x80 && ESCAPE[usize::from(b)].1 == 1)
    {
        out.extend_from_slice(text);
        return false;
    }
    let mut block = [0u8; BLOCK + SLACK];
    let (mut n, mut high) = (0, 0);
    for &b in text {
        high |= b;
        n += escape_byte(b, &mut block[n..n + 6]);
        if n >= BLOCK {
            out.extend_from_slice(&block[..n]);
            n = 0;
        }
    }
    out.extend_from_slice(&block[..n]);
    high >= 0x80
}

/// Writes one byte's escape at the start of `to` (6 bytes of room); returns its length.
#[inline(always)]
fn escape_byte(b: u8, to: &mut [u8]) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let (two, len) = ESCAPE[usize::from(b)];
    to[0] = two[0];
    to[1] = two[1];
    if len == 6 {
        to[2] = b'0';
        to[3] = b'0';
        to[4] = HEX[usize::from(b >> 4)];
        to[5] = HEX[usize::from(b & 0xf)];
    }
    usize::from(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde(text: &[u8]) -> String {
        let s = serde_json::to_string(&String::from_utf8_lossy(text)).unwrap();
        s[1..s.len() - 1].to_string()
    }

    fn ours(text: &[u8]) -> String {
        let mut out = b"prefix".to_vec();
        push_escaped(&mut out, text);
        String::from_utf8(out[6..].to_vec()).unwrap()
    }

    /// Every ASCII byte, alone and at every position of 16- to 40-byte windows, as serde_json
    /// escapes it.
    #[test]
    fn every_byte_at_every_position() {
        for b in 0u8..0x80 {
            assert_eq!(ours(&[b]), serde(&[b]), "{b:#x}");
            for len in [16usize, 24, 40] {
                for at in 0..len {
                    let mut t = vec![b'a'; len];
                    t[at] = b;
                    assert_eq!(ours(&t), serde(&t), "{b:#x} at {at} of {len}");
                }
            }
        }
    }

    /// Random texts dense in quotes, backslashes, controls and multi-byte characters, of every
    /// length around the block sizes.
    #[test]
    fn random_texts_match_serde_json() {
        let alphabet: Vec<&str> = vec![
            "\"", "\\", "a", "b", "{", ":", ",", " ", "\n", "\t", "\u{1}", "\u{1f}", "é", "漢",
            "🎉", "\u{7f}", "/",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in (0..200).chain([511, 512, 513, 1030, 4100]) {
            for _ in 0..20 {
                let mut s = String::new();
                while s.len() < len {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s.push_str(alphabet[(x % alphabet.len() as u64) as usize]);
                }
                assert_eq!(ours(s.as_bytes()), serde(s.as_bytes()), "{s:?}");
            }
        }
    }

    /// Invalid UTF-8 anywhere is replaced as a text reader would; ASCII-only text is never validated and needs no replacing.
    #[test]
    fn invalid_utf8_is_replaced() {
        for t in [
            &b"tail\xff\xfeinvalid \xe2\x82"[..],
            b"\xff",
            b"abcdefghijklmnop\xc3",
            b"\"\"\"\"\xe2\x82\xac\"\"\"\"\xe2\x82",
        ] {
            assert_eq!(ours(t), serde(t), "{t:?}");
        }
        let mut out = Vec::new();
        assert!(!escape_into(
            &mut out,
            b"plain \"ascii\" text, long enough for words"
        ));
        assert!(escape_into(&mut out, "é".as_bytes()));
        assert!(escape_into(&mut out, "0123456789é".as_bytes()));
    }

    /// A server-sent event as a server writes it.
    #[test]
    fn an_event() {
        let e = br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796291758,"model":"gpt2","choices":[{"index":0,"delta":{"content":" the \"q\" \\ end"},"logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(ours(e), serde(e));
    }
}
