//! Recognising output by its content (SPEC §10), for commands that do not say what printed it
//! (`cat log`, a script, `make`, `npm run x`, an unknown binary) and for splitting the output of
//! several commands. Every rule may list `signatures` (lines only its tool prints, such as
//! `test result: FAILED. …`) and `starts` (lines that begin its output, such as `running 12
//! tests`); all of them are gathered into two regex sets when the rules load. Signatures are
//! looked for among the first and last lines only; starts on every line, in one pass.

use super::pipeline::clean_line;
use super::rules::RuleSet;
use toolstream_schemas::display::truncate_chars;

/// How many lines from each end of the output are searched for signatures.
pub const WINDOW_LINES: usize = 40;
/// The longest line quoted as evidence (chars).
const EVIDENCE_CHARS: usize = 100;

/// Where one tool's output begins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Byte offset of its first line.
    pub start: usize,
    /// Its first line's number (0-based).
    pub line: usize,
    /// The index of its rule in [`RuleSet::rules`].
    pub rule: usize,
    /// The line that began it.
    pub evidence: String,
}

/// The regions of `output`, by the start lines it holds: a start line of another rule begins a
/// new region, unless one of the two rules absorbs the other (the region is then the
/// absorber's). Empty when no line is a start.
pub fn regions(set: &RuleSet, output: &str) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::new();
    let mut at = 0;
    for (i, raw) in output.split_inclusive('\n').enumerate() {
        let start = at;
        at += raw.len();
        let line = clean_line(raw.strip_suffix('\n').unwrap_or(raw));
        if !set.starts.is_match(&line) {
            continue;
        }
        let Some(rule) = set.starts.matches(&line).iter().next().map(|p| set.start_rules[p]) else { continue };
        match out.last_mut() {
            Some(cur) if cur.rule == rule || set.rules[cur.rule].absorbs.contains(&rule) => {}
            Some(cur) if set.rules[rule].absorbs.contains(&cur.rule) => {
                cur.rule = rule;
                cur.evidence = evidence(&line);
            }
            _ => out.push(Region { start, line: i, rule, evidence: evidence(&line) }),
        }
    }
    out
}

/// The rule the first and last lines of `output` point to, with the first line that did: the
/// rule with the most signature hits (the earlier rule on a tie; a rule that absorbs the winner
/// and was hit too wins instead).
pub fn recognise(set: &RuleSet, output: &str) -> Option<(usize, String)> {
    let mut hits = vec![0usize; set.rules.len()];
    let mut first_hit: Vec<Option<String>> = vec![None; set.rules.len()];
    let mut look = |raw: &str| {
        let line = clean_line(raw);
        for p in set.signatures.matches(&line).iter() {
            let rule = set.signature_rules[p];
            hits[rule] += 1;
            first_hit[rule].get_or_insert_with(|| evidence(&line));
        }
    };
    let mut head_end = 0;
    for raw in output.split_inclusive('\n').take(WINDOW_LINES) {
        head_end += raw.len();
        look(raw.strip_suffix('\n').unwrap_or(raw));
    }
    let tail = output.get(head_end..).unwrap_or_default().trim_end_matches('\n');
    if !tail.is_empty() {
        for raw in tail.rsplit('\n').take(WINDOW_LINES) {
            look(raw);
        }
    }
    let best = (0..hits.len()).filter(|&r| hits[r] > 0).max_by(|&a, &b| hits[a].cmp(&hits[b]).then(b.cmp(&a)))?;
    let best = (0..hits.len()).find(|&r| hits[r] > 0 && set.rules[r].absorbs.contains(&best)).unwrap_or(best);
    first_hit[best].take().map(|e| (best, e))
}

fn evidence(line: &str) -> String {
    truncate_chars(line.trim(), EVIDENCE_CHARS).into_owned()
}
