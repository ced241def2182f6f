//! The fuzz targets (`ttftbench::fuzz`) as ordinary tests: every seed and every kept crash input
//! (`fuzz/seeds/`, `fuzz/regressions/`) is replayed, then a short seeded mutation smoke runs per
//! target. This is the CI part of fuzzing: no nightly, no fuzzer tooling needed.

use std::path::{Path, PathBuf};

use ttftbench::fuzz::{TARGETS, mutate_run};

/// Inputs per target in the smoke: a few seconds for all targets on a loaded 2-core machine.
const SMOKE_INPUTS: u64 = 3_000;

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn fuzz_dir(kind: &str, target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target)
}

#[test]
fn every_target_has_seeds() {
    for t in TARGETS {
        assert!(
            !files(&fuzz_dir("seeds", t.name)).is_empty(),
            "fuzz/seeds/{} is empty",
            t.name
        );
    }
}

#[test]
fn seeds_and_regressions_replay() {
    let mut n = 0;
    for t in TARGETS {
        for kind in ["seeds", "regressions"] {
            for path in files(&fuzz_dir(kind, t.name)) {
                let input = std::fs::read(&path).unwrap();
                let r = std::panic::catch_unwind(|| (t.run)(&input));
                assert!(r.is_ok(), "{} fails on {}", t.name, path.display());
                n += 1;
            }
        }
    }
    assert!(n >= TARGETS.len());
}

#[test]
fn mutation_smoke() {
    for t in TARGETS {
        let seeds: Vec<Vec<u8>> = files(&fuzz_dir("seeds", t.name))
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        let mut last = Vec::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            mutate_run(*t, &seeds, 7, SMOKE_INPUTS, None, |b| {
                last.clear();
                last.extend_from_slice(b);
            })
        }));
        assert!(
            r.is_ok(),
            "{} fails on a mutated input (keep it under fuzz/regressions/{}): {:?}",
            t.name,
            t.name,
            String::from_utf8_lossy(&last)
        );
    }
}

/// The scored-row seeds reach the properties: each seed's first byte picks the benchmark its rows
/// are written for, so every row is accepted (a mis-picked seed would be rejected row by row and
/// check nothing).
#[test]
fn scored_row_seeds_are_accepted_rows() {
    use strum::VariantArray;
    use ttftbench::workload::scored::{Benchmark, rows};
    let seeds = files(&fuzz_dir("seeds", "scored_rows"));
    assert_eq!(seeds.len(), Benchmark::VARIANTS.len());
    for path in seeds {
        let input = std::fs::read(&path).unwrap();
        let (&pick, text) = input.split_first().unwrap();
        let b = Benchmark::VARIANTS[usize::from(pick) % Benchmark::VARIANTS.len()];
        let lines = rows::read_jsonl_from(text, &path).unwrap();
        assert!(lines.len() >= 2, "{}", path.display());
        for (row, at) in &lines {
            rows::item(b, row, at).unwrap_or_else(|e| panic!("{b:?} {at}: {e}"));
        }
    }
}
