//! Runs the fuzz targets of `ttftbench::fuzz` with the stable mutation fuzzer (no nightly, no
//! instrumentation): for each target, random mutations of its seeds and kept regressions for a
//! set time or input count. An input that fails a property is saved under
//! `fuzz/crashes/<target>/` and the run goes on; the exit code is 1 when any input failed.
//!
//! ```text
//! cargo run --release --example fuzz_stable -- [--seconds S] [--inputs N] [--seed X] [TARGET...]
//! ```

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ttftbench::fuzz::{TARGETS, Target, mutate_run};

fn main() {
    let mut seconds: Option<u64> = None;
    let mut inputs = u64::MAX;
    let mut seed = 1u64;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |what: &str| -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{what} needs a number"))
        };
        match a.as_str() {
            "--seconds" => seconds = Some(num("--seconds")),
            "--inputs" => inputs = num("--inputs"),
            "--seed" => seed = num("--seed"),
            _ => names.push(a),
        }
    }
    if seconds.is_none() && inputs == u64::MAX {
        seconds = Some(10);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let targets: Vec<Target> = if names.is_empty() {
        TARGETS.to_vec()
    } else {
        names
            .iter()
            .map(|n| ttftbench::fuzz::target(n).unwrap_or_else(|| panic!("no target {n}")))
            .collect()
    };
    // Property failures are reported once per input below (with the panic message), not as a
    // backtrace each.
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        LAST_PANIC.with(|p| *p.borrow_mut() = format!("{msg} ({at})"));
    }));
    let mut failed = false;
    for t in targets {
        let (n, crashes, took) = run_target(&root, t, seconds, inputs, seed);
        println!(
            "{:<12} {:>12} inputs in {:>7.1} s ({:>9.0}/s), {} failing",
            t.name,
            n,
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64().max(1e-9),
            crashes
        );
        failed |= crashes > 0;
    }
    std::process::exit(i32::from(failed));
}

/// Failing inputs kept per target before it is given up on: past that it is one bug found many
/// times.
const MAX_CRASHES: u32 = 10;

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

fn run_target(
    root: &Path,
    t: Target,
    seconds: Option<u64>,
    inputs: u64,
    seed: u64,
) -> (u64, u32, Duration) {
    let seeds = corpus(root, t.name);
    let start = Instant::now();
    let deadline = seconds.map(|s| start + Duration::from_secs(s));
    let last = RefCell::new(Vec::new());
    let (mut total, mut crashes, mut round) = (0u64, 0u32, 0u64);
    while total < inputs && deadline.is_none_or(|d| Instant::now() < d) {
        let mut ran = 0u64;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            mutate_run(
                t,
                &seeds,
                seed.wrapping_add(round.wrapping_mul(0x9e37_79b9)),
                inputs - total,
                deadline,
                |b| {
                    ran += 1;
                    let mut l = last.borrow_mut();
                    l.clear();
                    l.extend_from_slice(b);
                },
            )
        }));
        round += 1;
        total += ran;
        if result.is_err() {
            crashes += 1;
            let saved = save_crash(root, t.name, &last.borrow());
            let why = LAST_PANIC.with(|p| p.borrow().clone());
            println!("{}: {why}; input saved to {}", t.name, saved.display());
            if crashes >= MAX_CRASHES {
                break;
            }
        }
    }
    (total, crashes, start.elapsed())
}

/// Seeds, kept regressions and any corpus a coverage-guided run left behind.
fn corpus(root: &Path, name: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in ["seeds", "regressions", "corpus"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir).join(name)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        out.extend(paths.iter().filter_map(|p| std::fs::read(p).ok()));
    }
    out
}

fn save_crash(root: &Path, name: &str, input: &[u8]) -> PathBuf {
    let dir = root.join("crashes").join(name);
    let _ = std::fs::create_dir_all(&dir);
    // FNV-1a: a stable name, so the same input found twice is saved once.
    let h = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("crash-{h:016x}"));
    let _ = std::fs::write(&path, input);
    path
}
