//! libFuzzer harness for the `histograms` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("histograms").expect("target exists").run)(data)
});
