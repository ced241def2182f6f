//! The subcommands as library functions: what `main` calls after parsing. Each returns the
//! process exit code, or an [`Error`] that carries its own.

use crate::artifact::write_file;
use crate::cli::{Command, DemoArgs, EngineArgs, ProfileArgs, ServeArgs};
use crate::engine::signals::{wait_signal, watch_signals};
use crate::error::{Error, Result};
use crate::load::Interrupt;
use crate::plan::{RunPlan, Verbosity};
use crate::profile::{Outcome, Ui};

/// Runs one subcommand.
pub async fn run(command: Command, argv: Vec<String>) -> Result<u8> {
    match command {
        Command::Profile(args) => profile(&args, &argv).await,
        Command::Search(args) => search(&args, &argv).await,
        Command::Perf(args) => {
            let plan = args.plan(&argv)?;
            if args.outputs.print_config {
                return write_stdout(plan.run_config.as_bytes());
            }
            crate::perf::main(&plan).await
        }
        Command::Serve(args) => serve(&args).await,
        Command::Demo(args) => demo(&args).await,
        Command::Report(args) => report(&args),
        Command::Compare(args) => compare(&args),
        Command::Doctor(args) => doctor(&args).await,
        Command::Completions(args) => completions(args.shell),
        Command::Man => man(),
        Command::Merge(args) => merge(&args),
    }
}

/// `ttftbench completions SHELL`: the completion script for the whole command line.
fn completions(shell: clap_complete::Shell) -> Result<u8> {
    use clap::CommandFactory;
    let mut cmd = crate::cli::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ttftbench", &mut out);
    write_stdout(&out)
}

/// `ttftbench man`: the man page (roff), its SUBCOMMANDS section listing every subcommand.
fn man() -> Result<u8> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_mangen::Man::new(crate::cli::Cli::command())
        .render(&mut out)
        .map_err(|e| Error::failed(format!("cannot render the man page: {e}")))?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<u8> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| Error::failed(format!("cannot write to stdout: {e}")))?;
    Ok(0)
}

/// `ttftbench merge DIR... -o OUT`: prints the merged table and each level's shards.
fn merge(a: &crate::cli::MergeArgs) -> Result<u8> {
    let m = crate::merge::run(&a.dirs, &a.output)?;
    let summaries: Vec<_> = m.levels.iter().map(|l| l.merged.summary.clone()).collect();
    print!("{}", crate::report::console::sweep_table(&summaries));
    for l in &m.levels {
        println!(
            "{}",
            crate::artifact::shard::section_line(
                &l.merged.summary.stimulus.name(),
                &l.merged.shards
            )
        );
    }
    if summaries.len() > 1 {
        for line in &m.verdict.lines {
            println!("{line}");
        }
        println!("{}", m.knee.recommendation);
    }
    for line in crate::report::console::untrusted_lines(
        summaries.iter().map(|l| (l.stimulus.name(), &l.validity)),
    ) {
        println!("{line}");
    }
    for n in &m.notices {
        eprintln!("note: {n}");
    }
    if !a.quiet {
        eprintln!("merged: {}", a.output.display());
        if !m.perf.is_empty() {
            eprintln!(
                "perf_analyzer CSV of the union: {}",
                a.output.join(crate::merge::perf::PERF_CSV_FILE).display()
            );
        }
    }
    Ok(0)
}

/// The simulator's configuration from `serve` flags.
pub fn sim_config(
    bind: std::net::IpAddr,
    ports: (u16, u16, u16),
    e: &EngineArgs,
) -> Result<crate::sim::SimConfig> {
    let engine = if e.instant {
        crate::sim::EngineConfig::instant()
    } else {
        crate::sim::EngineConfig {
            max_batch: e.max_batch.max(1),
            max_queue: e.max_queue,
            prefill_base_us: e.prefill_base_us,
            prefill_us_per_token: e.prefill_us_per_token,
            decode_base_us: e.decode_base_us,
            decode_us_per_seq: e.decode_us_per_seq,
            kv_blocks: e.kv_blocks,
            kv_block_size: e.kv_block_size.max(1),
            prefix_caching: e.prefix_caching,
        }
    };
    let faults = e.faults();
    faults
        .validate()
        .map_err(|err| Error::usage(format!("{err:#}")))?;
    Ok(crate::sim::SimConfig {
        bind,
        http_port: ports.0,
        grpc_port: ports.1,
        metrics_port: ports.2,
        engine,
        faults,
        api_key: e.require_api_key.clone(),
        access_token: e.access_token.clone(),
        ..crate::sim::SimConfig::default()
    })
}

