//! libFuzzer entry of the `snapshot` target: the input straight to `targets::snapshot` (see
//! `tests/fuzz/targets.rs` for what it drives and asserts). Run from the repository root with
//! `cargo +nightly fuzz run --fuzz-dir tests/fuzz snapshot`.
#![no_main]

// Every binary includes all the targets and calls one of them.
#[allow(dead_code)]
#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::snapshot(data));
