//! libFuzzer harness for the `scored_rows` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("scored_rows").expect("target exists").run)(data)
});
