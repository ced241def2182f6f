//! Where a run's results go besides its artifact files, validated before any request is sent:
//! `--junit FILE`, `--output text|json`, `--push-gateway URL`, and the GitHub step summary
//! (`GITHUB_STEP_SUMMARY`); the `--label key=value` tags every artifact carries; and how the
//! level being measured is shown while it runs (`--ui`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::UsageError;

/// What stdout carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum StdoutFormat {
    /// The console tables (the default).
    #[default]
    #[value(help = "The console tables")]
    Text,
    /// One JSON object per finished level and a final summary object, one per line; everything
    /// else goes to stderr.
    #[value(help = "One JSON object per finished level, then a summary object; all else on stderr")]
    Json,
}

/// `--ui`: what the terminal shows while a level runs. Where it is drawn, and whether a redrawn
/// view or plain lines, is decided when the run starts (`engine::live`): only a terminal gets
/// redraws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum UiMode {
    /// One or two lines redrawn in place (the default), one line left per level.
    #[default]
    #[value(help = "Two lines redrawn in place; one line per level stays")]
    Compact,
    /// A full-screen panel (the terminal's alternate screen) with the ladder so far.
    #[value(help = "A full-screen panel with the ladder so far; one line per level stays")]
    Dashboard,
    /// Nothing while levels run (`--quiet` implies it).
    #[value(help = "Nothing while levels run")]
    None,
}

/// The run's result channels besides the artifact directory.
#[derive(Debug, Clone)]
pub struct Outputs {
    /// `--junit FILE`: a JUnit XML report, one test case per check per level.
    pub junit: Option<PathBuf>,
    /// `--output`.
    pub stdout: StdoutFormat,
    /// `--push-gateway URL`: a Prometheus Pushgateway's base URL (no trailing slash).
    pub push_gateway: Option<String>,
    /// `GITHUB_STEP_SUMMARY`: the markdown file GitHub Actions shows on the job's page.
    pub step_summary: Option<PathBuf>,
    /// `--label key=value` tags, recorded in the run's context.
    pub labels: BTreeMap<String, String>,
    /// `--request-id-header`: the HTTP header requests carry their id in (`None`: none). The
    /// run's identity on the wire, beside its labels in the files.
    pub request_id_header: Option<String>,
    /// `--ui`: the live view while levels run.
    pub ui: UiMode,
}

impl Default for Outputs {
    /// Console text, nothing else, ids in the default header.
    fn default() -> Outputs {
        Outputs {
            junit: None,
            stdout: StdoutFormat::default(),
            push_gateway: None,
            step_summary: None,
            labels: BTreeMap::new(),
            request_id_header: Some(DEFAULT_REQUEST_ID_HEADER.into()),
            ui: UiMode::default(),
        }
    }
}

impl Outputs {
    /// Whether stdout is reserved for JSON lines (console text then goes to stderr).
    pub fn json_stdout(&self) -> bool {
        self.stdout == StdoutFormat::Json
    }
}

/// The names of a level's GenAI-Perf files, from `--profile-export-file NAME` as GenAI-Perf
/// derives them: the raw export is `NAME`, the tables `<stem>_genai_perf.csv` and `.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportNames {
    /// The raw per-request export (`profile_export.json`).
    pub raw: String,
    /// The statistics table (`profile_export_genai_perf.csv`).
    pub csv: String,
    /// The statistics JSON (`profile_export_genai_perf.json`).
    pub json: String,
}

impl Default for ExportNames {
    fn default() -> ExportNames {
        ExportNames::stemmed("profile_export.json", "profile_export")
    }
}

impl ExportNames {
    fn stemmed(raw: &str, stem: &str) -> ExportNames {
        ExportNames {
            raw: raw.to_string(),
            csv: format!("{stem}_genai_perf.csv"),
            json: format!("{stem}_genai_perf.json"),
        }
    }

    /// `--profile-export-file NAME`: a bare file name (GenAI-Perf refuses a path too, since the
    /// file goes into each level's directory), none of `reserved` (the level's other files).
    pub fn from_file(name: &str, reserved: &[&str]) -> Result<ExportNames, UsageError> {
        let refuse = |why: &str| {
            Err(UsageError(format!(
                "--profile-export-file {name}: {why}; give a bare file name such as my_export.json (it is written into each level's directory; choose the directory with --artifact-dir)"
            )))
        };
        if name.is_empty() || name == "." || name == ".." {
            return refuse("not a file name");
        }
        if name.contains(['/', '\\']) {
            return refuse("a path, not a file name");
        }
        let stem = Path::new(name)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(name);
        let names = ExportNames::stemmed(name, stem);
        if reserved.contains(&name) {
            return refuse("the name of another file ttftbench writes into a level's directory");
        }
        Ok(names)
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
        ..Outputs::default()
    })
}

