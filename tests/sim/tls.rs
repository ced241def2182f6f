//! TLS that verifies, against the simulator serving TLS with certificates generated here: a
//! run verifies with `--cacert`, is refused without it (exit 2, the certificate and the reason
//! named, nothing measured), runs with `-k` (warned once, recorded in input_config), and mutual
//! TLS is accepted with a client certificate and refused without one — over HTTP (chat
//! streaming, through the fast HTTP/1.1 client) and gRPC (KServe streaming, through tonic).
//! perf's perf_analyzer names and doctor's connect step reach the same settings and messages.

use crate::common;

use clap::Parser;
use common::*;
use serde_json::Value;
use ttftbench::cli::{Cli, Command};
use ttftbench::error::Error;
use ttftbench::load::Interrupt;
use ttftbench::profile::{Outcome, Ui};

/// A two-level streamed run of 6 requests against `url` with `endpoint` plus `extra` flags.
fn run_args(endpoint: &str, url: &str, dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut a = args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        endpoint,
        "--streaming",
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        "8",
        "--num-prompts",
        "3",
        "--request-count",
        "6",
        "--concurrency",
        "2",
        "-u",
        url,
        "--artifact-dir",
        &dir.display().to_string(),
    ]);
    a.extend(args(extra));
    a
}

/// Runs `profile` in-process and keeps the typed error (for its exit code).
async fn run(a: &[String]) -> Result<Outcome, Error> {
    let plan = plan(a).map_err(Error::Usage)?;
    ttftbench::profile::run(&plan, Interrupt::new(), Ui::silent()).await
}

fn url_of(sim: &ttftbench::sim::SimHandle, endpoint: &str) -> String {
    match endpoint {
        "kserve" => sim.grpc_target(),
        _ => sim.http_url(),
    }
}

fn p(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// The level's `input_config`, as written next to its results.
fn input_config(dir: &std::path::Path) -> Value {
    let f = std::fs::read_dir(dir)
        .expect("artifact dir")
        .filter_map(|e| e.ok())
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("_genai_perf.json")
        })
        .expect("level JSON");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap();
    v["input_config"].clone()
}

