//! How response bytes become the inside of a JSON string, fast: the raw export writes every byte
//! of every response as JSON string contents, escaped exactly as `serde_json` escapes strings
//! (`"` and `\` with a backslash; the control bytes as `\b \f \n \r \t` or `\u00XX`; everything
//! else, non-ASCII included, as it is).
//!
//! Server-sent events are JSON, so a quote comes every few bytes: a loop that branches per
//! escape mispredicts every few bytes and copies short runs between escapes, which made this
//! half of the collector's time with the raw export on. On x86-64 with SSSE3 (every x86-64 CPU
//! since 2006) eight bytes are escaped at a time instead: their escape mask indexes a table of
//! byte shuffles that spreads them out with room for a backslash before each escaped byte, and
//! the backslashes are blended in (a block holding a control byte takes the table path, byte by
//! byte). Elsewhere every byte takes the table path.

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
/// Room after [`BLOCK`] for the longest write at a position below it: eight control bytes of
/// `\u00XX` each.
const SLACK: usize = 48;

/// Appends `text` (valid UTF-8) to `out` as the inside of a JSON string.
pub fn escape_into(out: &mut Vec<u8>, text: &[u8]) {
    let mut block = [0u8; BLOCK + SLACK];
    let mut n = 0;
    let mut rest = text;
    #[cfg(target_arch = "x86_64")]
    if simd::available() {
        while rest.len() >= 8 {
            // SAFETY: SSSE3 is available (checked above).
            match unsafe { simd::escape8(&rest[..8], &mut block[n..n + 16]) } {
                Some(len) => n += len,
                None => {
                    for &b in &rest[..8] {
                        n += escape_byte(b, &mut block[n..n + 6]);
                    }
                }
            }
            rest = &rest[8..];
            if n >= BLOCK {
                out.extend_from_slice(&block[..n]);
                n = 0;
            }
        }
    }
    for &b in rest {
        n += escape_byte(b, &mut block[n..n + 6]);
        if n >= BLOCK {
            out.extend_from_slice(&block[..n]);
            n = 0;
        }
    }
    out.extend_from_slice(&block[..n]);
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

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_loadl_epi64, _mm_loadu_si128,
        _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_shuffle_epi8,
        _mm_storeu_si128,
    };
    use std::sync::OnceLock;

    /// Whether this CPU has SSSE3 (asked once).
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| std::arch::is_x86_feature_detected!("ssse3"))
    }

    /// For each mask of which of 8 bytes need a backslash: the shuffle that places input byte i
    /// after the backslashes of the bytes before it (and a copy of it where its own backslash
    /// goes), and which output bytes are backslashes. Built at compile time (8 KB).
    static SHUFFLES: [([u8; 16], [u8; 16]); 256] = {
        let mut t = [([0x80u8; 16], [0u8; 16]); 256];
        let mut m = 0;
        while m < 256 {
            let mut j = 0;
            let mut i = 0;
            while i < 8 {
                if m & (1 << i) != 0 {
                    t[m].0[j] = i as u8;
                    t[m].1[j] = 0xff;
                    j += 1;
                }
                t[m].0[j] = i as u8;
                j += 1;
                i += 1;
            }
            m += 1;
        }
        t
    };

    /// Escapes the 8 bytes of `from` into `to` (16 writable); returns the
    /// length written, or `None` when a control byte is among them (they take the table path).
    ///
    /// # Safety
    /// The CPU must have SSSE3.
    #[target_feature(enable = "ssse3")]
    pub unsafe fn escape8(from: &[u8], to: &mut [u8]) -> Option<usize> {
        assert!(from.len() >= 8 && to.len() >= 16);
        // SAFETY: `from` holds 8 bytes and `to` 16 (asserted); unaligned loads and stores.
        unsafe {
            let v: __m128i = _mm_loadl_epi64(from.as_ptr().cast());
            // b <= 0x1f, unsigned: max(b, 0x1f) == 0x1f.
            let ctrl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
            if _mm_movemask_epi8(ctrl) & 0xff != 0 {
                return None;
            }
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            let m = (_mm_movemask_epi8(_mm_or_si128(quote, backslash)) & 0xff) as usize;
            let (shuffle, slashes) = &SHUFFLES[m];
            let spread = _mm_shuffle_epi8(v, _mm_loadu_si128(shuffle.as_ptr().cast()));
            let mask = _mm_loadu_si128(slashes.as_ptr().cast());
            let out = _mm_or_si128(
                _mm_andnot_si128(mask, spread),
                _mm_and_si128(mask, _mm_set1_epi8(b'\\' as i8)),
            );
            _mm_storeu_si128(to.as_mut_ptr().cast(), out);
            Some(8 + m.count_ones() as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde(text: &[u8]) -> String {
        let s = serde_json::to_string(std::str::from_utf8(text).unwrap()).unwrap();
        s[1..s.len() - 1].to_string()
    }

    fn ours(text: &[u8]) -> String {
        let mut out = b"prefix".to_vec();
        escape_into(&mut out, text);
        String::from_utf8(out[6..].to_vec()).unwrap()
    }

    /// Every ASCII byte, alone and at every position of a 16- and 24-byte window, against
    /// serde_json: the vector path and the table path agree with it.
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

    /// A server-sent event as a server writes it.
    #[test]
    fn an_event() {
        let e = br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796291758,"model":"gpt2","choices":[{"index":0,"delta":{"content":" the \"q\" \\ end"},"logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(ours(e), serde(e));
    }
}
