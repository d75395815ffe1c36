//! The pi session-file sink (SPEC §9.2): the runs it receives, written as one pi session in pi's
//! v3 JSONL format, exactly as pi's `SessionManager` writes it (`@mariozechner/pi-coding-agent`
//! 0.73 `dist/core/session-manager.js`, `docs/session-format.md`):
//!
//! ```text
//! {"type":"session","version":3,"id":<uuid v7>,"timestamp":<ISO>,"cwd":<run cwd>}
//! {"type":"model_change","id":<8 hex>,"parentId":null,"timestamp":<ISO>,"provider":"cursor","modelId":<model>}
//! {"type":"message","id":…,"parentId":<previous id>,"timestamp":…,"message":{"role":"user","content":[{"type":"text","text":<prompt>}],"timestamp":<ms>}}
//! {"type":"message",…,"message":{"role":"assistant","content":[text|thinking|toolCall…],"api":"cursor-sdk","provider":"cursor","model":…,"usage":{…,"cost":{…}},"stopReason":…,"timestamp":<ms>}}
//! {"type":"message",…,"message":{"role":"toolResult","toolCallId":…,"toolName":…,"content":[{"type":"text","text":…}],"details":…,"isError":…,"timestamp":<ms>}}
//! ```
//!
//! Entries form one chain (each `parentId` is the previous entry, `null` for the first), so pi's
//! leaf is the last line and every line is on the conversation path. Messages are built by the
//! same assembler as the live events (`pi_events`): tool calls always end a `toolUse` message and
//! each is answered by one `toolResult` entry right after it. A `model_change` is written before
//! the first run and whenever a run's model differs from the previous one; each run with a prompt
//! starts with its user message.
//!
//! Deterministic: ids and times come from event time and hashes, never the wall clock — the
//! session id is a UUID v7 of the first run's first event time plus hash bits of that run, entry
//! ids are `sha256` prefixes; event times of 0 (a source line without a time) take the run's
//! first known time. Entry timestamps are when pi would have appended the entry (a message's end);
//! message timestamps are when it started, as pi-ai sets them.
//!
//! Atomic and bounded: each run's entries are appended, when the run closes, to a spool file in the
//! user's private temporary folder (`private_dir`; memory holds only the runs still open, time is
//! linear in the session's size). At a checkpoint — the end of a replay, or an explicit flush such
//! as Ctrl-C's — the spool and the open runs' complete messages are published
//! (`output_file::publish`): copied to a temporary file in the target's directory, synced and
//! renamed over the target. The target never holds half a session and is never written in place (a
//! pi process holding it open keeps reading the old file); an existing file is replaced only when
//! overwriting was asked for (`--force`); a FIFO or a device is written through. Like pi, nothing is
//! written before the first message has ended.

pub mod dir;
pub(crate) mod ids;
pub mod nest;

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use toolstream_schemas::{OutputEvent, RunId};

use crate::output_file::publish::Publisher;
use crate::pi_events::assemble::{Assembler, Step};
use crate::pi_events::wire::{AssistantMessage, ToolResultMessage, UserMessage, PROVIDER};
use crate::private_dir::TempFile;
use crate::{Sink, SinkError};
use ids::{iso, uuid_v7, EntryIds};

/// pi's current session format version.
pub const SESSION_VERSION: u32 = 3;

#[derive(Serialize)]
struct Header<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    version: u32,
    id: &'a str,
    timestamp: String,
    cwd: &'a str,
}

#[derive(Serialize)]
struct ModelChange<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    #[serde(rename = "parentId")]
    parent_id: Option<&'a str>,
    timestamp: String,
    provider: &'static str,
    #[serde(rename = "modelId")]
    model_id: &'a str,
}

#[derive(Serialize)]
struct MessageEntry<'a, M: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    #[serde(rename = "parentId")]
    parent_id: Option<&'a str>,
    timestamp: String,
    message: &'a M,
}

/// One complete message of a run, in order.
#[derive(Clone, Debug)]
enum Item {
    Assistant { at: u64, message: AssistantMessage },
    ToolResult { at: u64, message: ToolResultMessage },
}

/// What one run contributes to the session.
#[derive(Clone, Debug)]
struct RunLog {
    id: Arc<RunId>,
    cwd: Option<String>,
    model: String,
    prompt: Option<String>,
    opened_at: u64,
    /// The run's first event time that is not 0 (0 until one arrives).
    base: u64,
    items: Vec<Item>,
}

impl RunLog {
    fn new(id: Arc<RunId>, cwd: Option<String>, model: String, prompt: Option<String>, at: u64) -> Self {
        RunLog { id, cwd, model, prompt, opened_at: at, base: at, items: Vec::new() }
    }

