//! The fuzz job (`scripts/fuzz`) for this crate's targets `decode_cli`, `decode_sdk` and
//! `decode_exec`: every input one of them once failed on is replayed through the target's own
//! check (`fuzz/checks/decode.rs`), and the check holds on the examples at every line bound and
//! read size, so it is known to run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../../fuzz/checks/decode.rs"]
mod decode;

use std::path::Path;

use toolstream_engine::decode::Format;

const TARGETS: [(&str, Format, &str); 3] = [
    ("decode_cli", Format::CursorCli, "demo.jsonl"),
    ("decode_sdk", Format::CursorSdk, "sdk-demo.jsonl"),
    ("decode_exec", Format::CursorExec, "exec-demo.jsonl"),
];

#[test]
fn decoder_regression_inputs_pass_the_check() {
    for (target, format, _) in TARGETS {
        toolstream_testkit::fuzz::replay_regressions(env!("CARGO_MANIFEST_DIR"), target, |data| {
            decode::check(data, format)
        });
    }
}

#[test]
fn the_decoder_check_holds_on_the_examples() {
    for (_, format, example) in TARGETS {
        let stream = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(example)).unwrap();
        for knob in [0u8, 0x0f, 0x30, 0xf0, 0xff] {
            let mut data = vec![knob];
            data.extend_from_slice(&stream);
            decode::check(&data, format);
        }
    }
}
