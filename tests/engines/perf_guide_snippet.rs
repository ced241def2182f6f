//! The perf_analyzer guide's pandas plot (seeds/002), run as printed against a CSV that the
//! `ttftbench perf` binary wrote from a concurrency sweep of the simulator. The guide plots
//! `df['Throughput']` and `df['p99 Latency']`, names perf_analyzer's CSV does not have; ttftbench
//! appends them as the last two columns (`src/perf/report.rs`).
//!
//! Needs pandas and matplotlib from the GenAI-Perf venv (`scripts/genai_perf/setup.sh`); skips with
//! the reason without them, fails under `TTFTBENCH_REQUIRE_GENAI_PERF=1` (CI).

use crate::common;

use std::process::Command;

use common::{genai_perf_python, start};
use ttftbench::sim::SimConfig;

/// The guide's snippet, verbatim (the seed's text lost its line breaks; these are its statements
/// one per line, as Python needs them).
const SNIPPET: &str = "import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv('latency_vs_concurrency.csv')
fig, ax1 = plt.subplots()
ax1.plot(df['Concurrency'], df['Throughput'], 'b-o', label='Throughput')
ax1.set_xlabel('Concurrency')
ax1.set_ylabel('Throughput (infer/sec)', color='b')
ax2 = ax1.twinx()
ax2.plot(df['Concurrency'], df['p99 Latency'], 'r-s', label='P99 Latency')
ax2.set_ylabel('P99 Latency (us)', color='r')
fig.legend()
plt.show()
";

/// Runs the snippet headless (matplotlib's Agg backend: `plt.show()` draws nothing, and the
/// figure is saved instead, the only change), then reports what it plotted.
const HARNESS: &str = r#"
import sys
snippet = sys.stdin.read().replace("plt.show()", "plt.savefig('plot.png')")
ns = {}
exec(snippet, ns)
ax1, ax2 = ns["ax1"], ns["ax2"]
for label, line in (("throughput", ax1.lines[0]), ("p99", ax2.lines[0])):
    print(label, " ".join(f"{float(x)!r}:{float(y)!r}" for x, y in zip(line.get_xdata(), line.get_ydata())))
"#;

/// Where the seeds are when this runs beside the shared folder (the lead's and CI's layout).
fn seed_text() -> Option<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in [
        root.join("../shared/seeds"),
        root.join("../../shared/seeds"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("002_") {
                return std::fs::read_to_string(e.path()).ok();
            }
        }
    }
    None
}

#[test]
fn snippet_is_the_guides() {
    let _one = crate::ONE_AT_A_TIME.blocking_lock();
    let Some(seed) = seed_text() else {
        eprintln!("skipping: the seeds folder is not beside this checkout");
        return;
    };
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        squash(&seed).contains(&squash(SNIPPET)),
        "the guide's snippet changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guide_pandas_snippet_plots_a_ttftbench_perf_csv() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(python) = genai_perf_python() else {
        return;
    };
    let sim = start(SimConfig::default()).await;
    let tmp = tempfile::tempdir().unwrap();
    let url = sim.grpc_target();
    let bin = env!("CARGO_BIN_EXE_ttftbench");
    let out = tokio::task::spawn_blocking({
        let dir = tmp.path().to_path_buf();
        move || {
            Command::new(bin)
                .current_dir(&dir)
                .args([
                    "perf",
                    "-m",
                    "text_classifier",
                    "--shape",
                    "input_ids:32",
                    "-u",
                    &url,
                    "--concurrency-range",
                    "1:3:2",
                    "--measurement-interval",
                    "300",
                    "-s",
                    "60",
                    "-f",
                    "latency_vs_concurrency.csv",
                ])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    sim.shutdown().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(tmp.path().join("latency_vs_concurrency.csv")).unwrap();
    let mut child = Command::new(&python)
        .args(["-c", HARNESS])
        .current_dir(tmp.path())
        .env("MPLBACKEND", "Agg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(SNIPPET.as_bytes())
        .unwrap();
    let run = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the snippet failed on\n{csv}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(tmp.path().join("plot.png").metadata().unwrap().len() > 1000);
    // It plotted the CSV's own numbers: Inferences/Second and p99 latency, by concurrency.
    let mut rdr = csv::Reader::from_reader(csv.as_bytes());
    let h = rdr.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let mut tput = Vec::new();
    let mut p99 = Vec::new();
    for r in rdr.records().map(Result::unwrap) {
        let c: f64 = r[col("Concurrency")].parse().unwrap();
        let t: f64 = r[col("Inferences/Second")].parse().unwrap();
        let p: f64 = r[col("p99 latency")].parse().unwrap();
        tput.push(format!("{c}:{t}"));
        p99.push(format!("{c}:{p}"));
    }
    assert_eq!(tput.len(), 2, "{csv}");
    let lines: Vec<&str> = stdout.lines().collect();
    let parse = |line: &str| -> Vec<(f64, f64)> {
        line.split_whitespace()
            .skip(1)
            .map(|xy| {
                let (x, y) = xy.split_once(':').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    };
    let as_pairs = |v: &[String]| -> Vec<(f64, f64)> { parse(&format!("x {}", v.join(" "))) };
    let close = |a: &[(f64, f64)], b: &[(f64, f64)]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 1e-6 * q.1.abs().max(1.0))
    };
    assert!(close(&parse(lines[0]), &as_pairs(&tput)), "{stdout}\n{csv}");
    assert!(close(&parse(lines[1]), &as_pairs(&p99)), "{stdout}\n{csv}");
}