async fn serve(a: &ServeArgs) -> Result<u8> {
    use std::io::Write;
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some(crate::sim::SimTls {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: a.tls_client_ca.clone(),
        }),
        _ => None,
    };
    let cfg = crate::sim::SimConfig {
        metrics_style: a.metrics_style,
        tls,
        answers: a.answers.config()?,
        ..sim_config(
            a.address,
            (a.http_port, a.grpc_port, a.metrics_port),
            &a.engine,
        )?
    };
    let handle = crate::sim::start(cfg)
        .await
        .map_err(|e| Error::failed(format!("cannot start the simulated server: {e:#}")))?;
    // Output errors are ignored: a server whose stdout reader went away keeps serving.
    let mut out = std::io::stdout().lock();
    let over = if handle.tls { " over TLS" } else { "" };
    let _ = writeln!(
        out,
        "ttftbench serve: simulated Triton-compatible inference server\n\
         HTTP (KServe v2 + OpenAI){over} listening on {}\n\
         gRPC (KServe v2){over} listening on {}\n\
         metrics (Prometheus, {} families; DCGM at /dcgm/metrics) listening on {}\n\
         models: {}",
        handle.http_addr,
        handle.grpc_addr,
        a.metrics_style,
        handle.metrics_addr,
        handle.model_names().join(", ")
    );
    let _ = out.flush();
    drop(out);
    wait_signal()
        .await
        .map_err(|e| Error::failed(format!("cannot wait for a signal: {e}")))?;
    eprintln!("shutting down");
    handle.shutdown().await;
    Ok(0)
}

async fn demo(a: &DemoArgs) -> Result<u8> {
    // The TensorRT-LLM case: the backend queues requests in its executor, where Triton's own
    // queue counter does not look; its waiting-requests gauge is what explains the knee.
    let cfg = crate::sim::SimConfig {
        metrics_style: crate::server_metrics::ServerKind::TrtLlm,
        ..crate::sim::SimConfig::default()
    };
    let sim = crate::sim::start(cfg)
        .await
        .map_err(|e| Error::failed(format!("cannot start the simulated server: {e:#}")))?;
    let plan = demo_plan(a, &sim)?;
    if !a.quiet {
        eprintln!(
            "demo: simulated Triton server on {} (gRPC) / {} (HTTP), model gpt2 on the TensorRT-LLM backend with {} batch slots",
            sim.grpc_target(),
            sim.http_url(),
            crate::sim::EngineConfig::default().max_batch
        );
        eprintln!(
            "demo: requests beyond the slots wait in the TensorRT-LLM executor, not in Triton's queue: the verdict reads the executor's waiting requests from {}",
            sim.metrics_url()
        );
        eprintln!("demo: running {}", plan.command_line);
    }
    let interrupt = Interrupt::new();
    watch_signals(interrupt.clone());
    let outcome = crate::profile::run(
        &plan,
        interrupt,
        Ui::for_terminal(plan.verbosity, plan.outputs.ui),
    )
    .await?;
    let code = finish(&outcome, &plan);
    if !a.quiet {
        eprintln!("artifacts: {}", a.artifact_dir.display());
        eprintln!("{}", next_line(&self_command()));
    }
    sim.shutdown().await;
    Ok(code)
}

/// The demo's closing hint, naming this binary the way the user can run it (`cmd`).
fn next_line(cmd: &str) -> String {
    let mut line = format!(
        "next: `{cmd} serve` starts the same server on Triton's ports (8000/8001/8002); point the seeds' commands at it, or at your own Triton."
    );
    if cmd != "ttftbench" {
        line.push_str(
            " `cargo install --path .` puts `ttftbench` on PATH, as the README's examples use it.",
        );
    }
    line
}

