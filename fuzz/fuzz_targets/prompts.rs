//! libFuzzer harness for the `prompts` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("prompts").expect("target exists").run)(data)
});
