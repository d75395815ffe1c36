//! Fuzz target: the display-safety functions (see `checks/display.rs`).
#![no_main]

#[path = "../checks/display.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
