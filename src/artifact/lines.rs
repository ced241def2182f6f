//! Append-only line files (`requests.jsonl`, `timeline.csv`) that always end at a complete
//! line: lines are composed whole in memory and handed to the file system only in whole lines,
//! and when a write fails (full disk, file-size limit) the file is cut back to the last complete
//! line, writing stops, and the error says how much was saved.
//!
//! A process killed in the middle of a large `write` can still leave a partial last line; every
//! earlier line is whole, so readers skip an unterminated last line.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes gathered before they are written: large enough that a write costs nothing per line.
const BUFFER: usize = 1 << 16;

/// A line file whose writing stopped: the file, how much of it is whole on disk, and why.
#[derive(Debug, thiserror::Error)]
#[error(
    "writing {} failed after {lines} complete lines ({bytes} bytes) were saved; later lines are missing: {cause}{}",
    path.display(),
    super::atomic::full_disk_hint(cause)
)]
pub struct LinesError {
    /// The file.
    pub path: PathBuf,
    /// Complete lines on disk.
    pub lines: u64,
    /// Their size in bytes (the file's length).
    pub bytes: u64,
    /// What the file system said (part of the message, not a separate source: shown once).
    pub cause: std::io::Error,
}

/// An open line file.
#[derive(Debug)]
pub struct LineFile {
    path: PathBuf,
    file: File,
    /// Whole lines not yet written.
    buf: Vec<u8>,
    /// Lines in `buf`.
    buffered: u64,
    /// Bytes and lines on disk, all complete.
    bytes: u64,
    lines: u64,
    /// Set once a write failed; nothing more is written.
    failed: Option<std::io::Error>,
}

impl LineFile {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<LineFile> {
        Ok(LineFile {
            path: path.to_path_buf(),
            file: File::create(path)?,
            buf: Vec::with_capacity(BUFFER),
            buffered: 0,
            bytes: 0,
            lines: 0,
            failed: None,
        })
    }

    /// Appends one line composed by `compose` (which writes its text; a missing final newline
    /// is added). A line that cannot be composed is dropped whole. After a failed write this
    /// does nothing: the error is kept for [`LineFile::finish`].
    pub fn line(&mut self, compose: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) {
        if self.failed.is_some() {
            return;
        }
        let start = self.buf.len();
        if compose(&mut self.buf).is_err() {
            self.buf.truncate(start);
            return;
        }
        if self.buf.last() != Some(&b'\n') {
            self.buf.push(b'\n');
        }
        self.buffered += 1;
        if self.buf.len() >= BUFFER {
            self.write_out();
        }
    }

    /// Writes the buffered lines. On failure the file is cut back to its last complete line.
    fn write_out(&mut self) {
        if self.buf.is_empty() || self.failed.is_some() {
            return;
        }
        match self.file.write_all(&self.buf) {
            Ok(()) => {
                self.bytes += self.buf.len() as u64;
                self.lines += self.buffered;
            }
            Err(e) => {
                // Part of the buffer may have landed: cut it off. Truncating frees space, so it
                // works on a full disk too.
                let _ = self.file.set_len(self.bytes);
                self.failed = Some(e);
            }
        }
        self.buf.clear();
        self.buffered = 0;
    }

    /// Writes what is buffered and closes the file; the first write error, with what was saved.
    pub fn finish(mut self) -> Result<u64, LinesError> {
        self.write_out();
        if self.failed.is_none()
            && let Err(e) = self.file.flush()
        {
            self.failed = Some(e);
        }
        match self.failed.take() {
            None => Ok(self.lines),
            Some(source) => Err(LinesError {
                path: self.path.clone(),
                lines: self.lines,
                bytes: self.bytes,
                cause: source,
            }),
        }
    }
}

impl Drop for LineFile {
    /// Lines composed before an early exit (an error path, a panic unwinding) still reach the
    /// file, whole.
    fn drop(&mut self) {
        self.write_out();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_lines_only() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("r.jsonl");
        let mut f = LineFile::create(&p).unwrap();
        for i in 0..5000 {
            f.line(|b| write!(b, "{{\"seq\":{i}}}"));
        }
        // A line that fails half-way is dropped whole.
        f.line(|b| {
            b.extend_from_slice(b"{\"half\":");
            Err(std::io::Error::other("no"))
        });
        assert_eq!(f.finish().unwrap(), 5000);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 5000);
        assert!(text.ends_with("{\"seq\":4999}\n"));
    }

    #[test]
    fn full_device_is_a_clear_error() {
        // /dev/full: every write fails with ENOSPC, as a full disk does.
        let Ok(mut f) = LineFile::create(Path::new("/dev/full")) else {
            return;
        };
        for i in 0..20_000 {
            f.line(|b| write!(b, "line {i}"));
        }
        let e = f.finish().unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("/dev/full") && msg.contains("0 complete lines"),
            "{msg}"
        );
        assert!(msg.contains("free space"), "{msg}");
    }
}
