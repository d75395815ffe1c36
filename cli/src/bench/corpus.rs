//! The recorded-corpus generator: builds a large Cursor CLI `stream-json` stream by replaying real
//! recorded runs many times, each time with a fresh session id, fresh call ids and shifted
//! timestamps, interleaving K concurrent sessions, up to a requested size. Deterministic for a
//! seed. Each template line is compiled once into literal pieces and slots, so generating is
//! splicing strings, not re-serializing JSON.

use std::io::{self, Write};
use std::path::Path;

use serde_json::Value;

/// A deterministic pseudo-random generator (SplitMix64): no dependency, same stream everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// What a slot in a compiled line stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Session,
    /// The n-th distinct call id of the run.
    Call(usize),
    /// A timestamp: the recorded value minus the run's first timestamp.
    Time(u64),
}

#[derive(Clone, Debug)]
struct CompiledLine {
    /// `pieces.len() == slots.len() + 1`.
    pieces: Vec<String>,
    slots: Vec<Slot>,
}

/// One recorded run, ready to be replayed with fresh ids.
#[derive(Clone, Debug)]
pub struct Template {
    name: String,
    lines: Vec<CompiledLine>,
    calls: usize,
    bytes: usize,
}

impl Template {
    /// Compile a recorded stream-json run. Returns `None` when it has no lines or no session id.
    pub fn compile(name: &str, text: &str) -> Option<Template> {
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let values: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if values.len() != lines.len() {
            return None;
        }
        let session = values.iter().find_map(|v| v.get("session_id")?.as_str().map(str::to_owned))?;
        let mut call_ids: Vec<String> = Vec::new();
        let mut base: Option<u64> = None;
        for v in &values {
            let ids = [v.get("call_id"), v.pointer("/tool_call/toolCallId")];
            for id in ids.into_iter().flatten().filter_map(Value::as_str) {
                if !call_ids.iter().any(|c| c == id) {
                    call_ids.push(id.to_owned());
                }
            }
            if let Some(t) = v.get("timestamp_ms").and_then(Value::as_u64) {
                base = Some(base.map_or(t, |b: u64| b.min(t)));
            }
        }
        let base = base.unwrap_or(0);
        // Longest needles first, so an id that contains another is replaced whole.
        let mut needles: Vec<(String, Slot)> = vec![(json_str(&session), Slot::Session)];
        for (i, id) in call_ids.iter().enumerate() {
            needles.push((json_str(id), Slot::Call(i)));
        }
        needles.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        let compiled = lines.iter().map(|l| compile_line(l, &needles, base)).collect();
        Some(Template { name: name.to_owned(), lines: compiled, calls: call_ids.len(), bytes: text.len() })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// `s` as a JSON string literal, quotes included.
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn compile_line(line: &str, needles: &[(String, Slot)], base: u64) -> CompiledLine {
    let mut pieces = Vec::new();
    let mut slots = Vec::new();
    let mut rest = line;
    let mut current = String::new();
    const TS: &str = "\"timestamp_ms\":";
    'scan: while !rest.is_empty() {
        for (needle, slot) in needles {
            if rest.starts_with(needle.as_str()) {
                pieces.push(std::mem::take(&mut current));
                slots.push(*slot);
                rest = &rest[needle.len()..];
                continue 'scan;
            }
        }
        if let Some(after) = rest.strip_prefix(TS) {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                let t: u64 = after[..digits].parse().unwrap_or(base);
                current.push_str(TS);
                pieces.push(std::mem::take(&mut current));
                slots.push(Slot::Time(t.saturating_sub(base)));
                rest = &after[digits..];
                continue 'scan;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            current.push(c);
        }
        rest = chars.as_str();
    }
    pieces.push(current);
    CompiledLine { pieces, slots }
}

/// A run being played in one of the K concurrent slots.
struct Playing {
    template: usize,
    next_line: usize,
    session: String,
    calls: Vec<String>,
    start_ms: u64,
}

/// Generator settings.
#[derive(Clone, Debug)]
pub struct CorpusSpec {
    /// Stop once at least this many bytes were written (whole lines only).
    pub target_bytes: u64,
    /// Concurrent sessions interleaved.
    pub concurrency: usize,
    pub seed: u64,
}

/// What was generated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CorpusStats {
    pub bytes: u64,
    pub lines: u64,
    pub runs: u64,
    pub calls: u64,
}

