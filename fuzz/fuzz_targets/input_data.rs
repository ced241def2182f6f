//! libFuzzer harness for the `input_data` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("input_data").expect("target exists").run)(data)
});