/// The header requests carry their id in unless `--request-id-header` says otherwise.
pub const DEFAULT_REQUEST_ID_HEADER: &str = "X-Request-ID";

/// `--request-id-header NAME|none`: an HTTP token (RFC 9110: letters, digits and
/// `!#$%&'*+-.^_`|~`) that is not a header the client writes itself.
pub fn request_id_header(raw: &str) -> Result<Option<String>, UsageError> {
    header_name("--request-id-header", raw, DEFAULT_REQUEST_ID_HEADER)
}

/// A flag naming a header ttftbench adds to each request (`none`: no header): an HTTP token
/// that is not a header the client writes itself; `example` is shown in errors.
pub fn header_name(flag: &str, raw: &str, example: &str) -> Result<Option<String>, UsageError> {
    let name = raw.trim();
    if name.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(UsageError(format!(
            "{flag} '{raw}': not an HTTP header name; give one like {example}, or none"
        )));
    }
    let own = [
        "host",
        "content-type",
        "content-length",
        "authorization",
        "connection",
    ];
    if own.iter().any(|h| name.eq_ignore_ascii_case(h)) {
        return Err(UsageError(format!(
            "{flag} {name}: ttftbench writes that header itself; pick another, e.g. {example}"
        )));
    }
    Ok(Some(name.to_string()))
}

/// `--label key=value` tags: keys of letters, digits, `_`, `-`, `.` and `/` (as Kubernetes
/// label keys), each given once; values one line of at most 256 characters.
pub fn labels(raw: &[String]) -> Result<BTreeMap<String, String>, UsageError> {
    let mut out = BTreeMap::new();
    for r in raw {
        let refuse = |why: &str| {
            Err(UsageError(format!(
                "--label {r}: {why}; give --label key=value, e.g. --label release=v2.3"
            )))
        };
        let Some((k, v)) = r.split_once('=') else {
            return refuse("no '='");
        };
        let (k, v) = (k.trim(), v.trim());
        let key_ok = !k.is_empty()
            && k.len() <= 63
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        if !key_ok {
            return refuse("the key must be 1-63 letters, digits, '_', '-', '.' or '/'");
        }
        if v.chars().count() > 256 || v.contains(['\n', '\r']) {
            return refuse("the value must be one line of at most 256 characters");
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return refuse("this key is given twice");
        }
    }
    Ok(out)
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
    fn labels_parsed_and_refused() {
        let raw = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let l = labels(&raw(&["release=v2.3", "team = serving", "note="])).unwrap();
        assert_eq!(
            l.into_iter().collect::<Vec<_>>(),
            [("note", ""), ("release", "v2.3"), ("team", "serving")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        for (bad, why) in [
            ("release", "no '='"),
            ("=v", "the key"),
            ("a b=c", "the key"),
            ("k=line\nbreak", "one line"),
        ] {
            let e = labels(&raw(&[bad])).unwrap_err();
            assert!(e.0.contains(why), "{bad}: {e}");
        }
        let e = labels(&raw(&["a=1", "a=2"])).unwrap_err();
        assert!(e.0.contains("twice"), "{e}");
    }

    #[test]
    fn export_names_follow_genai_perf() {
        assert_eq!(
            ExportNames::default(),
            ExportNames::from_file("profile_export.json", &[]).unwrap()
        );
        let n = ExportNames::from_file("run7.json", &[]).unwrap();
        assert_eq!(
            (n.raw.as_str(), n.csv.as_str(), n.json.as_str()),
            ("run7.json", "run7_genai_perf.csv", "run7_genai_perf.json")
        );
        assert_eq!(
            ExportNames::from_file("raw", &[]).unwrap().csv,
            "raw_genai_perf.csv"
        );
        for (bad, why) in [
            ("out/x.json", "a path"),
            ("", "not a file name"),
            ("histograms.json", "another file"),
        ] {
            let e = ExportNames::from_file(bad, &["histograms.json"]).unwrap_err();
            assert!(e.0.contains(why), "{bad}: {e}");
        }
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
