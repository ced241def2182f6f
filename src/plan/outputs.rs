//! Where a run's results go besides its artifact files, validated before any request is sent:
//! `--junit FILE`, `--output text|json`, `--push-gateway URL`, and the GitHub step summary
//! (`GITHUB_STEP_SUMMARY`).

use std::path::{Path, PathBuf};

use crate::error::UsageError;

/// What stdout carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StdoutFormat {
    /// The console tables (the default).
    #[default]
    Text,
    /// One JSON object per finished level and a final summary object, one per line; everything
    /// else goes to stderr.
    Json,
}

/// The run's result channels besides the artifact directory.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--junit FILE`: a JUnit XML report, one test case per check per level.
    pub junit: Option<PathBuf>,
    /// `--output`.
    pub stdout: StdoutFormat,
    /// `--push-gateway URL`: a Prometheus Pushgateway's base URL (no trailing slash).
    pub push_gateway: Option<String>,
    /// `GITHUB_STEP_SUMMARY`: the markdown file GitHub Actions shows on the job's page.
    pub step_summary: Option<PathBuf>,
}

impl Outputs {
    /// Whether stdout is reserved for JSON lines (console text then goes to stderr).
    pub fn json_stdout(&self) -> bool {
        self.stdout == StdoutFormat::Json
    }
}

/// Checks and builds the result channels. `step_summary` is `GITHUB_STEP_SUMMARY`'s value (an
/// empty value counts as unset).
pub fn resolve(
    junit: Option<&Path>,
    stdout: StdoutFormat,
    push_gateway: Option<&str>,
    step_summary: Option<PathBuf>,
) -> Result<Outputs, UsageError> {
    if let Some(p) = junit {
        check_writable("--junit", p)?;
    }
    Ok(Outputs {
        junit: junit.map(Path::to_path_buf),
        stdout,
        push_gateway: push_gateway.map(push_url).transpose()?,
        step_summary: step_summary.filter(|p| !p.as_os_str().is_empty()),
    })
}

/// Refuses a file that could not be written at the end of the run: its directory must exist and
/// take a new file (checked by creating and removing one), and the path must not be a directory.
/// Checked now so a long run never ends without its report.
pub fn check_writable(flag: &str, path: &Path) -> Result<(), UsageError> {
    let refuse = |why: String| {
        Err(UsageError(format!(
            "{flag} {}: {why}; give a file in a writable directory",
            path.display()
        )))
    };
    if path.is_dir() {
        return refuse("is a directory".into());
    }
    let Some(name) = path.file_name() else {
        return refuse("is not a file name".into());
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return refuse(format!("the directory {} does not exist", dir.display()));
    }
    let probe = dir.join(format!(
        ".{}.probe-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) => return refuse(format!("cannot create a file there ({e})")),
    }
    if path.exists()
        && let Err(e) = std::fs::OpenOptions::new().append(true).open(path)
    {
        return refuse(format!("cannot be overwritten ({e})"));
    }
    Ok(())
}

/// `--push-gateway`: an http(s) URL of the gateway itself (`http://host:9091`), without the
/// `/metrics/job/...` path, which ttftbench adds.
fn push_url(raw: &str) -> Result<String, UsageError> {
    let t = raw.trim().trim_end_matches('/');
    let rest = t
        .strip_prefix("http://")
        .or_else(|| t.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains("/metrics") => Ok(t.to_string()),
        Some(_) => Err(UsageError(format!(
            "--push-gateway {raw}: give the gateway's address only (e.g. http://pushgateway:9091); the /metrics/job/... path is added"
        ))),
        None => Err(UsageError(format!(
            "--push-gateway {raw}: expected an http:// or https:// URL, e.g. http://pushgateway:9091"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_path_checked_before_the_run() {
        let d = tempfile::tempdir().unwrap();
        let ok = d.path().join("junit.xml");
        let o = resolve(Some(&ok), StdoutFormat::Text, None, None).unwrap();
        assert_eq!(o.junit.as_deref(), Some(ok.as_path()));
        assert!(!ok.exists(), "the check leaves nothing behind");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        let missing = d.path().join("no/such/dir/junit.xml");
        let e = resolve(Some(&missing), StdoutFormat::Text, None, None).unwrap_err();
        assert!(e.0.contains("does not exist"), "{e}");
        let e = resolve(Some(d.path()), StdoutFormat::Text, None, None).unwrap_err();
        assert!(e.0.contains("is a directory"), "{e}");
    }

    #[test]
    fn push_gateway_urls() {
        let ok = |s: &str| push_url(s).unwrap();
        assert_eq!(ok("http://pg:9091/"), "http://pg:9091");
        assert_eq!(ok("https://pg.example/base"), "https://pg.example/base");
        assert!(push_url("pg:9091").unwrap_err().0.contains("http://"));
        assert!(
            push_url("http://pg:9091/metrics/job/x")
                .unwrap_err()
                .0
                .contains("address only")
        );
        let o = resolve(None, StdoutFormat::Json, None, Some(PathBuf::new())).unwrap();
        assert!(o.step_summary.is_none() && o.json_stdout());
    }
}