    /// Event time, with 0 read as the run's first known time.
    fn time(&self, at: u64) -> u64 {
        if at == 0 {
            self.base
        } else {
            at
        }
    }

    fn seed(&self) -> String {
        format!("{}\n{}\n{}", self.id.label(), self.cwd.as_deref().unwrap_or(""), self.prompt.as_deref().unwrap_or(""))
    }
}

/// Where the entry chain stands.
#[derive(Clone, Debug)]
struct Chain {
    ids: EntryIds,
    last: Option<String>,
    model: Option<String>,
}

impl Chain {
    /// The next entry's id and its parent.
    fn link(&mut self) -> (String, Option<String>) {
        let id = self.ids.next_id();
        let parent = self.last.replace(id.clone());
        (id, parent)
    }
}

/// The session's identity, fixed by the first run.
#[derive(Debug)]
struct SessionHead {
    id: String,
    cwd: String,
    time: u64,
}

/// Where a session is published.
#[derive(Debug)]
enum Target {
    /// One file the user named (the single-file form).
    File(Publisher),
    /// Named and placed as pi names its own sessions, decided at the first publish (when the
    /// session's id, time and working directory are known): see [`dir`].
    Named(dir::Placement),
}

/// The most a closing run's render buffer keeps for the next run (bytes).
const RENDER_BUF_KEPT: usize = 1 << 20;

/// Writes one pi session file for every run it receives.
pub struct PiSessionSink {
    target: Target,
    /// The first Cursor chat seen, and whether another one was (single-file form: warned once).
    first_chat: Option<Arc<str>>,
    warned_chats: bool,
    fallback_cwd: String,
    asm: Assembler,
    steps: Vec<Step>,
    /// Open runs, in the order they opened.
    open: Vec<RunLog>,
    /// Those of them with no base time yet (at most a few at a time): an event with a time looks
    /// for its run among these only, and among none while there are none.
    unbased: Vec<Arc<RunId>>,
    head: Option<SessionHead>,
    chain: Option<Chain>,
    /// The header and the entries of the runs already closed, in close order.
    spool: Option<(io::BufWriter<File>, TempFile)>,
    /// Where a closing run's entries are rendered before they go to the spool.
    render_buf: Vec<u8>,
    /// Something changed since the target was last published.
    dirty: bool,
}

impl PiSessionSink {
    /// A sink writing the session to `path`. Nothing is written until a message has ended and the
    /// sink flushes (or a run closes); the directory must exist. A file at `path` is replaced only
    /// with `overwrite` (`--force`); what else may be there: `output_file`.
    pub fn create(path: &Path, overwrite: bool) -> io::Result<PiSessionSink> {
        let publisher = Publisher::open(path, overwrite)?;
        // Where the spool will go, made (and swept) now: a problem there stops the start.
        crate::private_dir::temp_dir()?;
        Ok(PiSessionSink::with_target(Target::File(publisher)))
    }

    /// A sink for one chat's session, named and placed as pi does ([`dir::Placement`]).
    fn named(placement: dir::Placement) -> PiSessionSink {
        PiSessionSink::with_target(Target::Named(placement))
    }

    fn with_target(target: Target) -> PiSessionSink {
        let fallback_cwd = std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
        PiSessionSink {
            target,
            first_chat: None,
            warned_chats: false,
            fallback_cwd,
            asm: Assembler::new(false),
            steps: Vec::new(),
            open: Vec::new(),
            unbased: Vec::new(),
            head: None,
            chain: None,
            spool: None,
            render_buf: Vec::new(),
            dirty: false,
        }
    }

    /// Whether no run is open (everything received so far is complete).
    pub(crate) fn idle(&self) -> bool {
        self.open.is_empty()
    }

    fn io(e: io::Error) -> SinkError {
        SinkError::Io { sink: "pi-session", source: e }
    }

    fn run_index(&mut self, run: &Arc<RunId>) -> usize {
        if let Some(i) = position_of(&self.open, run) {
            return i;
        }
        // Steps of a run whose opening was never seen: log it anyway.
        self.open_run(RunLog::new(run.clone(), None, crate::pi_events::wire::UNKNOWN_MODEL.into(), None, 0));
        self.open.len() - 1
    }

    fn open_run(&mut self, run: RunLog) {
        if run.base == 0 {
            self.unbased.push(run.id.clone());
        }
        self.open.push(run);
    }

