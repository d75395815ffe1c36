//! The one "require this tool" gate. A test that needs something a machine may lack (the shared
//! fixtures, real pi and tmux, the Python packages of `.venv`, the rotel collector) asks
//! [`require`]: present, it runs; absent, it fails when the tool is required — its
//! `TOOLSTREAM_REQUIRE_*` variable is set (as `./scripts/test` sets them all) or `CI` is — and
//! otherwise skips visibly: a `SKIPPED` line goes straight to the terminal (past the test
//! harness's capture, so it shows in the run's output even for a passing test), never a silent
//! pass.

use std::io::Write;

/// Something a test may need that is installed apart from the project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `../shared/fixtures`, the recorded Cursor data.
    Fixtures,
    /// Real pi (each of `scripts/pi-versions`, by `scripts/install-pi`) and tmux.
    Pi,
    /// `.venv`'s Python packages (`scripts/install-py`): pytest, the openai and mcp SDKs.
    Py,
    /// The rotel OpenTelemetry collector in `.venv` (`scripts/install-py`).
    Otel,
    /// Linux's `/dev/full`, a file every write to fails (a full disk, for real).
    DevFull,
}

impl Tool {
    /// The variable that makes this tool's absence a failure.
    pub fn require_env(self) -> &'static str {
        match self {
            Tool::Fixtures => "TOOLSTREAM_REQUIRE_FIXTURES",
            Tool::Pi => "TOOLSTREAM_REQUIRE_PI",
            Tool::Py => "TOOLSTREAM_REQUIRE_PY",
            Tool::Otel => "TOOLSTREAM_REQUIRE_OTEL",
            Tool::DevFull => "TOOLSTREAM_REQUIRE_DEV_FULL",
        }
    }

    /// What installs it.
    fn install_hint(self) -> &'static str {
        match self {
            Tool::Fixtures => "the shared folder ../shared beside the project",
            Tool::Pi => "./scripts/install-pi, and tmux",
            Tool::Py | Tool::Otel => "./scripts/install-py",
            Tool::DevFull => "a Linux /dev",
        }
    }
}

/// Whether `value` of an environment variable turns a flag on (`CI=true`, `…_REQUIRE_PI=1`).
fn flag_on(value: Option<std::ffi::OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Whether `tool`'s absence must fail a test: its `TOOLSTREAM_REQUIRE_*` variable or `CI` is set.
pub fn required(tool: Tool) -> bool {
    flag_on(std::env::var_os(tool.require_env())) || flag_on(std::env::var_os("CI"))
}

/// The gate: `true` when `present`. When absent, a required tool fails the test (a panic naming
/// `what` and how to install it); otherwise the skip is reported on the terminal and the answer
/// is `false` (the caller returns).
///
/// # Panics
/// When `what` is absent and [`required`].
pub fn require(tool: Tool, present: bool, what: &str) -> bool {
    if present {
        return true;
    }
    #[allow(clippy::panic)]
    if required(tool) {
        panic!("{what} is absent and {} is set (install: {})", tool.require_env(), tool.install_hint());
    }
    skip(tool, what);
    false
}

/// Report on the terminal that the running test skips because `what` (of `tool`) is absent.
pub fn skip(tool: Tool, what: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    // Straight to the process's stderr: the harness captures `eprintln!` of passing tests.
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {what} is absent (install: {})", tool.install_hint());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        assert!(!flag_on(None));
        assert!(!flag_on(Some("".into())));
        assert!(!flag_on(Some("0".into())));
        assert!(!flag_on(Some("false".into())));
        assert!(flag_on(Some("1".into())));
        assert!(flag_on(Some("true".into())));
    }

    #[test]
    fn present_runs() {
        assert!(require(Tool::Py, true, "python"));
    }
}
