//! Delivery of spooled hook events: read every spool in time order, decode it as one hook log,
//! and hand each sink the closed turns it has not taken yet, through the normal pipeline.
//!
//! A turn is ready once it closed (`stop`, `sessionEnd`, `subagentStop`, or the next turn of its
//! conversation), or once it has been idle for `hook_turn_idle_ms` (then as incomplete). Sinks
//! take turns in one of two ways:
//! - **appending** sinks (OTLP) get each ready turn once; a subagent's turns wait until no turn
//!   of their root conversation is open, so that they go in one delivery with the turn whose
//!   task call they nest under (one trace);
//! - **whole-conversation** sinks (`pi-sessions`) are written the whole conversation again (its
//!   ready turns, subagents nested) whenever one of its turns is new to them and none is still
//!   open: the session is written to a staging folder, then put in place — over the file of the
//!   previous delivery only when that file is still exactly what toolstream wrote (a session the
//!   user continued in pi is left alone, and the hook log says so).
//!
//! A sink's turns are marked delivered only when it took every event and lost nothing (no
//! error, no drop, no loss reported at its close): otherwise the next delivery tries again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toolstream_schemas::{Input, SourcePos};
use toolstream_sinks::pi_session::dir::SessionsRoot;

use super::spool::{self, Record};
use super::HookPaths;
use crate::decode::hooks::{HookDecoder, Tagged, TurnEnd, TurnKey};
use crate::pipeline::{Pipeline, PipelineOptions};
use crate::sinks::{OtelContent, SinkContext, SinkKind, SinkSpec, WhenFull};

/// How a sink takes turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// Each turn once (OTLP).
    Turns,
    /// The whole conversation, again (pi sessions).
    Conversations,
}

/// How a sink takes hook turns, or why it cannot be fed from hooks.
pub fn takes(spec: &SinkSpec) -> Result<Takes, String> {
    match spec.kind {
        SinkKind::Otlp | SinkKind::OtlpGrpc => Ok(Takes::Turns),
        SinkKind::PiSessions => Ok(Takes::Conversations),
        SinkKind::Cards | SinkKind::Jsonl | SinkKind::PiSession | SinkKind::CursorDb | SinkKind::OpenAiSse => {
            Err(format!(
            "`{}` cannot be fed live from hooks (use otlp, otlp-grpc or pi-sessions; any sink can replay the spool: \
             `toolstream replay <spool file> --sink …`)",
            spec.kind.name()
        ))
        }
    }
}

/// What was delivered of one conversation.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    /// Per turn (generation id): the sinks (labels) that took it.
    #[serde(default)]
    pub turns: BTreeMap<String, BTreeSet<String>>,
    /// pi session files written for this conversation, and the sha256 of what was written.
    #[serde(default)]
    pub pi_sessions: BTreeMap<String, String>,
}

impl Ledger {
    pub fn load(paths: &HookPaths, conversation: &str) -> Ledger {
        std::fs::read_to_string(paths.delivered_file(conversation))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, paths: &HookPaths, conversation: &str) -> io::Result<()> {
        crate::state_dir::private_dir(&paths.delivered_dir())?;
        let text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        spool::write_private(&paths.delivered_file(conversation), &text)
    }
}

/// Where a turn stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnState {
    /// Closed by its own events.
    Closed,
    /// No `stop` yet, idle past the timeout: delivered as incomplete.
    Idle,
    /// Still going.
    Open,
}

impl TurnState {
    pub fn ready(self) -> bool {
        self != TurnState::Open
    }
}

/// One turn found in the spools.
#[derive(Clone, Debug, Serialize)]
pub struct Turn {
    pub conversation: String,
    pub generation: String,
    /// The conversation at the top of its subagent nesting.
    pub root: String,
    pub state: TurnState,
    pub last_ms: u64,
    /// Sinks (labels) that took it.
    pub delivered: BTreeSet<String>,
}

/// The spools, decoded.
#[derive(Debug, Default)]
pub struct Spooled {
    /// The spooled lines, in time order (decoded again for each sink: decoding is deterministic).
    lines: Vec<Record>,
    pub turns: BTreeMap<TurnKey, Turn>,
    /// Records and bytes per conversation (file).
    pub records: BTreeMap<String, (u64, u64)>,
    /// Lines that could not be decoded.
    pub bad_lines: Vec<String>,
}

