//! libFuzzer harness for the `perf_csv` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("perf_csv").expect("target exists").run)(data)
});