    /// Handle one event; returns whether a run closed.
    fn event(&mut self, ev: &OutputEvent) -> io::Result<bool> {
        let mut steps = std::mem::take(&mut self.steps);
        steps.clear();
        self.asm.push(ev, &mut steps);
        let mut run_closed = false;
        for step in steps.drain(..) {
            match step {
                Step::RunOpened { cwd, model, prompt, at } => {
                    self.note_chat(&ev.run.session);
                    if let Some(i) = position_of(&self.open, &ev.run) {
                        // Reopened without a close (never expected): keep what it had.
                        self.close_run(i)?;
                    }
                    // Written with its first message, as pi does (nothing before an assistant turn).
                    self.open_run(RunLog::new(ev.run.clone(), cwd, model, prompt, at));
                }
                Step::End { message, at } => {
                    let i = self.run_index(&ev.run);
                    self.open[i].items.push(Item::Assistant { at, message });
                    self.dirty = true;
                }
                Step::ToolResults { results, at, .. } => {
                    let i = self.run_index(&ev.run);
                    let items = &mut self.open[i].items;
                    items.extend(results.into_iter().map(|message| Item::ToolResult { at, message }));
                    self.dirty = true;
                }
                Step::RunClosed { .. } => {
                    if let Some(i) = position_of(&self.open, &ev.run) {
                        self.close_run(i)?;
                    }
                    run_closed = true;
                }
                Step::Start(_) | Step::BlockStart { .. } | Step::BlockDelta { .. } | Step::BlockEnd { .. } => {}
                Step::ToolCall { .. } => {}
            }
        }
        self.steps = steps;
        if ev.at_ms > 0 && !self.unbased.is_empty() {
            // Runs that have their base are passed over without comparing ids.
            if let Some(k) = position_of_id(&self.unbased, &ev.run) {
                self.unbased.swap_remove(k);
                if let Some(i) = position_of(&self.open, &ev.run) {
                    self.open[i].base = ev.at_ms;
                }
            }
        }
        Ok(run_closed)
    }

    /// The single-file form says so (once) when runs of a second Cursor chat reach it: one pi
    /// session should be one conversation (SPEC §9.2).
    fn note_chat(&mut self, chat: &Arc<str>) {
        let first = self.first_chat.get_or_insert_with(|| chat.clone());
        if let (Target::File(publisher), false) = (&self.target, self.warned_chats) {
            if first != chat {
                self.warned_chats = true;
                tracing::warn!(
                    "pi-session: runs of several Cursor chats go into one session file ({}); `--sink pi-sessions=DIR` writes one session per chat",
                    publisher.path().display()
                );
            }
        }
    }

    /// Fix the session's identity from its first run.
    fn ensure_head(&mut self) {
        if self.head.is_some() {
            return;
        }
        let Some(first) = self.open.first() else { return };
        let time = first.time(first.opened_at);
        let id = uuid_v7(time, &first.seed());
        let cwd = first.cwd.clone().unwrap_or_else(|| self.fallback_cwd.clone());
        self.chain = Some(Chain { ids: EntryIds::new(&id), last: None, model: None });
        self.head = Some(SessionHead { id, cwd, time });
    }

    /// Append the run at `i` to the spool and drop it.
    fn close_run(&mut self, i: usize) -> io::Result<()> {
        self.ensure_head();
        let run = self.open.remove(i);
        if run.base == 0 {
            if let Some(k) = position_of_id(&self.unbased, &run.id) {
                self.unbased.swap_remove(k);
            }
        }
        // Rendered whole before it is written: a run's entries reach the spool together or not at
        // all. The buffer is kept for the next run (a run is kilobytes: a new one grew ten times),
        // unless one long run made it larger than runs usually need.
        let mut bytes = std::mem::take(&mut self.render_buf);
        bytes.clear();
        if let Some(chain) = self.chain.as_mut() {
            render_run(run, chain, &mut bytes)?;
        }
        self.spool()?.write_all(&bytes)?;
        if bytes.capacity() <= RENDER_BUF_KEPT {
            self.render_buf = bytes;
        }
        self.dirty = true;
        Ok(())
    }

    /// The spool, created with the session header on first use: a private temporary file (it
    /// holds the whole conversation), copied at each publish, never renamed.
    fn spool(&mut self) -> io::Result<&mut io::BufWriter<File>> {
        if self.spool.is_none() {
            self.ensure_head();
            let Some(head) = &self.head else {
                return Err(io::Error::other("no session to spool yet"));
            };
            let mut header = Vec::new();
            let h = Header {
                kind: "session",
                version: SESSION_VERSION,
                id: &head.id,
                timestamp: iso(head.time),
                cwd: &head.cwd,
            };
            line(&mut header, &h)?;
            let (guard, file) = TempFile::private("pi-session.spool")?;
            let mut w = io::BufWriter::with_capacity(1 << 20, file);
            w.write_all(&header)?;
            self.spool = Some((w, guard));
        }
        self.spool.as_mut().map(|(w, _)| w).ok_or_else(|| io::Error::other("spool unavailable"))
    }