/// Read and decode every spool; turns idle for `idle_ms` before `now_ms` are ready.
pub fn read_spools(paths: &HookPaths, now_ms: u64, idle_ms: u64) -> io::Result<Spooled> {
    let files = spool::spool_files(paths)?;
    let mut out = Spooled::default();
    for f in &files {
        out.records.insert(f.conversation.clone(), (0, f.bytes));
    }
    out.lines = spool::read_records(&files)?;
    for r in &out.lines {
        if let Some(n) = out.records.get_mut(&r.conversation) {
            n.0 += 1;
        }
    }
    let (events, ends) = decode(&out.lines, Some(&mut out.bad_lines));
    // Roots of nested conversations, from the runs' parent links.
    let mut parent: HashMap<Arc<str>, Arc<str>> = HashMap::new();
    let mut last: HashMap<TurnKey, u64> = HashMap::new();
    for t in &events {
        let Some(key) = &t.turn else { continue };
        if let Input::RunStarted(start) = &t.event.kind {
            if let Some(p) = start.context.as_ref().and_then(|c| c.parent.as_ref()) {
                parent.insert(key.conversation.clone(), p.session.clone());
            }
        }
        let at = t.event.at_ms.unwrap_or(0);
        let e = last.entry(key.clone()).or_default();
        *e = (*e).max(at);
    }
    let root_of = |c: &Arc<str>| {
        let mut r = c.clone();
        for _ in 0..64 {
            match parent.get(&r) {
                Some(p) if p != &r => r = p.clone(),
                _ => break,
            }
        }
        r
    };
    let mut ledgers: HashMap<String, Ledger> = HashMap::new();
    for (key, last_ms) in last {
        let state = match ends.get(&key) {
            Some(TurnEnd::Reported) => TurnState::Closed,
            Some(TurnEnd::EndOfInput) if now_ms.saturating_sub(last_ms) >= idle_ms => TurnState::Idle,
            _ => TurnState::Open,
        };
        let conversation = key.conversation.to_string();
        let ledger = ledgers.entry(conversation.clone()).or_insert_with(|| Ledger::load(paths, &conversation));
        let delivered = ledger.turns.get(&*key.generation).cloned().unwrap_or_default();
        let turn = Turn {
            conversation,
            generation: key.generation.to_string(),
            root: root_of(&key.conversation).to_string(),
            state,
            last_ms,
            delivered,
        };
        out.turns.insert(key, turn);
    }
    Ok(out)
}

/// Decode spooled lines as one hook log (closing what is open at the end); how each turn ended.
fn decode(lines: &[Record], mut bad: Option<&mut Vec<String>>) -> (Vec<Tagged>, HashMap<TurnKey, TurnEnd>) {
    let mut decoder = HookDecoder::default();
    let mut events = Vec::new();
    for (i, r) in lines.iter().enumerate() {
        let pos = SourcePos { line: i as u64 + 1, offset: 0 };
        if let Err(e) = decoder.decode_line(&r.text, pos, &mut events) {
            if let Some(bad) = bad.as_deref_mut() {
                bad.push(format!("{}:{}: {e}", r.conversation, r.line));
            }
        }
    }
    decoder.finish(&mut events);
    (events, decoder.take_ends().into_iter().collect())
}

/// The turns `sink` is to be given now.
pub fn due(spooled: &Spooled, sink: &SinkSpec) -> Result<BTreeSet<TurnKey>, String> {
    let label = sink.label();
    let new = |t: &Turn| t.state.ready() && !t.delivered.contains(&label);
    // Roots with a turn still going: their subagents' turns belong to that turn.
    let busy: BTreeSet<&str> = spooled.turns.values().filter(|t| !t.state.ready()).map(|t| t.root.as_str()).collect();
    Ok(match takes(sink)? {
        Takes::Turns => spooled
            .turns
            .iter()
            .filter(|(_, t)| new(t) && (t.root == t.conversation || !busy.contains(t.root.as_str())))
            .map(|(k, _)| k.clone())
            .collect(),
        Takes::Conversations => {
            // A conversation with a turn still going waits.
            let roots: BTreeSet<&str> = spooled
                .turns
                .values()
                .filter(|t| new(t) && !busy.contains(t.root.as_str()))
                .map(|t| t.root.as_str())
                .collect();
            spooled
                .turns
                .iter()
                .filter(|(_, t)| t.state.ready() && roots.contains(t.root.as_str()))
                .map(|(k, _)| k.clone())
                .collect()
        }
    })
}

