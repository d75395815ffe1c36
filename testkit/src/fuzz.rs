//! The fuzz job's regression inputs (`scripts/fuzz`): a crate keeps every input one of its fuzz
//! targets once failed on, minimised, as a file in `tests/fuzz_regressions/<target>/`; its tests
//! replay them through the target's check (`fuzz/checks/`) on every `cargo test`.

use std::path::{Path, PathBuf};

/// The regression inputs of `target` in the crate at `crate_dir` (its `CARGO_MANIFEST_DIR`),
/// sorted by name; none when the folder is absent (the target never failed).
pub fn regression_inputs(crate_dir: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(crate_dir).join("tests/fuzz_regressions").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs `check` on every regression input of `target` (see [`regression_inputs`]), saying on
/// stderr which input it runs, so a failure names it. Returns how many inputs ran.
///
/// # Panics
/// When an input cannot be read, or `check` panics on one.
pub fn replay_regressions(crate_dir: &str, target: &str, check: impl Fn(&[u8])) -> usize {
    let inputs = regression_inputs(crate_dir, target);
    for path in &inputs {
        eprintln!("fuzz regression input: {}", path.display());
        #[allow(clippy::panic)]
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&data);
    }
    inputs.len()
}
