//! The scrubber over every real capture in `../shared/fixtures` (SPEC §8: false positives on
//! ordinary code are bugs). Every string value of every JSON document (and every text file) is
//! scrubbed as a sink's text would be, and every object key is checked as `scrub_json` checks
//! it; the redactions it makes must be exactly the ones listed here, each with why it is right.
//! A new redaction fails the test with its place and text: either a rule now matches ordinary
//! text (fix the rule) or it found a secret (add it here, saying so).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolstream_actors::present::scrub::Scrubber;

/// The text redactions: (fixture file, what changed: `…before{-old-}{+new+}after…`).
const EXPECTED_TEXT: &[(&str, &str)] = &[
    // A test harness's marker assigned to a variable named TOKEN: an assignment whose name says
    // secret (SPEC §8 rule 5), and nothing tells its value from a real token.
    (
        "pi-cursor-sdk/nathannli/cursor-local-compaction-boundary-2026-07-08.report.json",
        "…TOKEN={-COMPACT_BOUNDARY_1783484227852-}{+[redacted]+}…",
    ),
];

/// Object keys whose values `scrub_json` replaces (the first fixture holding each). Every one ends
/// with a name SPEC §8 lists (`session`, `token`, `session_id`); the scrubber before this change
/// replaced the same keys.
const EXPECTED_KEYS: &[(&str, &str)] = &[
    ("afterCompactSession", "pi-cursor-sdk/nathannli/cursor-local-compaction-boundary-2026-07-08.report.json"),
    (
        "afterPostCompactPromptSession",
        "pi-cursor-sdk/nathannli/cursor-local-compaction-boundary-2026-07-08.report.json",
    ),
    (
        "afterPostCompactResumeSession",
        "pi-cursor-sdk/nathannli/cursor-local-compaction-boundary-2026-07-08.report.json",
    ),
    ("beforeCompactSession", "pi-cursor-sdk/nathannli/cursor-local-compaction-boundary-2026-07-08.report.json"),
    // MCP's `_meta.progressToken`.
    ("progressToken", "cursor-hooks/agent-bundle__cursor-3.18.25.ndjson"),
    ("session", "cursor-hooks/agent-bundle__cursor-3.18.25.ndjson"),
    ("sessionId", "cursor-hooks/agent-bundle__cursor-3.18.25.ndjson"),
    ("session_id", "cursor-cli/agentsserver__captured-lines__NOT-contiguous.jsonl"),
    ("token", "pi-cursor-sdk/nathannli/cursor-local-compaction-boundary-2026-07-08.report.json"),
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// `…before{-old-}{+new+}after…` with up to 24 characters of context on each side.
fn change(old: &str, new: &str) -> String {
    let prefix = old.chars().zip(new.chars()).take_while(|(a, b)| a == b).count();
    let old_rest: Vec<char> = old.chars().skip(prefix).collect();
    let new_rest: Vec<char> = new.chars().skip(prefix).collect();
    let suffix = old_rest.iter().rev().zip(new_rest.iter().rev()).take_while(|(a, b)| a == b).count();
    let before: String = old.chars().take(prefix).collect::<Vec<_>>().iter().rev().take(24).rev().collect();
    let removed: String = old_rest[..old_rest.len() - suffix].iter().collect();
    let added: String = new_rest[..new_rest.len() - suffix].iter().collect();
    let after: String = old_rest[old_rest.len() - suffix..].iter().take(24).collect();
    format!("…{before}{{-{removed}-}}{{+{added}+}}{after}…").replace('\n', "⏎")
}

fn walk(v: &Value, sc: &Scrubber, file: &str, text: &mut Vec<(String, String)>, keys: &mut BTreeMap<String, String>) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(new) = sc.scrub(s) {
                text.extend(changes(s, &new).into_iter().map(|c| (file.to_owned(), c)));
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, sc, file, text, keys)),
        Value::Object(map) => {
            for (k, item) in map {
                let mut probe = serde_json::json!({ k.as_str(): "x" });
                sc.scrub_json(&mut probe);
                if probe[k.as_str()] != "x" {
                    keys.entry(k.clone()).or_insert_with(|| file.to_owned());
                }
                walk(item, sc, file, text, keys);
            }
        }
        _ => {}
    }
}

/// The changes line by line (a multi-line redaction, a private key, is one change).
fn changes(old: &str, new: &str) -> Vec<String> {
    let (o, n): (Vec<&str>, Vec<&str>) = (old.split('\n').collect(), new.split('\n').collect());
    if o.len() != n.len() {
        return vec![change(old, new)];
    }
    o.iter().zip(&n).filter(|(a, b)| a != b).map(|(a, b)| change(a, b)).collect()
}

#[test]
fn the_scrubber_on_every_real_capture_redacts_only_what_is_listed() {
    let Some(root) = toolstream_testkit::fixture("") else { return };
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    let sc = Scrubber::default();
    let mut text = Vec::new();
    let mut keys = BTreeMap::new();
    let mut strings = 0usize;
    for path in &all {
        let rel = path.strip_prefix(&root).unwrap_or(path).display().to_string();
        let Ok(content) = std::fs::read_to_string(path) else { continue };
        let docs: Vec<Value> = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => serde_json::from_str(&content).into_iter().collect(),
            Some("jsonl" | "ndjson") => content.lines().filter_map(|l| serde_json::from_str(l).ok()).collect(),
            _ => vec![Value::String(content)],
        };
        for doc in &docs {
            strings += count_strings(doc);
            walk(doc, &sc, &rel, &mut text, &mut keys);
        }
    }
    assert!(strings > 1000 || all.is_empty(), "only {strings} strings read");
    let got_text: Vec<(&str, &str)> = text.iter().map(|(f, c)| (f.as_str(), c.as_str())).collect();
    let got_keys: Vec<(&str, &str)> = keys.iter().map(|(k, f)| (k.as_str(), f.as_str())).collect();
    eprintln!("{} files, {strings} strings; text redactions:", all.len());
    for (f, c) in &got_text {
        eprintln!("    ({f:?}, {c:?}),");
    }
    eprintln!("secret keys:");
    for (k, f) in &got_keys {
        eprintln!("    ({k:?}, {f:?}),");
    }
    assert_eq!(got_text, EXPECTED_TEXT);
    assert_eq!(got_keys, EXPECTED_KEYS);
}

fn count_strings(v: &Value) -> usize {
    match v {
        Value::String(_) => 1,
        Value::Array(items) => items.iter().map(count_strings).sum(),
        Value::Object(map) => map.values().map(count_strings).sum(),
        _ => 0,
    }
}
