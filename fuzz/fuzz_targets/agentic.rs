//! libFuzzer harness for the `agentic` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("agentic").expect("target exists").run)(data)
});
