//! toolstream-benches: criterion benches (`cargo bench -p toolstream-benches`) of the decoder,
//! each stage's pure core and the card builder, on a corpus generated from the project's own
//! examples. End-to-end throughput against the parse floor is `toolstream bench` (the recorded-
//! corpus generator lives in `toolstream::bench::corpus`, which the binary needs too).

use std::path::{Path, PathBuf};

use toolstream::bench::corpus::{generate, templates_from_dir, CorpusSpec};

/// The project's examples folder.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A deterministic stream-json corpus of about `bytes`, from the examples, 16 sessions interleaved.
pub fn corpus(bytes: u64) -> Vec<u8> {
    let templates = templates_from_dir(&examples_dir()).unwrap_or_default();
    let mut out = Vec::new();
    let spec = CorpusSpec { target_bytes: bytes, concurrency: 16, seed: 7 };
    // Writing into a Vec cannot fail.
    let _ = generate(&templates, &spec, &mut out);
    out
}