/// Generate a corpus from `templates` into `out`.
pub fn generate(templates: &[Template], spec: &CorpusSpec, out: &mut dyn Write) -> io::Result<CorpusStats> {
    let mut stats = CorpusStats::default();
    if templates.is_empty() {
        return Ok(stats);
    }
    let mut rng = Rng::new(spec.seed);
    let mut clock: u64 = 1_790_000_000_000;
    let mut slots: Vec<Playing> = Vec::new();
    let mut line = String::with_capacity(64 * 1024);
    let k = spec.concurrency.max(1);
    while stats.bytes < spec.target_bytes {
        while slots.len() < k {
            slots.push(new_run(templates, &mut rng, clock, &mut stats));
        }
        let i = rng.below(slots.len() as u64) as usize;
        let p = &mut slots[i];
        let t = &templates[p.template];
        let compiled = &t.lines[p.next_line];
        line.clear();
        for (n, piece) in compiled.pieces.iter().enumerate() {
            line.push_str(piece);
            match compiled.slots.get(n) {
                Some(Slot::Session) => line.push_str(&p.session),
                Some(Slot::Call(c)) => line.push_str(&p.calls[*c]),
                Some(Slot::Time(dt)) => {
                    let ts = p.start_ms + dt;
                    clock = clock.max(ts);
                    line.push_str(&ts.to_string());
                }
                None => {}
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
        stats.bytes += line.len() as u64;
        stats.lines += 1;
        p.next_line += 1;
        if p.next_line == t.lines.len() {
            slots.swap_remove(i);
        }
    }
    out.flush()?;
    Ok(stats)
}

fn new_run(templates: &[Template], rng: &mut Rng, clock: u64, stats: &mut CorpusStats) -> Playing {
    let template = rng.below(templates.len() as u64) as usize;
    let t = &templates[template];
    let id = |rng: &mut Rng| {
        let (a, b) = (rng.next_u64(), rng.next_u64());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            (b >> 48) & 0xfff,
            b & 0xffff_ffff_ffff
        )
    };
    let session = json_str(&id(rng));
    let calls = (0..t.calls).map(|_| json_str(&format!("call-{}", id(rng)))).collect();
    stats.runs += 1;
    stats.calls += t.calls as u64;
    Playing { template, next_line: 0, session, calls, start_ms: clock + rng.below(50) }
}

/// Compile every `.jsonl` run in `dir` that is one contiguous run.
pub fn templates_from_dir(dir: &Path) -> io::Result<Vec<Template>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.contains("NOT-contiguous") {
            continue;
        }
        let text = std::fs::read_to_string(&f)?;
        // Only complete Cursor CLI stream-json runs: lines with a `type`, ending with `result`.
        // A truncated capture replayed thousands of times would be thousands of runs that never
        // end, held open to the end of input: not what a fleet of agents sends.
        let is_cli = text.lines().next().is_some_and(|l| l.contains("\"type\""));
        let complete =
            text.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.contains("\"type\":\"result\""));
        if is_cli && complete {
            out.extend(Template::compile(&name, &text));
        }
    }
    Ok(out)
}

/// Bytes of recorded input the templates hold.
pub fn template_bytes(templates: &[Template]) -> usize {
    templates.iter().map(|t| t.bytes).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"S-1","model":"Auto"}
{"type":"tool_call","subtype":"started","call_id":"c\n1","tool_call":{"shellToolCall":{"args":{"command":"ls","toolCallId":"c\n1"}},"toolCallId":"c\n1"},"session_id":"S-1","timestamp_ms":1000}
{"type":"tool_call","subtype":"completed","call_id":"c\n1","tool_call":{"shellToolCall":{"result":{"success":{"exitCode":0}}}},"session_id":"S-1","timestamp_ms":1250}
{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"S-1"}
"#;

    fn corpus(seed: u64, bytes: u64, k: usize) -> (String, CorpusStats) {
        let t = Template::compile("t", RUN).unwrap();
        let mut out = Vec::new();
        let stats = generate(&[t], &CorpusSpec { target_bytes: bytes, concurrency: k, seed }, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), stats)
    }

    #[test]
    fn ids_are_fresh_and_consistent_within_a_run() {
        let (text, stats) = corpus(7, 20_000, 4);
        assert!(stats.bytes >= 20_000 && stats.runs > 4);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(!text.contains("S-1") && !text.contains("c\\n1"));
        // Every started call of a finished run completes in the same session with the same id
        // (the corpus stops at the requested size, so the last runs may be cut short).
        let finished: Vec<&Value> = lines.iter().filter(|v| v["type"] == "result").map(|v| &v["session_id"]).collect();
        assert!(finished.len() > 4);
        for v in lines.iter().filter(|v| v["subtype"] == "started" && finished.contains(&&v["session_id"])) {
            let (id, s) = (v["call_id"].as_str().unwrap(), v["session_id"].as_str().unwrap());
            assert_eq!(v["tool_call"]["toolCallId"], id);
            assert!(lines.iter().any(|w| w["subtype"] == "completed" && w["call_id"] == id && w["session_id"] == s));
        }
        // Times keep the recorded gap within a run.
        let started = lines.iter().find(|v| v["subtype"] == "started").unwrap();
        let done = lines.iter().find(|v| v["subtype"] == "completed" && v["call_id"] == started["call_id"]).unwrap();
        assert_eq!(done["timestamp_ms"].as_u64().unwrap() - started["timestamp_ms"].as_u64().unwrap(), 250);
    }

    #[test]
    fn generation_is_deterministic_for_a_seed() {
        assert_eq!(corpus(1, 3_000, 8).0, corpus(1, 3_000, 8).0);
        assert_ne!(corpus(1, 3_000, 8).0, corpus(2, 3_000, 8).0);
    }

    #[test]
    fn sessions_interleave() {
        let (text, _) = corpus(3, 4_000, 8);
        let sessions: Vec<String> = text
            .lines()
            .take(16)
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["session_id"].as_str().unwrap().to_owned())
            .collect();
        let distinct: std::collections::HashSet<_> = sessions.iter().collect();
        assert!(distinct.len() > 2, "{sessions:?}");
    }
}
