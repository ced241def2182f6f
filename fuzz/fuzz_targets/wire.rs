//! libFuzzer harness for the `wire` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("wire").expect("target exists").run)(data)
});
