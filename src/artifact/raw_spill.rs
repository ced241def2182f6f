//! Where a level's responses wait for its raw export: a compact spill file written while the
//! level runs, turned into `profile_export.json` once its measurement has ended
//! ([`super::raw_export::RawExportWriter::end_level`]).
//!
//! The JSON export is ~23 KB per 100-token streamed request: every event's text, escaped. Writing
//! that while the level ran cost the client 50–60 µs a request (on a 2-core VM, most of it the
//! kernel copying 2.5 GB into the page cache per 100 000 requests), took the collector's thread
//! and held the load back. Consecutive responses of one request differ in a few bytes (a chat
//! event's content, a tensor's value), so the spill keeps each response as the part that differs
//! from the previous one: ~1.5 KB a request, written in a few microseconds.
//!
//! # Format (this module reads only what it wrote, within one run)
//!
//! A sequence of records, each `len` (8 bytes, little-endian) then `len` bytes:
//!
//! ```text
//! prompt_index  varint
//! sent_ns       varint     run clock
//! responses     varint     count
//! per response:
//!   t_delta     varint     arrival (run clock) minus the previous one's (the first's minus sent_ns)
//!   kind        byte       0 whole, 1 same shape, 2 new shape
//!   kind 0 (a response kept whole):
//!     prefix    varint     bytes shared with the start of the previous response (0 for the first)
//!     suffix    varint     bytes shared with its end (never overlapping the prefix)
//!     middle    bytes
//!   kind 1 (a token event of the previous response's shape):
//!     text      bytes
//!   kind 2 (a token event of a shape new to the request):
//!     prefix    bytes      the shape's bytes before the text
//!     text      bytes
//!     suffix    bytes      the shape's bytes after the text
//! ```
//!
//! `bytes` is a varint length, then that many bytes; varints are LEB128 (7 bits a byte, low
//! first). A response's arrival precedes no earlier one (reads are timestamped in order), so
//! deltas are never negative; a clock that ran backwards would be clamped to 0 rather than wrap.
//! Shaped responses come back shaped, so the export escapes a shape once per request and each
//! event's text alone (`raw_export::request`).

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::record::capture::{Capture, Response};

/// Bytes gathered before a write to the spill file.
const GATHER: usize = 256 * 1024;

/// A response's kind in the spill (see the format above).
const WHOLE: u8 = 0;
const SAME_SHAPE: u8 = 1;
const NEW_SHAPE: u8 = 2;

/// A spill file being written (and, at a level's end, read back and emptied).
#[derive(Debug)]
pub struct Spill {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    record: Vec<u8>,
    /// Where two responses kept as shape and text are put together to be compared.
    scratch: [Vec<u8>; 2],
    /// Records written since the last [`Spill::drain`].
    pub records: u64,
}

/// One request read back: its prompt, send time and responses.
#[derive(Debug, Default)]
pub struct Spilled {
    /// The dataset entry sent.
    pub prompt_index: u64,
    /// When it was sent (run clock, ns).
    pub sent_ns: u64,
    /// Its responses as captured.
    pub capture: Capture,
    /// Where a shaped response is put together when a whole one is read as its delta.
    scratch: Vec<u8>,
}

