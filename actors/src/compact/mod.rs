//! Shell-output compaction (SPEC §10, seed 004): classify the command that ran and find the
//! producers of its output (pipelines, compounds, shell wrappers), pick a reducer by command
//! family — or by the output's own content when the command does not say (`cat log`, a script,
//! `make`), splitting the output of several tools where each begins — (data rules in
//! `rules/*.toml`, code reducers where data is not enough), keep every failure, failing test name,
//! error location and count, drop progress noise, passing tests, repeats and runs of same-shape
//! lines. Pure: no I/O. `toolstream wrap`, `toolstream compact`, `toolstream hook cursor` and the
//! pi sinks' `--compact` stage all call [`compact`].

pub mod classify;
pub mod content;
pub mod pipeline;
pub mod reducers;
pub mod route;
pub mod rules;
pub mod shape;
pub mod shell;

use std::borrow::Cow;

use serde::Serialize;

use classify::Normalized;
use route::Part;
use rules::{Rule, RuleSet};

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
    "agent-session",
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

/// How the reducer was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchedVia {
    /// The command named it.
    Command,
    /// The output's content did (the command said nothing).
    Content,
    /// The output was split between several reducers (see [`Trace::parts`]).
    Split,
    /// Nothing named one: the generic reducer.
    Fallback,
    /// `--raw`, or compaction could not run.
    Raw,
}

/// One part of a split output (`--trace`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartTrace {
    /// Its first line's number (1-based).
    pub first_line: usize,
    pub matched_reducer: String,
    pub family: String,
    pub matched_via: MatchedVia,
    /// The line that began it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// Why the decision was made (`--trace`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    pub normalized_command: String,
    pub normalized_argv: Vec<String>,
    /// The reducer (for a split output, every part's, joined by ` + `).
    pub matched_reducer: String,
    pub family: String,
    pub matched_via: MatchedVia,
    /// The line of the output that picked the reducer, when the content did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    pub compound: bool,
    /// The commands whose output was seen (see [`classify`]).
    pub producers: Vec<String>,
    /// The parts of a split output, in order (empty when one reducer took it all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartTrace>,
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

/// Compact `req.output` with the reducer its command — or its content — calls for. Never fails:
/// when the rules cannot load, the output comes back unchanged with the reason in
/// `trace.fallback`.
pub fn compact(req: &Request<'_>) -> Compacted {
    let n = normalize(req);
    let set = match RuleSet::builtin() {
        Ok(set) => set,
        Err(e) => return raw_with(req, n, Some(format!("rules failed to load: {e}"))),
    };
    let route = route::route(set, &n, req.output);
    let text = match route.parts.as_slice() {
        [one] => reduce(set, one.rule, req.output, req.exit_code, true),
        parts => {
            // `exit N` once on top; the parts, each with its own counts, a blank line apart.
            let mut out = req.exit_code.filter(|c| *c != 0).map(|c| format!("exit {c}\n")).unwrap_or_default();
            let mut first = true;
            for (i, part) in parts.iter().enumerate() {
                let end = parts.get(i + 1).map_or(req.output.len(), |next| next.start);
                let piece = req.output.get(part.start..end).unwrap_or_default();
                let reduced = reduce(set, part.rule, piece, req.exit_code, false);
                if !reduced.is_empty() {
                    if !std::mem::take(&mut first) {
                        out.push_str("\n\n");
                    }
                    out.push_str(&reduced);
                }
            }
            out.truncate(out.trim_end_matches('\n').len());
            out
        }
    };
    let mut trace = trace(n, route.argv, req.output, &text);
    describe(&mut trace, &route.parts);
    Compacted { text, trace }
}

/// One rule's reduction of (a part of) the output.
fn reduce(set: &RuleSet, rule: &Rule, output: &str, exit_code: Option<i32>, show_exit: bool) -> String {
    let pre = match rule.reducer {
        Some(code) => code.apply(output),
        None => Cow::Borrowed(output),
    };
    pipeline::run(rule, &set.common_failure, &pre, exit_code, show_exit)
}

/// Fill in the trace's reducer, family and how they were chosen.
fn describe(trace: &mut Trace, parts: &[Part<'_>]) {
    if let [one] = parts {
        trace.matched_reducer.clone_from(&one.rule.id);
        trace.family.clone_from(&one.rule.family);
        trace.matched_via = one.via;
        trace.evidence.clone_from(&one.evidence);
        return;
    }
    trace.matched_reducer = distinct(parts.iter().map(|p| p.rule.id.as_str()));
    trace.family = distinct(parts.iter().map(|p| p.rule.family.as_str()));
    trace.matched_via = MatchedVia::Split;
    trace.parts = parts
        .iter()
        .map(|p| PartTrace {
            first_line: p.line + 1,
            matched_reducer: p.rule.id.clone(),
            family: p.rule.family.clone(),
            matched_via: p.via,
            evidence: p.evidence.clone(),
        })
        .collect();
}

/// The names, each once, in order, joined by ` + `.
fn distinct<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen.join(" + ")
}

/// The output unchanged, byte for byte (`--raw`): ratio 1.
pub fn raw(req: &Request<'_>) -> Compacted {
    raw_with(req, normalize(req), None)
}

fn raw_with(req: &Request<'_>, n: Normalized, fallback: Option<String>) -> Compacted {
    let argv = n.argv.clone();
    let mut trace = trace(n, argv, req.output, req.output);
    trace.fallback = fallback;
    Compacted { text: req.output.to_owned(), trace }
}

/// The trace of `raw` reduced to `reduced`, as if by `--raw` (the caller says otherwise).
fn trace(n: Normalized, argv: Vec<String>, raw: &str, reduced: &str) -> Trace {
    let raw_chars = raw.chars().count();
    let reduced_chars = reduced.chars().count();
    let ratio = if raw_chars == 0 { 1.0 } else { reduced_chars as f64 / raw_chars as f64 };
    Trace {
        normalized_command: n.command,
        normalized_argv: argv,
        matched_reducer: RAW_REDUCER.to_owned(),
        family: RAW_REDUCER.to_owned(),
        matched_via: MatchedVia::Raw,
        evidence: None,
        compound: n.compound,
        producers: n.producers.iter().map(|p| classify::join_words(p)).collect(),
        parts: Vec::new(),
        raw_chars,
        reduced_chars,
        ratio,
        fallback: None,
    }
}

#[cfg(test)]
mod tests;
