//! The library's one error type. Every failure says what went wrong and what to do next, and
//! carries the exit code it maps to: usage mistakes 2, failed runs 1, interruptions 130. Only
//! `main` turns an [`Error`] into text and a process exit code.

use std::path::{Path, PathBuf};

/// A mistake in the command line or in a file it names: exit code 2, with a message saying
/// what to change. Parsers of flags and input files return it; it converts into [`Error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A [`UsageError`] saying `msg`, as the `Err` a parser returns.
pub fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Why a command did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line, a file it names, or the server's answer to discovery says the run cannot
    /// be what was asked (unknown model, wrong port, missing input): exit 2, nothing measured.
    #[error("{0}")]
    Usage(String),
    /// The run could not be carried out (server unreachable, every request failed, a thread
    /// died): exit 1.
    #[error("{0}")]
    Failed(String),
    /// A file could not be read or written: exit 1.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// `read`, `write`, `create`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Stopped by a signal before there was anything to report: exit 130.
    #[error("interrupted before anything was measured")]
    Interrupted,
}

/// A library result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
            Error::Failed(_) | Error::Io { .. } => 1,
            Error::Interrupted => 130,
        }
    }

    /// A usage error from a message.
    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }

    /// A failed run from a message.
    pub fn failed(msg: impl Into<String>) -> Error {
        Error::Failed(msg.into())
    }

    /// An I/O error on `path`.
    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The same error with `context: ` in front of its message (usage and failures only).
    pub fn context(self, context: impl std::fmt::Display) -> Error {
        match self {
            Error::Usage(m) => Error::Usage(format!("{context}: {m}")),
            Error::Failed(m) => Error::Failed(format!("{context}: {m}")),
            other => other,
        }
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Error {
        Error::Usage(e.0)
    }
}

/// Creates `dir` and its parents, naming it in the error.
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))
}

/// Joins an error's source chain into one line ("error sending request: connection refused").
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(src) = cur {
        let t = src.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = src.source();
    }
    s
}

/// Gives a typed error about a file or flag named on the command line its `exit_code` (2, a
/// usage error) and its conversion into [`Error`].
macro_rules! usage_error {
    ($t:ty) => {
        impl $t {
            /// The exit code: a usage error.
            pub fn exit_code(&self) -> u8 {
                2
            }
        }

        impl From<$t> for $crate::error::Error {
            fn from(e: $t) -> Self {
                $crate::error::Error::Usage(e.to_string())
            }
        }
    };
}
pub(crate) use usage_error;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_messages() {
        assert_eq!(Error::usage("give -m").exit_code(), 2);
        assert_eq!(Error::failed("every request failed").exit_code(), 1);
        assert_eq!(Error::Interrupted.exit_code(), 130);
        let e = Error::io(
            "write",
            Path::new("/x/y.json"),
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
        );
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "cannot write /x/y.json: denied");
        let u: Error = UsageError("bad flag".into()).into();
        assert_eq!(
            u.context("--concurrency").to_string(),
            "--concurrency: bad flag"
        );
    }
}