/// How to run this binary again: `ttftbench` when that name on `PATH` is this binary, else its
/// path (relative to the current directory when under it, as `target/release/ttftbench`).
fn self_command() -> String {
    let Ok(exe) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return "ttftbench".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .any(|d| d.join("ttftbench").canonicalize().is_ok_and(|p| p == exe))
    });
    if on_path {
        return "ttftbench".into();
    }
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize());
    match cwd
        .ok()
        .and_then(|d| exe.strip_prefix(d).ok().map(|r| r.to_path_buf()))
    {
        Some(rel) => rel.display().to_string(),
        None => exe.display().to_string(),
    }
}

async fn profile(args: &ProfileArgs, argv: &[String]) -> Result<u8> {
    let plan = args.plan(argv)?;
    if args.run.artifacts.outputs.print_config {
        // The plan was validated first: a config that would be refused is not printed.
        return write_stdout(plan.run_config.as_bytes());
    }
    let interrupt = Interrupt::new();
    watch_signals(interrupt.clone());
    let ui = Ui::for_terminal(plan.verbosity, plan.outputs.ui);
    let outcome = crate::profile::run(&plan, interrupt, ui).await?;
    Ok(finish(&outcome, &plan))
}

async fn search(args: &crate::cli::SearchArgs, argv: &[String]) -> Result<u8> {
    let plan = args.plan(argv)?;
    if args.run.artifacts.outputs.print_config {
        return write_stdout(plan.run.run_config.as_bytes());
    }
    let interrupt = Interrupt::new();
    watch_signals(interrupt.clone());
    let ui = Ui::for_terminal(plan.run.verbosity, plan.run.outputs.ui);
    let outcome = crate::search::run(&plan, interrupt, ui).await?;
    let text = crate::report::console::search_text(&outcome.doc);
    crate::publish::console_text(plan.run.outputs.json_stdout(), &text);
    if plan.run.verbosity != Verbosity::Quiet {
        for (file, what) in [
            (crate::artifact::search::SEARCH_FILE, "search"),
            (crate::report::html::REPORT_FILE, "report"),
        ] {
            eprintln!("{what}: {}", outcome.dir.join(file).display());
        }
    }
    Ok(outcome.doc.exit_code)
}

/// Prints the results table (on stderr when stdout carries `--output json`) and picks the exit
/// code.
fn finish(outcome: &Outcome, plan: &RunPlan) -> u8 {
    let verbosity = plan.verbosity;
    let mut text = String::new();
    let summaries: Vec<_> = outcome.levels.iter().map(|l| l.summary.clone()).collect();
    if !summaries.is_empty() {
        text.push_str(&crate::report::console::sweep_table(&summaries));
    }
    if !outcome.repetitions.is_empty() {
        let levels: Vec<_> = outcome
            .levels
            .iter()
            .map(|l| {
                let reps: Vec<&crate::stats::LevelSummary> = l.repetitions.iter().collect();
                let spreads = crate::stats::repeat::spreads(&reps, &l.summary);
                (l.summary.stimulus.name(), spreads)
            })
            .collect();
        text.push_str(&crate::report::console::repetitions_table(
            outcome.repetitions.len(),
            &levels,
            Some(crate::artifact::repeat::REPETITIONS_CSV_FILE),
        ));
    }
    let note = crate::report::console::not_streaming_note(&summaries);
    let mut lines: Vec<String> = note.map(str::to_string).into_iter().collect();
    if summaries.len() > 1 {
        lines.extend(outcome.verdict.lines.iter().cloned());
        lines.push(outcome.knee.recommendation.clone());
    } else {
        // One level has no sweep to read, but what the connection did to its numbers (a
        // delayed-ACK stall, a buffered stream, requests sent again) holds for it all the same.
        lines.extend(crate::analysis::transport::lines(&summaries));
        // Nor a drop with load, but whether its accuracy is better than guessing.
        let accuracy = crate::analysis::accuracy::assess(&summaries);
        lines.extend(accuracy.map_or_else(Vec::new, |a| a.lines));
    }
    let slo: Vec<(String, Vec<crate::analysis::slo::SloResult>)> = outcome
        .levels
        .iter()
        .map(|l| {
            (
                format!(
                    "{} {}",
                    l.summary.stimulus.kind().replace('_', " "),
                    crate::report::svg::num(l.summary.stimulus.value())
                ),
                l.slo.clone(),
            )
        })
        .collect();
    lines.extend(crate::analysis::slo::console_lines(&slo));
    lines.extend(crate::report::console::thin_tail_line(
        &summaries, &plan.stop,
    ));
    lines.extend(crate::report::console::untrusted_lines(
        summaries.iter().map(|l| (l.stimulus.name(), &l.validity)),
    ));
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    crate::publish::console_text(plan.outputs.json_stdout(), &text);
    if verbosity != Verbosity::Quiet
        && let Some(d) = &outcome.sweep_dir
    {
        for (what, file) in [
            ("summary", crate::artifact::SUMMARY_FILE),
            ("report", crate::report::html::REPORT_FILE),
        ] {
            eprintln!("{what}: {}", d.join(file).display());
        }
    }
    let end = outcome.ending(plan.strict, plan.max_error_rate);
    for line in &end.lines {
        eprintln!("{line}");
    }
    end.code
}