/// What one delivery did for one sink.
#[derive(Debug, Default, Serialize)]
pub struct SinkOutcome {
    pub sink: String,
    pub turns: usize,
    pub delivered: bool,
    pub problem: Option<String>,
}

/// Settings of a delivery.
#[derive(Clone, Debug)]
pub struct DeliverSettings {
    pub sinks: Vec<SinkSpec>,
    pub now_ms: u64,
    pub idle_ms: u64,
    pub pipeline: PipelineOptions,
    pub trace_limit_bytes: u64,
    pub otel: OtelContent,
}

/// One delivery pass: every sink gets what is due to it.
pub fn deliver(paths: &HookPaths, settings: &DeliverSettings) -> io::Result<Vec<SinkOutcome>> {
    let spooled = read_spools(paths, settings.now_ms, settings.idle_ms)?;
    for bad in &spooled.bad_lines {
        spool::log(paths, "delivery", &format!("a spool line could not be decoded: {bad}"));
    }
    let mut outcomes = Vec::new();
    let mut ledgers: BTreeMap<String, Ledger> = BTreeMap::new();
    for sink in &settings.sinks {
        let turns = match due(&spooled, sink) {
            Ok(t) => t,
            Err(e) => {
                outcomes.push(SinkOutcome { sink: sink.label(), problem: Some(e), ..SinkOutcome::default() });
                continue;
            }
        };
        if turns.is_empty() {
            continue;
        }
        let outcome = match takes(sink) {
            Ok(Takes::Conversations) => deliver_sessions(paths, settings, sink, &spooled, &turns, &mut ledgers),
            _ => deliver_turns(settings, sink, &spooled, &turns),
        };
        if outcome.delivered {
            for key in &turns {
                let conv = key.conversation.to_string();
                let ledger = ledgers.entry(conv.clone()).or_insert_with(|| Ledger::load(paths, &conv));
                ledger.turns.entry(key.generation.to_string()).or_default().insert(sink.label());
            }
        } else if let Some(p) = &outcome.problem {
            spool::log(paths, "delivery", &format!("{}: {p}; {} turn(s) stay pending", outcome.sink, turns.len()));
        }
        outcomes.push(outcome);
    }
    for (conv, ledger) in &ledgers {
        ledger.save(paths, conv)?;
    }
    Ok(outcomes)
}

/// The events of `turns`, in order.
fn events_of(spooled: &Spooled, turns: &BTreeSet<TurnKey>) -> Vec<toolstream_schemas::InputEvent> {
    let (events, _) = decode(&spooled.lines, None);
    events.into_iter().filter(|t| t.turn.as_ref().is_some_and(|k| turns.contains(k))).map(|t| t.event).collect()
}

/// The events of `turns`, in order, grouped by the root conversation of their turn: the spool is
/// decoded once for all of them (once per conversation made a delivery quadratic in the spool).
fn events_by_root(
    spooled: &Spooled,
    turns: &BTreeSet<TurnKey>,
) -> BTreeMap<String, Vec<toolstream_schemas::InputEvent>> {
    let (events, _) = decode(&spooled.lines, None);
    let mut by_root: BTreeMap<String, Vec<toolstream_schemas::InputEvent>> = BTreeMap::new();
    for t in events {
        let Some(key) = t.turn.as_ref().filter(|k| turns.contains(*k)) else { continue };
        if let Some(turn) = spooled.turns.get(key) {
            by_root.entry(turn.root.clone()).or_default().push(t.event);
        }
    }
    by_root
}

/// Run `events` through a pipeline into the sink `plan`; `None` when it took everything and lost
/// nothing, else what went wrong.
fn run(settings: &DeliverSettings, plan_for: &SinkSpec, events: Vec<toolstream_schemas::InputEvent>) -> Option<String> {
    let ctx = SinkContext {
        overwrite_sessions: true,
        otel: settings.otel.clone(),
        ..SinkContext::headless(settings.trace_limit_bytes)
    };
    // Nothing may be dropped on the way: the ledger says what the sink took.
    let plan = plan_for.plan(&ctx, Some(WhenFull::Block));
    let mut pipeline = match Pipeline::with_sinks(settings.pipeline.clone(), vec![plan]) {
        Ok(p) => p,
        Err(e) => return Some(e.to_string()),
    };
    let mut errors = Vec::new();
    let mut report = |e: &crate::decode::DecodeError| errors.push(e.to_string());
    let fed = pipeline.run_events("cursor hook spool", "cursor-hooks", events.into_iter().map(Ok), &mut report);
    let stats = pipeline.finish();
    if let Err(e) = fed {
        return Some(e.to_string());
    }
    let Some(s) = stats.sinks.first() else { return Some("the sink did not start".into()) };
    if let Some(e) = &s.error {
        return Some(e.clone());
    }
    if let Some(l) = &s.lost {
        return Some(format!("{} {} lost: {}", l.count, l.unit, l.why));
    }
    if s.dropped > 0 || s.stuck {
        return Some(format!("{} event(s) not written", s.dropped));
    }
    stats.engine_errors.first().cloned()
}

