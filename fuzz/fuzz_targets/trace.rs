//! libFuzzer harness for the `trace` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("trace").expect("target exists").run)(data)
});
