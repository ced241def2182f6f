//! libFuzzer harness for the `sse` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("sse").expect("target exists").run)(data)
});
