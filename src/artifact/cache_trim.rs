//! Keeps a large file being written from growing the page cache: every [`WINDOW`] bytes, the
//! window just written is handed to the disk (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, which
//! starts its write-back and returns) and the window before it, mostly written back by then, is
//! dropped from the cache (`posix_fadvise(POSIX_FADV_DONTNEED)`). The write-back is then paid in
//! the client's own time rather than a kernel flusher's.
//!
//! The raw export's file goes past the page cache with direct I/O ([`super::bulk_file`]); this
//! is how it is written where a filesystem refuses direct I/O. The export writes ~26 KB a
//! request, gigabytes a run, that nobody reads until the run is
//! over. Left in the cache, every page of it is a page the kernel must find first: on the 2-core
//! VM, from a just-dropped cache, the copy into fresh page-cache pages
//! (`copy_folio_from_iter_atomic`; most likely the hypervisor backing each newly touched page)
//! took a third of the client's CPU, and the raw export cost 86–90 µs a request instead of ~48. Trimmed, the file cycles through a few windows of cache,
//! and the user's own cached files are not pushed out by a file nobody is reading. A page still
//! dirty or under write-back is not dropped, so nothing is lost; where the calls do not exist
//! (other systems) the file stays cached, as any file does.

use std::fs::File;

/// Bytes between two trims: large enough that the two calls cost nothing per request, small
/// enough that the cache holds only a few windows of the file.
pub const WINDOW: u64 = 32 << 20;

/// Where a file's trimming stands.
#[derive(Debug, Default)]
pub struct CacheTrim {
    /// Bytes written so far.
    written: u64,
    /// Start of the window handed to the disk and not dropped yet.
    pending: u64,
    /// End of the bytes handed to the disk.
    synced: u64,
}

impl CacheTrim {
    /// Notes `n` more bytes appended to `file`; trims once a window is full.
    pub fn wrote(&mut self, file: &File, n: usize) {
        self.written += n as u64;
        if self.written - self.synced < WINDOW {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = file.as_raw_fd();
            let off = |v: u64| libc::off64_t::try_from(v).unwrap_or(libc::off64_t::MAX);
            // SAFETY: two system calls on a descriptor `file` keeps open, with no pointers.
            // Their failure is ignored: all it costs is the cache keeping the pages.
            unsafe {
                libc::posix_fadvise64(
                    fd,
                    off(self.pending),
                    off(self.synced - self.pending),
                    libc::POSIX_FADV_DONTNEED,
                );
                libc::sync_file_range(
                    fd,
                    off(self.synced),
                    off(self.written - self.synced),
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = file;
        self.pending = self.synced;
        self.synced = self.written;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file written through the trim reads back whole: dropping windows from the cache never
    /// loses a byte (the pages go to disk first, or stay).
    #[test]
    fn every_byte_survives_the_trims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = File::create(&path).unwrap();
        let mut trim = CacheTrim::default();
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let chunks = (3 * WINDOW / chunk.len() as u64 + 1) as usize;
        for _ in 0..chunks {
            f.write_all(&chunk).unwrap();
            trim.wrote(&f, chunk.len());
        }
        drop(f);
        assert!(trim.pending > 0, "{trim:?}");
        let back = std::fs::read(&path).unwrap();
        assert_eq!(back.len(), chunks * chunk.len());
        assert!(back.chunks(chunk.len()).all(|c| c == chunk));
    }
}
