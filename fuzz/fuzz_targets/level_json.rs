//! libFuzzer harness for the `level_json` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("level_json").expect("target exists").run)(data)
});
