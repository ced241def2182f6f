//! Whole-file artifacts written so that a reader never sees half of one: the bytes go to a
//! temporary file in the same directory, are synced to disk, and the file is renamed over the
//! final name (atomic on POSIX file systems). A crash, Ctrl-C or a full disk leaves either the
//! previous complete file or none, never a truncated JSON or CSV that `compare` would read.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A whole-file write that failed; nothing was left under the final name.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {cause}{}", path.display(), full_disk_hint(cause))]
pub struct WriteError {
    /// The file that was to be written.
    pub path: PathBuf,
    /// What the file system said (part of the message, not a separate source: shown once).
    pub cause: std::io::Error,
}

/// What to do when a write failed because the disk or a file-size limit is full (empty for
/// other causes); shared by every artifact writer.
pub(crate) fn full_disk_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => {
            " (the disk or a file-size limit is full: free space or choose another --artifact-dir)"
        }
        _ => "",
    }
}

/// Writes `bytes` to `path` atomically: temporary file beside it, `fsync`, rename, then a sync
/// of the directory so the rename itself survives a power cut. On failure the temporary file is
/// removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), WriteError> {
    let fail = |source| WriteError {
        path: path.to_path_buf(),
        cause: source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| {
        fail(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file name",
        ))
    })?;
    // Hidden, and unique per process and call, so concurrent writers never share one.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{n}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes.as_ref())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // The directory entry: best effort (some file systems refuse to sync a directory).
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("summary.json");
        write_atomic(&p, b"{\"a\":1}").unwrap();
        write_atomic(&p, b"{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":2}");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "only the file itself");
    }

    #[test]
    fn failure_names_the_file_and_keeps_the_old_one() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("missing-dir").join("x.csv");
        let e = write_atomic(&p, b"a,b\n").unwrap_err();
        assert!(e.to_string().contains("missing-dir/x.csv"), "{e}");
        // A directory in the way of the rename: the old content stays, no temporary remains.
        let d = tmp.path().join("taken");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("inner"), b"x").unwrap();
        assert!(write_atomic(&d, b"new").is_err());
        assert!(d.join("inner").exists());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
