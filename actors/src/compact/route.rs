//! Which reducer reduces which part of the output (SPEC §10). The producers of the output (see
//! [`classify`](super::classify)) decide first:
//!
//! - every producer names the same rule (`cargo test`, `cargo test 2>&1 | tail`): that rule, on
//!   the whole output (`matchedVia: command`);
//! - one producer, or none, and no rule named (`cat log`, `./run-tests.sh`, `make`): the content
//!   decides — split where another tool's output begins, else the signatures among the first and
//!   last lines, else the generic fallback (`content` / `fallback`) — or, for a file read
//!   (`cat src/main.rs`), the file as it is;
//! - several producers naming different rules (`npm ci && cargo test`, `cat a.log; ./b.sh`): the
//!   output is split where each tool's output begins, a part taking the named rule of its tool
//!   when there is one; lines before the first recognised start belong to the first producer
//!   when it names a rule that no part has; nothing recognised — the generic compound rule,
//!   which cuts nothing, so a later command's output is never lost (files read: as they are).

use super::classify::{pick, reads_files, Normalized};
use super::content::{self, Region};
use super::rules::{Rule, RuleSet};
use super::MatchedVia;

/// One part of the output and the rule that reduces it.
#[derive(Clone, Debug)]
pub struct Part<'a> {
    /// Byte offset where it starts (it ends where the next part starts).
    pub start: usize,
    /// Its first line's number (0-based).
    pub line: usize,
    pub rule: &'a Rule,
    pub via: MatchedVia,
    /// The line of the output that picked the rule, when the content did.
    pub evidence: Option<String>,
}

/// The parts of an output (at least one; the first starts at 0) and the argv the trace reports.
#[derive(Clone, Debug)]
pub struct Route<'a> {
    pub parts: Vec<Part<'a>>,
    pub argv: Vec<String>,
}

/// Decide how `output`, printed by the command `n`, is reduced.
pub fn route<'a>(set: &'a RuleSet, n: &Normalized, output: &str) -> Route<'a> {
    let named: Vec<Option<(usize, Vec<String>)>> =
        n.producers.iter().map(|p| pick(set, p).and_then(|(rule, argv)| Some((set.index(&rule.id)?, argv)))).collect();
    let argv = match named.as_slice() {
        [Some((_, argv))] => argv.clone(),
        _ => n.argv.clone(),
    };
    // What nothing recognises: a file read stays as it is, anything else gets a generic rule.
    let files = reads_files(&n.producers).then(|| &set.rules[set.file]);
    let parts = match named.as_slice() {
        [] | [None] => by_content(set, output, files.unwrap_or(&set.rules[set.fallback])),
        [Some((first, _)), rest @ ..] if rest.iter().all(|r| r.as_ref().is_some_and(|(i, _)| i == first)) => {
            vec![whole(&set.rules[*first], MatchedVia::Command, None)]
        }
        _ => split(set, &named, output, files.unwrap_or(&set.rules[set.compound])),
    };
    Route { parts, argv }
}

fn whole(rule: &Rule, via: MatchedVia, evidence: Option<String>) -> Part<'_> {
    Part { start: 0, line: 0, rule, via, evidence }
}

/// The command says nothing: the output's start lines, else its signatures, else `fallback`.
fn by_content<'a>(set: &'a RuleSet, output: &str, fallback: &'a Rule) -> Vec<Part<'a>> {
    let regions = content::regions(set, output);
    if regions.is_empty() {
        return match content::recognise(set, output) {
            Some((rule, evidence)) => vec![whole(&set.rules[rule], MatchedVia::Content, Some(evidence))],
            None => vec![whole(fallback, MatchedVia::Fallback, None)],
        };
    }
    let mut parts = Vec::new();
    for r in regions {
        push(&mut parts, part(&r, &set.rules[r.rule], MatchedVia::Content));
    }
    parts
}

/// Several producers naming different rules (or some none); `fallback` when no part is seen.
fn split<'a>(
    set: &'a RuleSet,
    named: &[Option<(usize, Vec<String>)>],
    output: &str,
    fallback: &'a Rule,
) -> Vec<Part<'a>> {
    let regions = content::regions(set, output);
    let Some(first) = regions.first() else {
        return vec![whole(fallback, MatchedVia::Fallback, None)];
    };
    let related = |a: usize, b: usize| a == b || set.rules[a].absorbs.contains(&b) || set.rules[b].absorbs.contains(&a);
    let mut parts = Vec::new();
    if let Some(Some((rule, _))) = named.first() {
        if first.start > 0 && !regions.iter().any(|r| related(*rule, r.rule)) {
            parts.push(whole(&set.rules[*rule], MatchedVia::Command, None));
        }
    }
    for r in &regions {
        let by_command = named.iter().flatten().find(|(rule, _)| related(*rule, r.rule));
        let p = match by_command {
            Some((rule, _)) => part(r, &set.rules[*rule], MatchedVia::Command),
            None => part(r, &set.rules[r.rule], MatchedVia::Content),
        };
        push(&mut parts, p);
    }
    parts
}

fn part<'a>(r: &Region, rule: &'a Rule, via: MatchedVia) -> Part<'a> {
    Part { start: r.start, line: r.line, rule, via, evidence: Some(r.evidence.clone()) }
}

/// Add a part: the first starts at the top of the output; one with the rule of the part before
/// it continues that part.
fn push<'a>(parts: &mut Vec<Part<'a>>, mut p: Part<'a>) {
    match parts.last() {
        None => {
            p.start = 0;
            p.line = 0;
        }
        Some(last) if last.rule.id == p.rule.id => return,
        Some(_) => {}
    }
    parts.push(p);
}