fn assert_all_ok(out: &Outcome, what: &str) {
    let s = &out.levels[0].summary;
    assert_eq!(s.stats.error_count, 0, "{what}: {:?}", s.stats.errors);
    assert_eq!(s.stats.request_count, 6, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verified_with_cacert_refused_without_on_http_and_grpc() {
    let pki = test_pki();
    let sim = start_tls(&pki.server_cert, &pki.server_key, None).await;
    for endpoint in ["chat", "kserve"] {
        let tmp = tempfile::tempdir().unwrap();
        let url = url_of(&sim, endpoint);
        let out = run(&run_args(
            endpoint,
            &url,
            tmp.path(),
            &["--cacert", &p(&pki.ca)],
        ))
        .await
        .unwrap_or_else(|e| panic!("{endpoint} with --cacert: {e}"));
        assert_all_ok(&out, endpoint);
        let cfg = input_config(tmp.path());
        assert_eq!(cfg["target"]["tls"]["verify"], "full", "{endpoint}");
        assert_eq!(
            cfg["target"]["tls"]["ca_files"][0],
            p(&pki.ca),
            "{endpoint}"
        );

        let refused = tempfile::tempdir().unwrap();
        let e = run(&run_args(endpoint, &url, refused.path(), &[]))
            .await
            .expect_err("no CA: refused");
        let msg = e.to_string();
        assert_eq!(e.exit_code(), 2, "{endpoint}: {msg}");
        for want in [
            "CN=ttftbench sim",
            "CN=ttftbench test server CA",
            "unknown issuer",
            "--cacert",
            "-k/--insecure",
        ] {
            assert!(msg.contains(want), "{endpoint}: '{want}' in {msg}");
        }
        // Nothing was measured: no level directory was written.
        assert!(
            std::fs::read_dir(refused.path()).unwrap().next().is_none(),
            "{endpoint}: artifacts written after a refusal"
        );
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_and_wrong_name_say_why() {
    let pki = test_pki();
    let cases = [
        (
            &pki.expired_cert,
            &pki.expired_key,
            "expired",
            "CN=ttftbench old sim",
        ),
        (
            &pki.wrong_name_cert,
            &pki.wrong_name_key,
            "name mismatch",
            "other.invalid",
        ),
    ];
    for (cert, key, why, names) in cases {
        let sim = start_tls(cert, key, None).await;
        for endpoint in ["chat", "kserve"] {
            let tmp = tempfile::tempdir().unwrap();
            let url = url_of(&sim, endpoint);
            let e = run(&run_args(
                endpoint,
                &url,
                tmp.path(),
                &["--cacert", &p(&pki.ca)],
            ))
            .await
            .expect_err("refused");
            let msg = e.to_string();
            assert_eq!(e.exit_code(), 2, "{msg}");
            assert!(
                msg.contains(why) && msg.contains(names),
                "{endpoint}: {msg}"
            );
        }
        sim.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_runs_and_is_recorded() {
    let pki = test_pki();
    let sim = start_tls(&pki.server_cert, &pki.server_key, None).await;
    for endpoint in ["chat", "kserve"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = run(&run_args(
            endpoint,
            &url_of(&sim, endpoint),
            tmp.path(),
            &["-k"],
        ))
        .await
        .unwrap_or_else(|e| panic!("{endpoint} -k: {e}"));
        assert_all_ok(&out, endpoint);
        assert_eq!(input_config(tmp.path())["target"]["tls"]["verify"], "off");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_accepted_with_a_client_certificate_refused_without() {
    let pki = test_pki();
    let sim = start_tls(&pki.server_cert, &pki.server_key, Some(&pki.client_ca)).await;
    let ca = p(&pki.ca);
    for endpoint in ["chat", "kserve"] {
        let url = url_of(&sim, endpoint);
        let tmp = tempfile::tempdir().unwrap();
        let with = [
            "--cacert",
            &ca,
            "--cert",
            &p(&pki.client_cert),
            "--key",
            &p(&pki.client_key),
        ];
        let out = run(&run_args(endpoint, &url, tmp.path(), &with))
            .await
            .unwrap_or_else(|e| panic!("{endpoint} with a client certificate: {e}"));
        assert_all_ok(&out, endpoint);
        // The key's path is recorded; its contents are not.
        let key_text = std::fs::read_to_string(&pki.client_key).unwrap();
        let body = key_text.lines().nth(1).unwrap();
        assert!(
            !all_text(tmp.path()).contains(body),
            "{endpoint}: key in artifacts"
        );
        assert_eq!(
            input_config(tmp.path())["target"]["tls"]["identity"]["key"],
            p(&pki.client_key)
        );

        let refused = tempfile::tempdir().unwrap();
        let e = run(&run_args(
            endpoint,
            &url,
            refused.path(),
            &["--cacert", &ca],
        ))
        .await
        .expect_err("no client certificate: refused");
        let msg = e.to_string();
        assert_eq!(e.exit_code(), 2, "{endpoint}: {msg}");
        assert!(
            msg.contains("requires a client certificate") && msg.contains("--cert FILE --key FILE"),
            "{endpoint}: {msg}"
        );
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_takes_perf_analyzer_names() {
    let pki = test_pki();
    let sim = start_tls(&pki.server_cert, &pki.server_key, Some(&pki.client_ca)).await;
    let grpc_addr = sim.grpc_addr.to_string();
    let http_url = sim.http_url();
    let (ca, cert, key) = (p(&pki.ca), p(&pki.client_cert), p(&pki.client_key));
    let grpc: Vec<&str> = vec![
        "-i",
        "grpc",
        "-u",
        &grpc_addr,
        "--ssl-grpc-use-ssl",
        "--ssl-grpc-root-certifications-file",
        &ca,
        "--ssl-grpc-certificate-chain-file",
        &cert,
        "--ssl-grpc-private-key-file",
        &key,
    ];
    let http: Vec<&str> = vec![
        "-i",
        "http",
        "-u",
        &http_url,
        "--ssl-https-ca-certificates-file",
        &ca,
        "--ssl-https-client-certificate-file",
        &cert,
        "--ssl-https-private-key-file",
        &key,
        "--ssl-https-verify-peer",
        "1",
        "--ssl-https-verify-host",
        "2",
    ];
    for flags in [grpc, http] {
        let mut argv = vec!["ttftbench", "perf", "-m", "text_classifier"];
        argv.extend(["--shape", "input_ids:16", "--request-count", "20"]);
        argv.extend(flags.iter().copied());
        let Command::Perf(a) = Cli::try_parse_from(&argv).expect("parse").command else {
            panic!("not perf")
        };
        let plan = a.plan(&[]).expect("plan");
        assert_eq!(plan.target.tls.ca_files, vec![pki.ca.clone()]);
        assert!(plan.target.base_url.starts_with("https://"), "{flags:?}");
        let out = ttftbench::perf::run(&plan, Interrupt::new(), false)
            .await
            .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert_eq!(out.levels[0].error_count, 0, "{flags:?}");
    }
    // Verification off under perf_analyzer's name, and the name check alone.
    let argv = [
        "ttftbench",
        "perf",
        "-m",
        "text_classifier",
        "-i",
        "http",
        "-u",
        "127.0.0.1:1",
        "--ssl-https-verify-peer",
        "0",
    ];
    let Command::Perf(a) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("not perf")
    };
    let plan = a.plan(&[]).unwrap();
    assert!(plan.target.tls.insecure());
    assert_eq!(plan.target.base_url, "https://127.0.0.1:1");
    sim.shutdown().await;
}

async fn doctor(args: &[&str]) -> ttftbench::doctor::Diagnosis {
    let mut argv = vec!["ttftbench", "doctor"];
    argv.extend_from_slice(args);
    let Command::Doctor(a) = Cli::try_parse_from(&argv).expect("parse").command else {
        panic!("not doctor")
    };
    let plan = a.plan().expect("plan");
    ttftbench::doctor::diagnose(&plan, &mut |_, _| {}).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_connect_step_says_what_profile_says() {
    let pki = test_pki();
    let sim = start_tls(&pki.server_cert, &pki.server_key, None).await;
    for endpoint in ["chat", "kserve"] {
        let url = url_of(&sim, endpoint);
        let d = doctor(&["-m", "gpt2", "--endpoint-type", endpoint, "-u", &url]).await;
        let f = d.failed().expect("refused");
        assert_eq!(f.id, "connect");
        let tmp = tempfile::tempdir().unwrap();
        let e = run(&run_args(endpoint, &url, tmp.path(), &[]))
            .await
            .expect_err("refused");
        assert_eq!(
            e.to_string(),
            format!("{}; {}", f.detail, f.fix.as_deref().unwrap_or_default()),
            "{endpoint}"
        );
        let ca = p(&pki.ca);
        let d = doctor(&[
            "-m",
            "gpt2",
            "--endpoint-type",
            endpoint,
            "-u",
            &url,
            "--cacert",
            &ca,
        ])
        .await;
        assert!(d.failed().is_none(), "{endpoint}: {d:#?}");
    }
    sim.shutdown().await;
}

#[test]
fn binary_warns_once_about_insecure() {
    let pki = test_pki();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(start_tls(&pki.server_cert, &pki.server_key, None));
    let tmp = tempfile::tempdir().unwrap();
    let url = sim.http_url();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ttftbench"))
        .arg("profile")
        .args(run_args(
            "chat",
            &url,
            tmp.path(),
            &["--insecure", "--quiet"],
        ))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("verification is OFF").count(),
        1,
        "warned once: {stderr}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ttftbench"))
        .arg("profile")
        .args(run_args("chat", &url, tmp.path(), &[]))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown issuer"));
    drop(sim);
}