impl Spill {
    /// Creates (truncates) the spill for an export at `export`: a hidden file beside it, removed
    /// by [`Spill::remove`].
    pub fn create(export: &Path) -> io::Result<Spill> {
        let name = export
            .file_name()
            .map_or_else(|| "raw".into(), |n| n.to_string_lossy().into_owned());
        let path = export.with_file_name(format!(".{name}.spill"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok(Spill {
            path,
            file,
            buf: Vec::with_capacity(GATHER + GATHER / 4),
            record: Vec::with_capacity(4096),
            scratch: [Vec::new(), Vec::new()],
            records: 0,
        })
    }

    /// Appends one request.
    pub fn push(&mut self, prompt_index: u64, sent_ns: u64, capture: &Capture) -> io::Result<()> {
        let Spill {
            record: r, scratch, ..
        } = self;
        r.clear();
        varint(r, prompt_index);
        varint(r, sent_ns);
        varint(r, capture.len() as u64);
        let mut prev_t = sent_ns;
        let mut prev: Option<Response> = None;
        for (t, cur) in capture.iter() {
            varint(r, t.saturating_sub(prev_t));
            match prev {
                // Two events of one shape share its prefix and suffix: nothing to compare.
                Some(p) if cur.shape != 0 && p.shape == cur.shape => {
                    r.push(SAME_SHAPE);
                    push_bytes(r, cur.middle);
                }
                _ if cur.shape != 0 => {
                    r.push(NEW_SHAPE);
                    push_bytes(r, cur.prefix);
                    push_bytes(r, cur.middle);
                    push_bytes(r, cur.suffix);
                }
                _ => {
                    let [a, b] = scratch;
                    let a = prev.as_ref().map_or(&[][..], |p| p.whole_in(a));
                    let b = cur.whole_in(b);
                    let prefix = common_prefix(a, b);
                    let suffix = common_suffix(&a[prefix..], &b[prefix..]);
                    r.push(WHOLE);
                    varint(r, prefix as u64);
                    varint(r, suffix as u64);
                    push_bytes(r, &b[prefix..b.len() - suffix]);
                }
            }
            (prev_t, prev) = (t, Some(cur));
        }
        self.buf
            .extend_from_slice(&(self.record.len() as u64).to_le_bytes());
        self.buf.extend_from_slice(&self.record);
        self.records += 1;
        if self.buf.len() >= GATHER {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Reads back every record pushed since the last drain, in order, handing each to `each`;
    /// then empties the file for the next level.
    pub fn drain(&mut self, mut each: impl FnMut(&Spilled) -> io::Result<()>) -> io::Result<()> {
        self.file.write_all(&self.buf)?;
        self.buf.clear();
        self.file.seek(SeekFrom::Start(0))?;
        let mut read = BufReader::with_capacity(GATHER, &mut self.file);
        let mut one = Spilled::default();
        let mut bytes = Vec::new();
        for _ in 0..self.records {
            let mut len = [0u8; 8];
            read.read_exact(&mut len)?;
            let len = u64::from_le_bytes(len);
            bytes.resize(usize::try_from(len).map_err(|_| corrupt())?, 0);
            read.read_exact(&mut bytes)?;
            decode(&bytes, &mut one)?;
            each(&one)?;
        }
        drop(read);
        self.records = 0;
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        Ok(())
    }

    /// Deletes the spill file.
    pub fn remove(self) -> io::Result<()> {
        drop(self.file);
        std::fs::remove_file(&self.path)
    }
}

/// Appends a length and the bytes.
fn push_bytes(r: &mut Vec<u8>, bytes: &[u8]) {
    varint(r, bytes.len() as u64);
    r.extend_from_slice(bytes);
}

/// Decodes one record into `into` (its capture reused).
fn decode(mut b: &[u8], into: &mut Spilled) -> io::Result<()> {
    into.prompt_index = take_varint(&mut b)?;
    into.sent_ns = take_varint(&mut b)?;
    let n = take_varint(&mut b)?;
    let Spilled {
        capture, scratch, ..
    } = into;
    capture.clear();
    let mut t = into.sent_ns;
    for _ in 0..n {
        t = t.saturating_add(take_varint(&mut b)?);
        let (&kind, rest) = b.split_first().ok_or_else(corrupt)?;
        b = rest;
        let ok = match kind {
            WHOLE => {
                let (prefix, suffix) = (take_len(&mut b)?, take_len(&mut b)?);
                let middle = take_bytes(&mut b)?;
                capture.push_like_last(t, prefix, middle, suffix, scratch)
            }
            SAME_SHAPE => capture.push_text(t, take_bytes(&mut b)?),
            NEW_SHAPE => {
                let (prefix, text) = (take_bytes(&mut b)?, take_bytes(&mut b)?);
                capture.push_new_shape(t, prefix, text, take_bytes(&mut b)?);
                true
            }
            _ => false,
        };
        if !ok {
            return Err(corrupt());
        }
    }
    Ok(())
}

/// Takes a varint that is a length.
fn take_len(b: &mut &[u8]) -> io::Result<usize> {
    usize::try_from(take_varint(b)?).map_err(|_| corrupt())
}

/// Takes a length and that many bytes.
fn take_bytes<'a>(b: &mut &'a [u8]) -> io::Result<&'a [u8]> {
    let n = take_len(b)?;
    if n > b.len() {
        return Err(corrupt());
    }
    let (bytes, rest) = b.split_at(n);
    *b = rest;
    Ok(bytes)
}

fn corrupt() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "the raw export's spill file is corrupt",
    )
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// How many trailing bytes `a` and `b` share.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(b: &mut &[u8]) -> io::Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first().ok_or_else(corrupt)?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
    }
    Err(corrupt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn responses(c: &Capture) -> Vec<(u64, Vec<u8>)> {
        c.iter().map(|(t, r)| (t, r.whole().into_owned())).collect()
    }

    /// Requests of every shape, kept whole or as shape and text, come back byte for byte, in
    /// order, across two levels.
    #[test]
    fn requests_come_back_exactly() {
        let tmp = tempfile::tempdir().unwrap();
        let mut spill = Spill::create(&tmp.path().join("profile_export.json")).unwrap();
        let event = |c: &str| {
            format!(
                r#"{{"id":"x","choices":[{{"delta":{{"content":"{c}"}},"finish_reason":null}}]}}"#
            )
        };
        let mut captures = Vec::new();
        for i in 0..50u64 {
            let mut c = Capture::default();
            // Same text, longer and shorter, empty, shared read times, binary.
            for (k, text) in ["the", "the", " cat", "", "sat on the mat", "a"]
                .iter()
                .enumerate()
            {
                let t = 1000 + i * 10 + (k as u64 / 2);
                if i % 2 == 0 {
                    c.push(t, event(text).as_bytes());
                } else {
                    // As the client keeps token events of the reader's shape; the key changes
                    // halfway (a shape learned again), the bytes the same.
                    let shape = event("|");
                    let (prefix, suffix) = shape.split_once('|').unwrap();
                    let (prefix, suffix) = (prefix.as_bytes(), suffix.as_bytes());
                    c.push_shaped(t, 1 + k as u64 / 3, prefix, text.as_bytes(), suffix);
                }
            }
            c.push(2000 + i, b"[DONE]");
            c.push(2000 + i, &[0, 1, 2, 255, 0, 1]);
            c.push(2001 + i, b"");
            captures.push(c);
        }
        captures.push(Capture::default());
        for round in 0..2 {
            for (i, c) in captures.iter().enumerate() {
                spill.push(i as u64 + round, 900 + i as u64, c).unwrap();
            }
            let mut back = Vec::new();
            spill
                .drain(|s| {
                    let shaped = s.capture.iter().filter(|(_, r)| r.shape != 0).count();
                    back.push((s.prompt_index, s.sent_ns, responses(&s.capture), shaped));
                    Ok(())
                })
                .unwrap();
            assert_eq!(back.len(), captures.len());
            for (i, (p, sent, r, shaped)) in back.iter().enumerate() {
                assert_eq!((*p, *sent), (i as u64 + round, 900 + i as u64));
                assert_eq!(r, &responses(&captures[i]), "request {i}");
                // Shaped events come back shaped, so the export escapes their shape once.
                let want = if i % 2 == 1 && i < 50 { 6 } else { 0 };
                assert_eq!(*shaped, want, "request {i}");
            }
        }
        let path = tmp.path().join(".profile_export.json.spill");
        assert!(path.exists());
        spill.remove().unwrap();
        assert!(!path.exists());
    }

    /// A 100-token chat stream spills in a small fraction of its size.
    #[test]
    fn a_stream_spills_small() {
        let tmp = tempfile::tempdir().unwrap();
        let mut spill = Spill::create(&tmp.path().join("x.json")).unwrap();
        let mut c = Capture::default();
        let mut size = 0;
        for k in 0..100 {
            let e = format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796291758,"model":"gpt2","choices":[{{"index":0,"delta":{{"content":" w{k}"}},"logprobs":null,"finish_reason":null}}]}}"#
            );
            size += e.len();
            c.push(1_000_000 + k * 5_000_000, e.as_bytes());
        }
        spill.push(7, 999_000, &c).unwrap();
        assert!(spill.buf.len() * 10 < size, "{} of {size}", spill.buf.len());
    }

    #[test]
    fn prefix_and_suffix_at_every_length() {
        for n in 0..40 {
            let a: Vec<u8> = (0..n as u8).collect();
            for cut in 0..=n {
                let mut b = a.clone();
                if cut < n {
                    b[cut] ^= 0xff;
                }
                assert_eq!(common_prefix(&a, &b), cut, "n {n} cut {cut}");
                let mut c = a.clone();
                if cut < n {
                    c[n - 1 - cut] ^= 0xff;
                }
                assert_eq!(common_suffix(&a, &c), cut, "n {n} cut {cut}");
            }
        }
        assert_eq!(common_suffix(b"xyzabc", b"abc"), 3);
    }

    #[test]
    fn corrupt_records_are_errors_not_panics() {
        let mut s = Spilled::default();
        // prompt 1, sent 2, one response at +0, then: its kind unknown; whole with a prefix the
        // (absent) last response lacks; its bytes' length past the end; the last shape's text
        // with no shape; a new shape cut short.
        for bad in [
            &[][..],
            &[0x80],
            &[1, 2, 1, 0, 5, 0, 0],
            &[1, 2, 1, 0, 0, 3, 0, 0],
            &[1, 2, 1, 0, 0, 0, 0, 9, 1],
            &[1, 2, 1, 0, 1, 1, b'a'],
            &[1, 2, 1, 0, 2, 1, b'{', 1, b'a'],
        ] {
            assert!(decode(bad, &mut s).is_err(), "{bad:?}");
        }
    }
}