fn deliver_turns(
    settings: &DeliverSettings,
    sink: &SinkSpec,
    spooled: &Spooled,
    turns: &BTreeSet<TurnKey>,
) -> SinkOutcome {
    let problem = run(settings, sink, events_of(spooled, turns));
    SinkOutcome { sink: sink.label(), turns: turns.len(), delivered: problem.is_none(), problem }
}

/// pi sessions: one pipeline per conversation into a staging folder, then each session put in
/// place.
fn deliver_sessions(
    paths: &HookPaths,
    settings: &DeliverSettings,
    sink: &SinkSpec,
    spooled: &Spooled,
    turns: &BTreeSet<TurnKey>,
    ledgers: &mut BTreeMap<String, Ledger>,
) -> SinkOutcome {
    let mut outcome = SinkOutcome { sink: sink.label(), turns: turns.len(), delivered: true, problem: None };
    for (root, events) in events_by_root(spooled, turns) {
        let staging = paths.staging_dir().join(format!("{}-{}", super::file_name(&root), std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        let result = crate::state_dir::private_dir(&staging).map_err(|e| e.to_string()).and_then(|()| {
            let staged = SinkSpec::new(SinkKind::PiSessions, Some(staging.clone()));
            match run(settings, &staged, events) {
                Some(p) => Err(p),
                None => {
                    let ledger = ledgers.entry(root.clone()).or_insert_with(|| Ledger::load(paths, &root));
                    place_sessions(&staging, sink.path.as_deref(), ledger)
                }
            }
        });
        let _ = std::fs::remove_dir_all(&staging);
        if let Err(p) = result {
            outcome.delivered = false;
            outcome.problem = Some(p);
        }
    }
    outcome
}

/// Put every staged pi session in place: where pi keeps the sessions of its working directory
/// (or `dir`), never over a file toolstream did not write exactly as it is now.
fn place_sessions(staging: &Path, dir: Option<&Path>, ledger: &mut Ledger) -> Result<(), String> {
    let root = match dir {
        Some(d) => SessionsRoot::Flat(d.to_path_buf()),
        None => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            SessionsRoot::from_pi_env(|k| std::env::var(k).ok(), home.as_deref()).map_err(|e| e.to_string())?
        }
    };
    let entries = std::fs::read_dir(staging).map_err(|e| e.to_string())?;
    for e in entries.filter_map(Result::ok) {
        let staged = e.path();
        if staged.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let bytes = std::fs::read(&staged).map_err(|e| e.to_string())?;
        let cwd = header_cwd(&bytes).unwrap_or_default();
        let folder = root.folder(&cwd);
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let target = folder.join(e.file_name());
        let key = target.display().to_string();
        if let Ok(existing) = std::fs::read(&target) {
            let ours = ledger.pi_sessions.get(&key).is_some_and(|sha| *sha == sha256(&existing));
            if !ours {
                return Err(format!(
                    "{} exists and is not the session toolstream wrote (continued in pi?): left as it is",
                    target.display()
                ));
            }
        }
        let tmp = folder.join(format!(".{}.toolstream-{}", e.file_name().to_string_lossy(), std::process::id()));
        std::fs::write(&tmp, &bytes).and_then(|()| std::fs::rename(&tmp, &target)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", target.display())
        })?;
        ledger.pi_sessions.insert(key, sha256(&bytes));
    }
    Ok(())
}

