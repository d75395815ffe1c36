//! Fuzz target: records split across lines, rejoined (see `checks/rejoin.rs`).
#![no_main]

#[path = "../checks/rejoin.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
