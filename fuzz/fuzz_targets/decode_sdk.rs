//! Fuzz target: framing and the CursorSdk decoder (see `checks/decode.rs`).
#![no_main]

#[path = "../checks/decode.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data, toolstream_engine::decode::Format::CursorSdk));
