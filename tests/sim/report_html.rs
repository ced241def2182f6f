//! report.html as a user gets it: written with a sweep, and by `ttftbench report` over the seeds'
//! timestamped timeline (`bench/{timestamp}/c{concurrency}`, and a shell loop's single-level
//! runs). The page is parsed (balanced tags, charts, points, labels, no external resource) and,
//! where Debian's chromium is installed, rendered headless to PNG and checked for content.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use ttftbench::sim::{EngineConfig, SimConfig};

/// One element of the page: name and raw attribute text.
#[derive(Debug)]
struct Tag {
    name: String,
    attrs: String,
}

/// A minimal HTML/SVG tokenizer: checks that every element is closed in order (void elements
/// and `/>` aside) and returns the start tags in document order.
fn parse(html: &str) -> Result<Vec<Tag>, String> {
    const VOID: [&str; 6] = ["meta", "br", "hr", "img", "input", "link"];
    let mut tags = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        if rest.starts_with("<!DOCTYPE") || rest.starts_with("<!--") {
            let end = rest.find('>').ok_or("unterminated declaration")?;
            rest = &rest[end + 1..];
            continue;
        }
        let end = rest.find('>').ok_or("unterminated tag")?;
        let inner = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = inner.strip_prefix('/') {
            let name = name.trim();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let self_closing = inner.ends_with('/');
        let inner = inner.trim_end_matches('/');
        let (name, attrs) = match inner.find(char::is_whitespace) {
            Some(p) => (&inner[..p], &inner[p..]),
            None => (inner, ""),
        };
        if attrs.matches('"').count() % 2 != 0 {
            return Err(format!("unbalanced quotes in <{inner}>"));
        }
        tags.push(Tag {
            name: name.to_string(),
            attrs: attrs.to_string(),
        });
        if !self_closing && !VOID.contains(&name) {
            stack.push(name.to_string());
            // Raw-text elements: skip to their end.
            if name == "style" || name == "title" {
                let close = format!("</{name}>");
                let e = rest.find(&close).ok_or("unclosed raw text element")?;
                rest = &rest[e + close.len()..];
                stack.pop();
            }
        }
    }
    if !stack.is_empty() {
        return Err(format!("unclosed: {stack:?}"));
    }
    Ok(tags)
}

/// The part of the page of one chart: from its `<svg ... data-chart="id"` to its `</svg>`.
fn chart<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("data-chart=\"{id}\""))
        .unwrap_or_else(|| panic!("chart {id} missing"));
    let end = html[start..].find("</svg>").unwrap() + start;
    &html[start..end]
}

fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for bad in [
        "<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import", "xmlns",
    ] {
        assert!(!lower.contains(bad), "report contains {bad}");
    }
}

fn sweep_args(sim: &ttftbench::sim::SimHandle, dir: &str, conc: &str) -> Vec<String> {
    args(&[
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "-u",
        &sim.grpc_target(),
        "--server-metrics-url",
        &sim.metrics_url(),
        "--synthetic-input-tokens-mean",
        "50",
        "--output-tokens-mean",
        "8",
        "--request-count",
        "8",
        "--concurrency",
        conc,
        "--slo",
        "time_to_first_token.p99<=10s",
        "--slo",
        "queue_share<=50%",
        "--artifact-dir",
        dir,
    ])
}

