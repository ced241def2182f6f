//! How response bytes become the inside of a JSON string, fast: the raw export writes every byte
//! of every response as JSON string contents, escaped exactly as `serde_json` escapes strings
//! (`"` and `\` with a backslash; the control bytes as `\b \f \n \r \t` or `\u00XX`; everything
//! else, non-ASCII included, as it is).
//!
//! Server-sent events are JSON, so a quote comes every few bytes: a loop that branches per
//! escape mispredicts every few bytes and copies short runs between escapes, which made this
//! half of the collector's time with the raw export on. On x86-64 with SSSE3 and POPCNT (every x86-64
//! CPU since 2008) sixteen bytes are looked at a time instead (stored as they are when none
//! needs escaping), eight escaped at a time, straight into the output's reserved
//! room: their escape mask indexes a table of byte shuffles that spreads them out with room for
//! a backslash before each escaped byte, and the backslashes are blended in (eight bytes holding
//! a control byte take the table path, byte by byte). Elsewhere every byte takes the table path,
//! through a small block on the stack.

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
    // copied as they are, without the vector path's set-up.
    if text.len() <= 16
        && text
            .iter()
            .all(|&b| b < 0x80 && ESCAPE[usize::from(b)].1 == 1)
    {
        out.extend_from_slice(text);
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if simd::available() {
        // SAFETY: the CPU has SSSE3 and POPCNT (just checked).
        return unsafe { simd::escape_into(out, text) };
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

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_loadl_epi64, _mm_loadu_si128,
        _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_shuffle_epi8,
        _mm_srli_si128, _mm_storeu_si128,
    };
    use std::sync::OnceLock;

    /// Whether this CPU has SSSE3 and POPCNT (asked once).
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("ssse3")
                && std::arch::is_x86_feature_detected!("popcnt")
        })
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

    /// Input bytes escaped per reservation of `out`: each may become 6 output bytes.
    const CHUNK: usize = 1024;

    /// [`super::escape_into`] eight bytes at a time, written straight into `out`'s reserved
    /// room (one function, so the steps inline and no bounds are checked per step).
    ///
    /// # Safety
    /// The CPU must have SSSE3 and POPCNT.
    #[target_feature(enable = "ssse3,popcnt")]
    pub unsafe fn escape_into(out: &mut Vec<u8>, text: &[u8]) -> bool {
        let mut high = false;
        for chunk in text.chunks(CHUNK) {
            // Room for the worst case (every byte `\u00XX`) and one vector store's overrun.
            out.reserve(chunk.len() * 6 + 16);
            let start = out.len();
            // SAFETY: `reserve` made room for everything written below, which stays within
            // `chunk.len() * 6 + 16` bytes past `start`; every byte up to the new length is
            // written before `set_len`.
            unsafe {
                let base = out.as_mut_ptr().add(start);
                let (len, h) = escape_chunk(chunk, base);
                high |= h;
                out.set_len(start + len);
            }
        }
        high
    }

    /// Escapes `chunk` to `dst`; returns the length written and whether a byte was beyond ASCII.
    ///
    /// # Safety
    /// SSSE3 and POPCNT; `dst` writable for `chunk.len() * 6 + 16` bytes.
    #[inline]
    #[target_feature(enable = "ssse3,popcnt")]
    unsafe fn escape_chunk(chunk: &[u8], dst: *mut u8) -> (usize, bool) {
        let (mut n, mut high) = (0usize, 0i32);
        let mut blocks = chunk.chunks_exact(16);
        for w in &mut blocks {
            // SAFETY: `w` is 16 readable bytes; `dst + n` has at least 32 + 16 writable (the
            // caller's room: n <= 6 × the bytes consumed so far, and 16 bytes escape to <= 32).
            unsafe {
                let v: __m128i = _mm_loadu_si128(w.as_ptr().cast());
                high |= _mm_movemask_epi8(v);
                // b <= 0x1f, unsigned: max(b, 0x1f) == 0x1f.
                let ctrl =
                    _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
                if _mm_movemask_epi8(ctrl) != 0 {
                    n += table_path(w, dst.add(n));
                    continue;
                }
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                let m = _mm_movemask_epi8(_mm_or_si128(quote, backslash)) as usize;
                if m == 0 {
                    _mm_storeu_si128(dst.add(n).cast(), v);
                    n += 16;
                    continue;
                }
                n += spread8(v, m & 0xff, dst.add(n));
                n += spread8(_mm_srli_si128::<8>(v), m >> 8, dst.add(n));
            }
        }
        let mut rest = blocks.remainder();
        high |= i32::from(rest.iter().fold(0, |a, b| a | b) >> 7);
        if rest.len() >= 8 && !rest[..8].iter().any(|&b| b < 0x20) {
            // SAFETY: 8 readable bytes (a 64-bit load); room as above.
            unsafe {
                let v = _mm_loadl_epi64(rest.as_ptr().cast());
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                let m = (_mm_movemask_epi8(_mm_or_si128(quote, backslash)) & 0xff) as usize;
                n += spread8(v, m, dst.add(n));
            }
            rest = &rest[8..];
        }
        // SAFETY: as above, for at most 15 × 6 bytes.
        n += unsafe { table_path(rest, dst.add(n)) };
        (n, high != 0)
    }

    /// Writes the low 8 bytes of `v` to `dst` with a backslash before each byte whose bit is set
    /// in `m` (16 bytes are stored); returns how many are meant.
    ///
    /// # Safety
    /// SSSE3 and POPCNT; `dst` writable for 16 bytes.
    #[inline]
    #[target_feature(enable = "ssse3,popcnt")]
    unsafe fn spread8(v: __m128i, m: usize, dst: *mut u8) -> usize {
        let (shuffle, slashes) = &SHUFFLES[m];
        // SAFETY: the table rows are 16 bytes; `dst` has 16 (the caller's promise).
        unsafe {
            let spread = _mm_shuffle_epi8(v, _mm_loadu_si128(shuffle.as_ptr().cast()));
            let mask = _mm_loadu_si128(slashes.as_ptr().cast());
            let escaped = _mm_or_si128(
                _mm_andnot_si128(mask, spread),
                _mm_and_si128(mask, _mm_set1_epi8(b'\\' as i8)),
            );
            _mm_storeu_si128(dst.cast(), escaped);
        }
        8 + m.count_ones() as usize
    }

    /// Escapes `bytes` one by one through the table to `dst` (room for 6 bytes each).
    ///
    /// # Safety
    /// `dst` writable for `bytes.len() * 6` bytes.
    #[inline]
    unsafe fn table_path(bytes: &[u8], dst: *mut u8) -> usize {
        let mut n = 0;
        for &b in bytes {
            let mut tmp = [0u8; 6];
            let len = super::escape_byte(b, &mut tmp);
            // SAFETY: the caller's room.
            unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst.add(n), len) };
            n += len;
        }
        n
    }
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

    /// Invalid UTF-8 anywhere, in the vector path or the tail, is replaced as a text reader
    /// would; ASCII-only text is never validated and needs no replacing.
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
