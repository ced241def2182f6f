//! Run plans as files (issue 14.1): `--config FILE.toml` of long flag names, the command line
//! winning over the file, `--print-config`, `run.toml` written beside each level's files and
//! repeating the run, secrets never written, and bad files refused with their line and key.

use crate::common;

use std::path::Path;

use common::{args, run_bin, run_in, start_round};

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each level's prompts by request: (seq, prompt index) from requests.jsonl, in seq order
/// (rows are written as requests finish, which concurrency reorders).
fn prompts(dir: &Path) -> Vec<(u64, u64)> {
    let mut p: Vec<(u64, u64)> = common::rows(dir)
        .iter()
        .map(|r| {
            (
                r["seq"].as_u64().unwrap(),
                r["prompt_index"].as_u64().unwrap(),
            )
        })
        .collect();
    p.sort_unstable();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_repeats_from_the_run_toml_it_wrote() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = write(
        &tmp.path().join("plan.toml"),
        &format!(
            "# a sweep as a file\nmodel = \"gpt2\"\nendpoint-type = \"chat\"\nstreaming = true\n\
             url = \"{}\"\nconcurrency = [1, 2]\nrequest-count = 4\noutput-tokens-mean = 3\n\
             synthetic-input-tokens-mean = 30\nsynthetic-input-tokens-stddev = 10\nnum-prompts = 7\n\
             random-seed = 11\nlabel = [\"team=serving\"]\nraw-export = \"full\"\n\
             # the same text every run (the default salts each run afresh)\nprompt-salt = \"none\"\n",
            sim.http_url()
        ),
    );
    let first = tmp.path().join("first");
    let (code, _, err) = run_bin(
        &args(&[
            "profile",
            "--config",
            &cfg,
            "--artifact-dir",
            &format!("{}/c{{concurrency}}", first.display()),
        ]),
        &[],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let written = read(&first.join("c1/run.toml"));
    for want in [
        "concurrency = \"1,2\"",
        "streaming = true",
        "random-seed = 11",
        "label = [\"team=serving\"]",
        "prompt-salt = \"none\"",
        "raw-export = \"full\"",
    ] {
        assert!(written.contains(want), "{want} in\n{written}");
    }
    assert_eq!(written, read(&first.join("c2/run.toml")));

    let second = tmp.path().join("second");
    let again = first.join("c1/run.toml").display().to_string();
    let (code, _, err) = run_bin(
        &args(&[
            "profile",
            "--config",
            &again,
            "--artifact-dir",
            &format!("{}/c{{concurrency}}", second.display()),
        ]),
        &[],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    for level in ["c1", "c2"] {
        let (a, b) = (first.join(level), second.join(level));
        assert_eq!(
            prompts(&a),
            prompts(&b),
            "{level}: same prompts in the same order"
        );
        assert_eq!(read(&a.join("inputs.json")), read(&b.join("inputs.json")));
    }
}

#[test]
fn the_command_line_wins_and_print_config_runs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = write(
        &tmp.path().join("p.toml"),
        "model = \"gpt2\"\nendpoint-type = \"chat\"\nurl = \"localhost:9\"\nconcurrency = 8\n",
    );
    let (code, out, err) = run_in(
        &[
            "profile",
            "--config",
            &cfg,
            "--concurrency",
            "3",
            "--api-key",
            "sk-canary-9f2",
            "-H",
            "Authorization: Bearer tok-canary",
            "-H",
            "X-Team: infra",
            "--print-config",
        ],
        tmp.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("concurrency = 3\n"), "{out}");
    assert!(!out.contains("concurrency = 8"), "{out}");
    assert!(out.contains("model = \"gpt2\""), "{out}");
    assert!(out.contains("header = [\"X-Team: infra\"]"), "{out}");
    assert!(!out.contains("canary"), "no secret is written: {out}");
    assert!(out.contains("# api-key: given, not written"), "{out}");
    assert!(
        out.contains("# header Authorization: given, not written"),
        "{out}"
    );
    let (code, out, err) = run_in(
        &[
            "profile",
            "--config",
            &cfg,
            "-u",
            "http://svc:hunter2@localhost:9",
            "--print-config",
        ],
        tmp.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("hunter2"), "{out}");
    assert!(
        out.contains("# url: given, not written (its URL holds a password"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "nothing ran"
    );
    let (code, out, err) = run_in(
        &["perf", "--config", &cfg_perf(tmp.path()), "--print-config"],
        tmp.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("concurrency-range = \"1:4\""), "{out}");
}

fn cfg_perf(dir: &Path) -> String {
    write(
        &dir.join("perf.toml"),
        "model-name = \"bert\"\nurl = \"localhost:9\"\nconcurrency-range = \"1:4\"\n",
    )
}

#[test]
fn bad_files_are_refused_with_their_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    for (text, says) in [
        (
            "model = \"m\"\n\nconcurency = 2\n",
            "bad.toml:3: concurency: not a flag of `ttftbench profile`; did you mean concurrency?",
        ),
        (
            "model = \"m\"\nstreaming = \"yes\"\n",
            "bad.toml:2: streaming: a switch: give true or false, not a string",
        ),
        (
            "model = \"m\"\n[slo]\nx = 1\n",
            "bad.toml:2: slo: expected a string or number, found a table",
        ),
        (
            "model = \"m\"\nconcurrency = 2\nrequest-rate = 5\n",
            "--concurrency",
        ),
        ("model = \n", "bad.toml:1: not a TOML file of flags"),
    ] {
        let cfg = write(&tmp.path().join("bad.toml"), text);
        let (code, _, err) = run_in(&["profile", "--config", &cfg, "--print-config"], tmp.path());
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(says), "{text}: wanted {says:?} in {err}");
    }
    let (code, _, err) = run_in(&["profile", "--config", "missing.toml"], tmp.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("--config missing.toml: cannot read it"),
        "{err}"
    );
}

