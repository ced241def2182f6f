//! libFuzzer harness for the `genai_perf_json` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("genai_perf_json").expect("target exists").run)(data)
});
