//! The fuzz job (`scripts/fuzz`) for this crate's target `scrub`: every input it once failed on is
//! replayed through the target's own check (`fuzz/checks/scrub.rs`), and the check holds on
//! ordinary text and on the secrets people leak, so it is known to run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../../fuzz/checks/scrub.rs"]
mod scrub;

#[test]
fn scrub_regression_inputs_pass_the_check() {
    toolstream_testkit::fuzz::replay_regressions(env!("CARGO_MANIFEST_DIR"), "scrub", scrub::check);
}

#[test]
fn the_scrub_check_holds_on_ordinary_text_and_secrets() {
    let texts = [
        "",
        "plain text, nothing secret",
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "git clone https://user:hunter2@github.com/o/r.git && curl -u admin:s3cret http://h",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl",
        "{\"password\": \"pa\\\"ss\", \"api_key\": \"k\"} --password=x",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "日本語 😀 [redacted] token=",
    ];
    for text in texts {
        for knob in [0u8, 1, 3, 200, 255] {
            let mut data = vec![knob];
            data.extend_from_slice(text.as_bytes());
            scrub::check(&data);
        }
    }
    scrub::check(b"\xf0\xff\xfe password=\xed\xa0\x80");
}
