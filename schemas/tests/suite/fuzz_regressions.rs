//! The fuzz job (`scripts/fuzz`) for this crate's target `display`: every input it once failed on
//! is replayed through the target's own check (`fuzz/checks/display.rs`), and the check holds on
//! ordinary and hostile text at every bound, so it is known to run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../../fuzz/checks/display.rs"]
mod display;

#[test]
fn display_regression_inputs_pass_the_check() {
    toolstream_testkit::fuzz::replay_regressions(env!("CARGO_MANIFEST_DIR"), "display", display::check);
}

#[test]
fn the_display_check_holds_on_ordinary_and_hostile_text() {
    let texts = [
        "",
        "plain ✓ text",
        "  spaced\tand\r\nbroken  ",
        "A\x1b]0;PWNED\x07B\x1b[2JC\rD\x08E\x7fF\u{85}G\u{9b}31mH\u{2028}I\u{2029}J\x1bPdcs\x1b\\K",
        "\u{202E}\u{2066}evil\u{2069}\u{202C} \u{200F}\u{061C}",
        "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ and an unterminated \x1b]0;title\nnext",
        "日本語のテキスト😀…",
    ];
    for text in texts {
        for max in [0u8, 1, 2, 5, 40, 240, 255] {
            let mut data = vec![max];
            data.extend_from_slice(text.as_bytes());
            display::check(&data);
        }
    }
    // Not UTF-8: lossy decoding first.
    display::check(b"\xf0\xff\xfe\xed\xa0\x80\x1b[");
}
