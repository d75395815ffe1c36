//! Test support shared by every crate's tests: where the shared fixtures are, and the one gate
//! for what a test needs and a machine may lack ([`require`]). Under the test command
//! (`./scripts/test`, which CI runs) a missing fixture is a failure
//! (`TOOLSTREAM_REQUIRE_FIXTURES=1`); run by hand without it, the test says so and skips.

pub mod fuzz;
pub mod require;
pub mod synthetic;
pub mod terminal;

pub use require::{require, required, Tool};

use std::path::{Path, PathBuf};

/// The shared folder beside the project root (`../shared`).
pub fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// Whether a missing fixture must fail the test rather than skip it.
pub fn fixtures_required() -> bool {
    required(Tool::Fixtures)
}

/// `../shared/fixtures/<rel>` (a file or a folder), or `None` when it is absent and fixtures are
/// not required (the skip reported by [`require`]).
///
/// # Panics
/// When it is absent and [`fixtures_required`]: under the test command a fixture test never
/// passes by skipping.
pub fn fixture(rel: &str) -> Option<PathBuf> {
    locate(&shared_dir(), rel, fixtures_required())
}

fn locate(shared: &Path, rel: &str, required: bool) -> Option<PathBuf> {
    let path = shared.join("fixtures").join(rel);
    if path.exists() {
        return Some(path);
    }
    #[allow(clippy::panic)]
    if required {
        panic!("fixture {} is missing and {} is set", path.display(), Tool::Fixtures.require_env());
    }
    require::skip(Tool::Fixtures, &format!("fixture {}", path.display()));
    None
}

/// The files directly in fixture folder `rel` whose name ends with `.<ext>`, sorted; empty when
/// the folder is absent and fixtures are not required.
///
/// # Panics
/// When the folder is absent (or unreadable, or holds no such file) and [`fixtures_required`].
pub fn fixture_files(rel: &str, ext: &str) -> Vec<PathBuf> {
    let Some(dir) = fixture(rel) else { return Vec::new() };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    #[allow(clippy::panic)]
    if files.is_empty() && fixtures_required() {
        panic!("fixture folder {} holds no .{ext} file and {} is set", dir.display(), Tool::Fixtures.require_env());
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_fixture_is_found() {
        let shared = std::env::temp_dir().join(format!("toolstream-testkit-{}", std::process::id()));
        std::fs::create_dir_all(shared.join("fixtures/cursor-cli")).unwrap();
        assert_eq!(locate(&shared, "cursor-cli", true), Some(shared.join("fixtures/cursor-cli")));
        let _ = std::fs::remove_dir_all(&shared);
    }

    #[test]
    fn a_missing_fixture_skips_by_hand() {
        assert_eq!(locate(Path::new("/nonexistent-shared"), "cursor-cli", false), None);
    }

    #[test]
    #[should_panic(expected = "is missing")]
    fn a_missing_fixture_fails_under_the_test_command() {
        let _ = locate(Path::new("/nonexistent-shared"), "cursor-cli", true);
    }
}