/// The `cwd` of a pi session file's header line.
fn header_cwd(bytes: &[u8]) -> Option<String> {
    let first = bytes.split(|b| *b == b'\n').next()?;
    let v: serde_json::Value = serde_json::from_slice(first).ok()?;
    v.get("cwd").and_then(serde_json::Value::as_str).map(str::to_owned)
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spool_of(events: &[serde_json::Value]) -> HookPaths {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let paths = HookPaths::new(std::env::temp_dir().join(format!("toolstream-deliver-{}-{n}", std::process::id())));
        for (i, e) in events.iter().enumerate() {
            spool::append(&paths, 1_000 + i as u64, &mut e.clone()).unwrap();
        }
        paths
    }

    fn p(event: &str, gen: &str) -> serde_json::Value {
        json!({"hook_event_name": event, "conversation_id": "c", "generation_id": gen, "prompt": "x", "status": "completed"})
    }

    fn gens(keys: &BTreeSet<TurnKey>) -> Vec<&str> {
        keys.iter().map(|k| &*k.generation).collect()
    }

    #[test]
    fn turns_are_due_per_sink_and_a_conversation_waits_for_its_open_turn() {
        let otlp: SinkSpec = "otlp=http://127.0.0.1:1".parse().unwrap();
        let pi: SinkSpec = "pi-sessions=/nowhere".parse().unwrap();
        let open = spool_of(&[p("beforeSubmitPrompt", "g1"), p("stop", "g1"), p("beforeSubmitPrompt", "g2")]);
        let s = read_spools(&open, 2_000, 60_000).unwrap();
        assert_eq!(s.turns.values().map(|t| t.state).collect::<Vec<_>>(), [TurnState::Closed, TurnState::Open]);
        assert_eq!(gens(&due(&s, &otlp).unwrap()), ["g1"], "each closed turn, at once");
        assert!(due(&s, &pi).unwrap().is_empty(), "the conversation is still in a turn");
        // Idle long enough, the open turn is due too, as incomplete.
        let later = read_spools(&open, 2_000 + 60_000, 60_000).unwrap();
        assert_eq!(gens(&due(&later, &pi).unwrap()), ["g1", "g2"]);

        let mut ledger = Ledger::default();
        ledger.turns.entry("g1".into()).or_default().extend([otlp.label(), pi.label()]);
        ledger.save(&open, "c").unwrap();
        let s = read_spools(&open, 2_000 + 60_000, 60_000).unwrap();
        assert_eq!(gens(&due(&s, &otlp).unwrap()), ["g2"], "what a sink took is not given again");
        assert_eq!(gens(&due(&s, &pi).unwrap()), ["g1", "g2"], "pi sessions are written whole");
        let cards: SinkSpec = "cards".parse().unwrap();
        assert!(due(&s, &cards).unwrap_err().contains("cannot be fed live"));
        let _ = std::fs::remove_dir_all(&open.root);
    }

    #[test]
    fn a_subagents_turn_goes_to_otlp_with_the_turn_it_nests_under() {
        let otlp: SinkSpec = "otlp=http://127.0.0.1:1".parse().unwrap();
        let task = json!({"hook_event_name": "preToolUse", "conversation_id": "c", "generation_id": "g1",
            "tool_name": "Task", "tool_use_id": "t1", "tool_input": {"description": "look"}});
        let start = json!({"hook_event_name": "subagentStart", "conversation_id": "c", "generation_id": "c",
            "subagent_id": "t1", "tool_call_id": "t1", "parent_conversation_id": "c", "task": "look"});
        let child = |event: &str| {
            json!({"hook_event_name": event, "conversation_id": "k", "generation_id": "s1",
            "tool_name": "Read", "tool_use_id": "r1", "tool_input": {"file_path": "a"}, "tool_output": "{}"})
        };
        let stop_sub = json!({"hook_event_name": "subagentStop", "conversation_id": "c", "generation_id": "c",
            "subagent_id": "t1", "tool_call_id": "t1", "status": "completed"});
        let events = [p("beforeSubmitPrompt", "g1"), task, start, child("preToolUse"), child("postToolUse"), stop_sub];
        let spool = spool_of(&events);
        let s = read_spools(&spool, 2_000, 60_000).unwrap();
        let sub = s.turns.values().find(|t| t.conversation == "k").unwrap();
        assert_eq!((sub.state, sub.root.as_str()), (TurnState::Closed, "c"), "the subagent's turn closed");
        assert!(due(&s, &otlp).unwrap().is_empty(), "it waits for the turn of its task call");
        spool::append(&spool, 2_000, &mut p("stop", "g1")).unwrap();
        let s = read_spools(&spool, 3_000, 60_000).unwrap();
        assert_eq!(gens(&due(&s, &otlp).unwrap()), ["g1", "s1"], "then both, in one delivery");
        let _ = std::fs::remove_dir_all(&spool.root);
    }
}