/// A `.yaml` config reads as the TOML one does: the same resolved flags, the same refusals with
/// line and key.
#[test]
fn yaml_configs_read_like_toml() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = write(
        &tmp.path().join("p.toml"),
        "model = \"gpt2\"\nurl = \"localhost:9\"\nstreaming = true\nconcurrency = [1, 4]\nslo = [\"time_to_first_token.p99<=500ms\", \"error_rate<1%\"]\nlabel = [\"gpu=h100\"]\n",
    );
    let yaml = write(
        &tmp.path().join("p.yaml"),
        "# the same run\nmodel: gpt2\nurl: localhost:9\nstreaming: true\nconcurrency: [1, 4]\nslo:\n  - time_to_first_token.p99<=500ms\n  - error_rate<1%\nlabel: [\"gpu=h100\"]\n",
    );
    let print = |cfg: &str| {
        let (code, out, err) = run_in(&["profile", "--config", cfg, "--print-config"], tmp.path());
        assert_eq!(code, 0, "{cfg}: {err}");
        // The first line names the command line, which names the file.
        out.lines().skip(1).collect::<Vec<_>>().join("\n")
    };
    let from_yaml = print(&yaml);
    assert_eq!(from_yaml, print(&toml));
    assert!(from_yaml.contains("concurrency = \"1,4\""), "{from_yaml}");
    for (text, says) in [
        (
            "model: m\n\nconcurency: 2\n",
            "bad.yaml:3: concurency: not a flag of `ttftbench profile`; did you mean concurrency?",
        ),
        (
            "model: m\nstreaming: \"yes\"\n",
            "bad.yaml:2: streaming: a switch: give true or false, not a string",
        ),
        (
            "model: m\nslo:\n  x: 1\n",
            "bad.yaml:2: slo: expected a value or a list, found a mapping",
        ),
        ("model: [m\n", "bad.yaml:"),
    ] {
        let cfg = write(&tmp.path().join("bad.yaml"), text);
        let (code, _, err) = run_in(&["profile", "--config", &cfg, "--print-config"], tmp.path());
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(says), "{text}: wanted {says:?} in {err}");
    }
}
