//! Shell-output compaction (SPEC §10, seed 004): classify the command that ran, pick a reducer by
//! command family (data rules in `rules/*.toml`, code reducers where data is not enough), keep
//! every failure, failing test name, error location and count, drop progress noise, passing tests
//! and repeats. Pure: no I/O. `toolstream wrap`, `toolstream hook cursor` and the pi sinks'
//! `--compact` stage all call [`compact`].

pub mod classify;
pub mod pipeline;
pub mod reducers;
pub mod rules;

use serde::Serialize;

use classify::Normalized;
use rules::RuleSet;

/// Every command family a rule may belong to (checked when the rules load).
pub const FAMILIES: &[&str] = &[
    "generic",
    "help",
    "git-status",
    "git-diff",
    "git-log",
    "git-worktree",
    "test-results",
    "dependency-install",
    "build-rust",
    "build-typescript",
    "build-c",
    "build-xcode",
    "lint-results",
    "search",
    "filesystem-find",
    "container-build",
    "developer-cli",
];

/// The reducer name a `--raw` (or fallen-back) result reports.
pub const RAW_REDUCER: &str = "raw";

/// What ran and what it printed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// The argv as executed, when known (preferred over `command`).
    pub argv: Option<&'a [String]>,
    /// The command line, when only that is known.
    pub command: Option<&'a str>,
    /// Its output (stdout and stderr as interleaved).
    pub output: &'a str,
    pub exit_code: Option<i32>,
}

/// Why the decision was made (`--trace`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    pub normalized_command: String,
    pub normalized_argv: Vec<String>,
    pub matched_reducer: String,
    pub family: String,
    pub compound: bool,
    pub raw_chars: usize,
    pub reduced_chars: usize,
    /// `reduced_chars / raw_chars` (1 for empty output).
    pub ratio: f64,
    /// Why the raw output was kept, when compaction could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// The compacted output and its trace.
#[derive(Clone, Debug)]
pub struct Compacted {
    pub text: String,
    pub trace: Trace,
}

/// The normalized form of the request's command.
pub fn normalize(req: &Request<'_>) -> Normalized {
    match (req.argv, req.command) {
        (Some(argv), _) if !argv.is_empty() => classify::normalize_argv(argv),
        (_, Some(cmd)) => classify::normalize_command(cmd),
        _ => Normalized::default(),
    }
}

/// Compact `req.output` with the reducer its command calls for. Never fails: when the rules
/// cannot load, the output comes back unchanged with the reason in `trace.fallback`.
pub fn compact(req: &Request<'_>) -> Compacted {
    let n = normalize(req);
    let set = match RuleSet::builtin() {
        Ok(set) => set,
        Err(e) => return raw_with(req, n, Some(format!("rules failed to load: {e}"))),
    };
    let Some((rule, argv)) = classify::pick(set, &n) else {
        return raw_with(req, n, Some("no fallback rule".into()));
    };
    let pre = match rule.reducer {
        Some(code) => code.apply(req.output),
        None => std::borrow::Cow::Borrowed(req.output),
    };
    let text = pipeline::run(rule, &set.common_failure, &pre, req.exit_code);
    let trace = trace(n.command, argv, &rule.id, &rule.family, n.compound, req.output, &text, None);
    Compacted { text, trace }
}

/// The output unchanged, byte for byte (`--raw`): ratio 1.
pub fn raw(req: &Request<'_>) -> Compacted {
    raw_with(req, normalize(req), None)
}

fn raw_with(req: &Request<'_>, n: Normalized, fallback: Option<String>) -> Compacted {
    let trace = trace(n.command, n.argv, RAW_REDUCER, "raw", n.compound, req.output, req.output, fallback);
    Compacted { text: req.output.to_owned(), trace }
}

#[allow(clippy::too_many_arguments)]
fn trace(
    command: String,
    argv: Vec<String>,
    reducer: &str,
    family: &str,
    compound: bool,
    raw: &str,
    reduced: &str,
    fallback: Option<String>,
) -> Trace {
    let raw_chars = raw.chars().count();
    let reduced_chars = reduced.chars().count();
    let ratio = if raw_chars == 0 { 1.0 } else { reduced_chars as f64 / raw_chars as f64 };
    Trace {
        normalized_command: command,
        normalized_argv: argv,
        matched_reducer: reducer.to_owned(),
        family: family.to_owned(),
        compound,
        raw_chars,
        reduced_chars,
        ratio,
        fallback,
    }
}

#[cfg(test)]
mod tests;