async fn small_sim() -> ttftbench::sim::SimHandle {
    start(SimConfig {
        engine: EngineConfig {
            max_batch: 2,
            ..round_engine()
        },
        ..SimConfig::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_writes_a_self_contained_report() {
    let sim = small_sim().await;
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("bench/{timestamp}/c{concurrency}");
    let out = profile(&sweep_args(
        &sim,
        &template.display().to_string(),
        "1,2,4,8",
    ))
    .await
    .unwrap();
    let sweep = out.sweep_dir.clone().unwrap();
    assert_eq!(sweep.parent().unwrap(), tmp.path().join("bench"));
    let html = std::fs::read_to_string(sweep.join("report.html")).unwrap();
    let tags = parse(&html).unwrap();
    assert_self_contained(&html);
    let charts: Vec<&Tag> = tags
        .iter()
        .filter(|t| t.name == "svg" && t.attrs.contains("class=\"chart\""))
        .collect();
    // Five charts, throughput against interactivity, and the GPUs' from the simulated Triton's
    // nv_gpu_* metrics (no KV-cache chart: Triton's own families have no KV gauge).
    assert_eq!(charts.len(), 7, "seven charts for one run");
    // The trade-off: one point per level, those that met the --slo objectives apart from
    // those that missed one, the frontier marked.
    let pareto = chart(&html, "pareto");
    assert_eq!(pareto.matches("<g class=\"pt\"").count(), 4, "{pareto}");
    assert!(pareto.contains(">met every SLO</text>"), "{pareto}");
    assert!(
        pareto.contains("text-anchor=\"end\">frontier</text>"),
        "{pareto}"
    );
    assert!(html.contains("data-chart=\"gpu\"") && !html.contains("data-chart=\"kv\""));
    // TTFT avg/p50/p99 at four levels.
    let ttft = chart(&html, "ttft");
    assert_eq!(ttft.matches("<g class=\"pt\"").count(), 12);
    for label in ["TTFT vs concurrency", "TTFT avg", "TTFT p50", "TTFT p99"] {
        assert!(ttft.contains(label), "{label}");
    }
    // "(ms)" on a proportional axis, "(ms, log scale)" when the levels span more than 10x.
    assert!(ttft.contains(">time to first token (ms"));
    // Throughput vs p99, one point per level, knee marked when summary.json has one.
    let knee = chart(&html, "knee");
    assert_eq!(knee.matches("<g class=\"pt\"").count(), 4);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sweep.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        knee.contains("<g class=\"mark\">"),
        !summary["knee"]["knee"].is_null()
    );
    assert!(html.contains(summary["knee"]["recommendation"].as_str().unwrap()));
    assert_eq!(chart(&html, "itl").matches("<g class=\"pt\"").count(), 8);
    // Queue vs compute: two stacks per level (the simulator reports its queue).
    assert_eq!(
        chart(&html, "queue").matches("<rect class=\"bar\"").count(),
        8
    );
    assert_eq!(chart(&html, "errors").matches("<g class=\"pt\"").count(), 4);
    // The level table, the command line, version and validity.
    let table_rows = html
        .split("<table class=\"levels\">")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap()
        .matches("<tr>")
        .count();
    assert_eq!(table_rows, 5, "header plus one row per level");
    assert!(html.contains("<pre class=\"cmd\">ttftbench profile -m gpt2"));
    assert!(html.contains(&format!("ttftbench {}", ttftbench::VERSION)));
    // Eight requests per level are too few for a p99: not a reason to distrust the level's
    // other numbers, but the page says which levels' p99 is the slowest request.
    assert!(html.contains("valid: complete, no errors"));
    assert!(html.contains(
        "<span class=\"warn\">p99 from fewer than 100 requests (the slowest, not a tail): concurrency1, concurrency2"
    ));
    // SLOs recorded per level and in summary.json.
    let level: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.levels[0].dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        level["slo"][0]["objective"],
        "time_to_first_token.p99<=10000ms"
    );
    assert_eq!(level["slo"][0]["passed"], true);
    assert_eq!(summary["slo"]["checked"], 8);
    assert_eq!(summary["levels"][1]["path"], "c2");
    render_and_check(&sweep.join("report.html"), tmp.path());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_over_a_timeline_draws_trends() {
    let sim = small_sim().await;
    let tmp = tempfile::tempdir().unwrap();
    let bench = tmp.path().join("bench");
    let template = bench.join("{timestamp}/c{concurrency}");
    // Two sweeps in one invocation each, a second apart so their timestamps differ.
    profile(&sweep_args(&sim, &template.display().to_string(), "1,2,4"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    profile(&sweep_args(&sim, &template.display().to_string(), "1,2,4"))
        .await
        .unwrap();
    // A third run the seeds' way: one invocation per level into ./bench/$TS/c$c.
    for c in ["1", "2", "4"] {
        let dir = bench.join("99999999_loop").join(format!("c{c}"));
        profile(&sweep_args(&sim, &dir.display().to_string(), c))
            .await
            .unwrap();
    }
    let out = bin().arg("report").arg(&bench).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("(3 runs, 9 levels)"), "{stdout}");
    let html = std::fs::read_to_string(bench.join("report.html")).unwrap();
    parse(&html).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("Trend across 3 runs"));
    let trend = chart(&html, "trend-ttft-p99");
    // One line per level, one point per run.
    assert_eq!(trend.matches("<g class=\"series\"").count(), 3);
    assert_eq!(trend.matches("<g class=\"pt\"").count(), 9);
    assert!(trend.contains(">99999999_loop</text>"));
    assert_eq!(
        chart(&html, "trend-throughput")
            .matches("<g class=\"pt\"")
            .count(),
        9
    );
    // The newest run against the one before, with the seeds' 5 % / 10 % rule.
    assert!(html.contains("compared with"));
    assert!(html.contains("throughput down more than 5% or p99 up more than 10%"));
    // Every run has its section (the newest open, the earlier ones folded).
    assert_eq!(html.matches("<details class=\"run\"").count(), 2);
    // Level directories given together form one run (the seeds' ./ttft_c* loop).
    let loop_dirs: Vec<PathBuf> = ["c1", "c2", "c4"]
        .iter()
        .map(|c| bench.join("99999999_loop").join(c))
        .collect();
    let out_file = tmp.path().join("loop.html");
    let out = bin()
        .arg("report")
        .args(&loop_dirs)
        .arg("-o")
        .arg(&out_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(chart(&html, "ttft").matches("<g class=\"pt\"").count(), 9);
    assert!(!html.contains("Trend across"));
    // Nothing there: a usage error that says what was looked for.
    let out = bin()
        .arg("report")
        .arg(tmp.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such directory"));
    sim.shutdown().await;
}

/// Renders the page with headless Chromium when it is installed and checks the screenshot is
/// not blank (much larger than a blank page's at the same size); otherwise says why it skipped.
fn render_and_check(page: &Path, tmp: &Path) {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists());
    let Some(chromium) = chromium else {
        eprintln!(
            "skipping the headless render: /usr/bin/chromium is not installed (apt-get install chromium)"
        );
        return;
    };
    let shot = |url: &Path, png: &Path| {
        let status = Command::new(chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1280,1800",
            ])
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", url.display()))
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("chromium runs");
        assert!(status.success(), "chromium failed on {}", url.display());
        std::fs::read(png).expect("screenshot written")
    };
    let blank = tmp.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank_png = shot(&blank, &tmp.join("blank.png"));
    let report_png = shot(page, &tmp.join("report.png"));
    assert_eq!(&report_png[1..4], b"PNG");
    // IHDR: width and height are big-endian at bytes 16..24.
    let w = u32::from_be_bytes(report_png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(report_png[20..24].try_into().unwrap());
    assert_eq!((w, h), (1280, 1800));
    assert!(
        report_png.len() > 10 * blank_png.len(),
        "the rendered report looks blank: {} bytes vs {} for an empty page",
        report_png.len(),
        blank_png.len()
    );
}
