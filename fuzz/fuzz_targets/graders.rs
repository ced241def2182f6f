//! libFuzzer harness for the `graders` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("graders").expect("target exists").run)(data)
});