/// The demo's sweep: the TTFT guides' ladder against the simulator's gpt2 over gRPC, 100 measured
/// requests per level (enough for a p99, so every level's numbers are trustworthy).
fn demo_plan(a: &DemoArgs, sim: &crate::sim::SimHandle) -> Result<RunPlan> {
    use crate::plan::resolve::{self, TargetSpec, WorkloadSpec};
    const REQUESTS: u64 = 100;
    let target = resolve::target(&TargetSpec {
        service_kind: Some(crate::target::ServiceKind::Triton),
        backend: Some(crate::target::Backend::Tensorrtllm),
        url: Some(sim.grpc_target()),
        model: "gpt2".into(),
        streaming: Some(true),
        ..TargetSpec::default()
    })?;
    let workload = resolve::workload(&WorkloadSpec {
        input_tokens_mean: Some(200),
        input_tokens_stddev: 20,
        output_tokens_mean: Some(DEMO_OUTPUT_TOKENS),
        output_tokens_stddev: 4,
        num_prompts: Some(100),
        ..WorkloadSpec::default()
    })?;
    let command: Vec<String> = [
        "ttftbench profile -m gpt2 --service-kind triton --backend tensorrtllm --streaming",
        "--synthetic-input-tokens-mean 200 --synthetic-input-tokens-stddev 20",
        &format!("--output-tokens-mean {DEMO_OUTPUT_TOKENS} --output-tokens-stddev 4"),
        &format!("--num-prompts 100 --request-count {REQUESTS}"),
        &format!("--concurrency {}", a.concurrency),
        &format!("--url {}", sim.grpc_target()),
        &format!("--server-metrics-url {}", sim.metrics_url()),
        &format!("--artifact-dir {}", a.artifact_dir.display()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Ok(RunPlan {
        workload,
        levels: crate::plan::values::concurrency_levels(Some(&a.concurrency)),
        stop: crate::load::LevelLengthRule::Fixed(crate::load::LevelLength::Requests(REQUESTS)),
        server_metrics: crate::server_metrics::MetricsSource::Url(sim.metrics_url()),
        artifact_dir: Some(a.artifact_dir.clone()),
        verbosity: if a.quiet {
            Verbosity::Quiet
        } else {
            Verbosity::Normal
        },
        command_line: command.join(" "),
        ..RunPlan::new(target)
    })
}

/// Output tokens per demo request: short enough that 100 requests at concurrency 1 take seconds,
/// long enough for inter-token latency to mean something.
const DEMO_OUTPUT_TOKENS: u32 = 32;

/// `ttftbench report DIR...`: writes report.html for existing artifact directories.
fn report(a: &crate::cli::ReportArgs) -> Result<u8> {
    use crate::report::html;
    let runs = crate::artifact::read::runs_from_args(&a.dirs)?;
    let out = match (&a.output, a.dirs.as_slice()) {
        (Some(o), _) => o.clone(),
        (None, [one]) if one.is_dir() => one.join(html::REPORT_FILE),
        (None, _) => std::path::PathBuf::from(html::REPORT_FILE),
    };
    let opts = html::Options {
        knee_min_gain: a.knee_min_gain,
        version: crate::VERSION.to_string(),
        generated_at: html::utc(crate::record::unix_now_ns()),
    };
    let page = html::render(&runs, &opts);
    write_file(&out, page)?;
    let levels: usize = runs.iter().map(|r| r.levels.len()).sum();
    for r in &runs {
        let k = crate::analysis::knee::analyze(&r.summaries(), a.knee_min_gain);
        println!("{}: {}", r.label, k.recommendation);
    }
    println!(
        "report: {} ({}, {})",
        out.display(),
        crate::analysis::text::count(runs.len() as u64, "run"),
        crate::analysis::text::count(levels as u64, "level")
    );
    Ok(0)
}

/// `ttftbench compare BASELINE [CURRENT]`: exit code 1 on regression.
fn compare(a: &crate::cli::CompareArgs) -> Result<u8> {
    use crate::cli::CompareFormat;
    use crate::error::UsageError;
    use crate::report::compare::{self as cmp, Rules};
    let percent = |flag, v: &Option<String>| {
        v.as_deref()
            .map(|v| cmp::parse_percent(flag, v))
            .transpose()
    };
    let mut rules = Rules {
        max_throughput_drop: percent("--max-throughput-drop", &a.max_throughput_drop)?,
        max_p99_increase: percent("--max-p99-increase", &a.max_p99_increase)?,
        thresholds: a
            .threshold
            .iter()
            .map(|t| cmp::parse_threshold(t))
            .collect::<Result<Vec<_>, _>>()?,
    };
    if let Some(p) = &a.junit {
        crate::plan::outputs::check_writable("--junit", p)?;
    }
    if rules.is_empty() {
        // The seeds' rule when no limit is given: a comparison without limits gates nothing.
        rules = Rules::seeds();
    }
    let one_run = |p: &std::path::Path, what: &str| -> Result<crate::artifact::read::Run> {
        let mut runs = crate::artifact::read::runs_in(p)?;
        if runs.len() != 1 {
            return Err(UsageError(format!(
                "{what} {}: holds {} runs; give one run directory (e.g. {}), or give only a folder of runs to compare its two newest",
                p.display(),
                runs.len(),
                runs.last().map_or_else(String::new, |r| r.dir.display().to_string())
            ))
            .into());
        }
        Ok(runs.remove(0))
    };
    let (base, cur) = match &a.current {
        Some(c) => (one_run(&a.baseline, "BASELINE")?, one_run(c, "CURRENT")?),
        None => {
            let mut runs = crate::artifact::read::runs_in(&a.baseline)?;
            if runs.len() < 2 {
                return Err(UsageError(format!(
                    "{}: one run only; give BASELINE and CURRENT, or a folder holding at least two runs",
                    a.baseline.display()
                ))
                .into());
            }
            let cur = runs.pop().expect("two runs");
            let base = runs.pop().expect("two runs");
            (base, cur)
        }
    };
    match cmp::comparable(&base, &cur) {
        Ok(notes) => notes.iter().for_each(|n| eprintln!("{n}")),
        Err(diffs) if a.allow_mismatch => {
            eprintln!("warning: comparing different workloads (--allow-mismatch):");
            diffs.iter().for_each(|d| eprintln!("  {d}"));
        }
        Err(diffs) => {
            return Err(UsageError(format!(
                "{} and {} measured different workloads, so their numbers are not comparable:\n  {}\nRe-run one of them with the other's workload, or pass --allow-mismatch to compare anyway",
                base.dir.display(),
                cur.dir.display(),
                diffs.join("\n  ")
            ))
            .into());
        }
    }
    let c = cmp::compare(&base, &cur, &rules);
    publish_compare(&c, a.junit.as_deref())?;
    let text = match a.format {
        CompareFormat::Table => cmp::text(&c),
        CompareFormat::Markdown => cmp::markdown(&c),
        CompareFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&cmp::json(&c)).unwrap_or_default()
        ),
    };
    match &a.output {
        Some(path) => {
            write_file(path, &text)?;
            let n = c.regression_count();
            eprintln!(
                "compare: {} — written to {}",
                match n {
                    0 => "no regressions".to_string(),
                    n => format!("{n} regressions"),
                },
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(if c.regression_count() > 0 { 1 } else { 0 })
}

/// A comparison's JUnit report (`--junit`) and GitHub step summary (`GITHUB_STEP_SUMMARY`).
fn publish_compare(
    c: &crate::report::compare::Comparison,
    junit: Option<&std::path::Path>,
) -> Result<()> {
    use crate::publish::{junit, step_summary};
    if let Some(path) = junit {
        let name = format!("ttftbench compare {} vs {}", c.current.0, c.baseline.0);
        crate::artifact::write_atomic(path, junit::encode(&name, &junit::compare_suites(c)))
            .map_err(|e| Error::failed(format!("--junit: {e}")))?;
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let md = format!("{}\n", crate::report::compare::markdown(c));
        step_summary::append(std::path::Path::new(&path), &md)?;
    }
    Ok(())
}

/// `ttftbench doctor`: exit code 1 at the first failing step.
async fn doctor(a: &crate::cli::DoctorArgs) -> Result<u8> {
    use std::io::Write;
    let plan = a.plan()?;
    let t = &plan.target;
    println!(
        "ttftbench doctor: model '{}' over {} at {}",
        t.model,
        match t.api {
            crate::target::Api::Kserve => "KServe v2 gRPC".to_string(),
            crate::target::Api::Generate => format!("Triton HTTP ({})", t.endpoint),
            other => format!("OpenAI {} ({})", other.name(), t.endpoint),
        },
        t.base_url
    );
    let d = crate::doctor::diagnose(&plan, &mut |i, step| {
        print!("{}", step.render(i, crate::doctor::STEPS));
        let _ = std::io::stdout().flush();
    })
    .await;
    if let Some(f) = d.failed() {
        println!("stopped at \"{}\": fix that and run doctor again", f.title);
        return Ok(1);
    }
    let warnings = d
        .steps
        .iter()
        .filter(|s| s.status == crate::doctor::Status::Warn)
        .count();
    let warned = match warnings {
        0 => String::new(),
        n => format!(" ({})", crate::analysis::text::count(n as u64, "warning")),
    };
    println!("all checks passed{warned}. Next: one level, then the ladder:");
    let mut cmd = format!(
        "ttftbench profile -m {} -u {}",
        t.model,
        t.base_url.trim_start_matches("http://")
    );
    if t.api != crate::target::Api::Kserve {
        cmd.push_str(&format!(" --endpoint-type {}", t.api.name()));
    }
    // Embeddings and rankings answer whole: no --streaming for them.
    if t.api.generates() {
        cmd.push_str(" --streaming");
    }
    println!("  {cmd} --concurrency 1");
    println!(
        "  {cmd} --concurrency 1,2,4,8,16,32 --artifact-dir './bench/{{timestamp}}/c{{concurrency}}'"
    );
    Ok(0)
}

/// Raises this process's open-file limit to its hard limit: every stream in flight holds a
/// socket (and the simulator one per client connection), and the usual soft limit of 1024 would
/// cap a run at about a thousand concurrent streams. Returns the limit now in force.
pub fn raise_fd_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX)
        .ok()
        .or_else(|| crate::record::open_file_limit().map(|(soft, _)| soft))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_line_names_the_binary_as_it_can_be_run() {
        let installed = next_line("ttftbench");
        assert!(
            installed.starts_with("next: `ttftbench serve`"),
            "{installed}"
        );
        assert!(!installed.contains("cargo install"), "{installed}");
        let built = next_line("target/release/ttftbench");
        assert!(
            built.starts_with("next: `target/release/ttftbench serve`"),
            "{built}"
        );
        assert!(built.contains("`cargo install --path .`"), "{built}");
    }

    /// The soft limit is raised to the hard one, and the limit returned is the one in force.
    /// (Linux: macOS caps the soft limit below an unlimited hard one.)
    #[cfg(target_os = "linux")]
    #[test]
    fn file_limit_raised_to_the_hard_limit() {
        let now = raise_fd_limit();
        let (soft, hard) = crate::record::open_file_limit().expect("getrlimit");
        assert_eq!(now, soft);
        assert_eq!(soft, hard);
    }
}