    /// Publish the session: the spool plus the open runs' complete messages.
    fn publish(&mut self) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        // Open runs' complete messages, on a copy of the chain (they are rendered again later).
        let mut tail = Vec::new();
        if !self.open.is_empty() {
            self.ensure_head();
        }
        if let Some(chain) = &self.chain {
            let mut chain = chain.clone();
            for run in &self.open {
                render_run(run.clone(), &mut chain, &mut tail)?;
            }
        }
        if self.head.is_none() {
            return Ok(());
        }
        self.spool()?.flush()?;
        let publisher = match &mut self.target {
            Target::File(publisher) => publisher,
            Target::Named(placement) => {
                let Some(head) = &self.head else { return Ok(()) };
                match placement.resolve(&head.id, head.time, &head.cwd)? {
                    Some(publisher) => publisher,
                    None => {
                        // The session exists already and may not be overwritten: nothing to do.
                        self.dirty = false;
                        return Ok(());
                    }
                }
            }
        };
        let Some((_, spool)) = &self.spool else { return Ok(()) };
        publisher.publish(spool.path(), &tail)?;
        self.dirty = false;
        Ok(())
    }
}

/// Append a run's entries: a model change when its model differs, its prompt, its messages.
fn render_run(mut run: RunLog, chain: &mut Chain, out: &mut Vec<u8>) -> io::Result<()> {
    let opened = run.time(run.opened_at);
    if chain.model.as_deref() != Some(run.model.as_str()) {
        chain.model = Some(run.model.clone());
        let (id, parent) = chain.link();
        let entry = ModelChange {
            kind: "model_change",
            id: &id,
            parent_id: parent.as_deref(),
            timestamp: iso(opened),
            provider: PROVIDER,
            model_id: &run.model,
        };
        line(out, &entry)?;
    }
    if let Some(prompt) = run.prompt.as_deref() {
        message(out, chain, opened, &UserMessage::new(prompt, opened))?;
    }
    for item in std::mem::take(&mut run.items) {
        match item {
            Item::Assistant { at, message: mut m } => {
                m.timestamp = run.time(m.timestamp);
                message(out, chain, run.time(at), &m)?;
            }
            Item::ToolResult { at, message: mut m } => {
                m.timestamp = run.time(m.timestamp);
                message(out, chain, run.time(at), &m)?;
            }
        }
    }
    Ok(())
}

fn message<M: Serialize>(out: &mut Vec<u8>, chain: &mut Chain, at: u64, m: &M) -> io::Result<()> {
    let (id, parent) = chain.link();
    line(out, &MessageEntry { kind: "message", id: &id, parent_id: parent.as_deref(), timestamp: iso(at), message: m })
}

fn line<T: Serialize>(out: &mut Vec<u8>, value: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.push(b'\n');
    Ok(())
}

impl Sink for PiSessionSink {
    fn name(&self) -> &'static str {
        "pi-session"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.event(ev).map_err(Self::io)?;
        }
        Ok(())
    }

    /// Cheap: the spool's buffer goes to disk; the target is published at checkpoints.
    fn flush(&mut self) -> Result<(), SinkError> {
        if let Some((s, _)) = self.spool.as_mut() {
            s.flush().map_err(Self::io)?;
        }
        Ok(())
    }

    fn checkpoint(&mut self) -> Result<(), SinkError> {
        self.publish().map_err(Self::io)
    }
}

/// Where `run` is among the open runs: by its `Arc` first (a run's events share one, so the usual
/// lookup compares no ids), then by value.
fn position_of(open: &[RunLog], run: &Arc<RunId>) -> Option<usize> {
    position_by(open, |r| &r.id, run)
}

/// Where `run` is among `ids`.
fn position_of_id(ids: &[Arc<RunId>], run: &Arc<RunId>) -> Option<usize> {
    position_by(ids, |id| id, run)
}

/// Where `run` is among `items`, each naming a run by `id`: by its `Arc` first, then by value.
fn position_by<T>(items: &[T], id: impl Fn(&T) -> &Arc<RunId>, run: &Arc<RunId>) -> Option<usize> {
    items.iter().position(|x| Arc::ptr_eq(id(x), run)).or_else(|| items.iter().position(|x| id(x) == run))
}

#[cfg(test)]
mod tests;
