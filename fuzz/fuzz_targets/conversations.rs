//! libFuzzer harness for the `conversations` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("conversations").expect("target exists").run)(data)
});
