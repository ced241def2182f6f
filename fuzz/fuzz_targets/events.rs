//! libFuzzer harness for the `events` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("events").expect("target exists").run)(data)
});
