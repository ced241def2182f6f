//! libFuzzer harness for the `prometheus` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("prometheus").expect("target exists").run)(data)
});
