//! Yardstick: a target that decodes nothing, to measure libFuzzer's own overhead.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    std::hint::black_box(data);
});
