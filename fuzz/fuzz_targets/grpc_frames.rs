//! libFuzzer harness for the `grpc_frames` target (`ttftbench::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (ttftbench::fuzz::target("grpc_frames").expect("target exists").run)(data)
});
