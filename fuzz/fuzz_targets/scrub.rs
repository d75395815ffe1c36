//! Fuzz target: the secret scrubber (see `checks/scrub.rs`).
#![no_main]

#[path = "../checks/scrub.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
