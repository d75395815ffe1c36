//! The Cursor chat database sink (SPEC §9.6, seed 003): each run, written as a conversation of a
//! Cursor chat database the user names, so that Cursor's own chat view shows it.
//!
//! Rows (table `cursorDiskKV`): `composerData:<id>` — the conversation (title, times, status,
//! model, workspace, and its bubble order in `fullConversationHeadersOnly`); one
//! `bubbleId:<id>:<bubble>` per message (`_v: 3`, `type` 1 user / 2 assistant, `bubbleId`,
//! `createdAt`, `text`): the prompt, each text block, each thinking block (`capabilityType: 30`)
//! and each tool call (`capabilityType: 15` with a complete `toolFormerData`: numeric tool id,
//! `toolCallId`, `toolIndex`, `modelCallId`, `status`, `name`, `rawArgs`, `params`, `result`).
//! Cursor 3.x also lists conversations in `ItemTable` `composer.composerHeaders`: the run's entry
//! is added (or replaced) there ([`index`]: read once per transaction, kept aside in a temporary
//! table, written once at the commit). A conversation is one Cursor chat: the composer id is the
//! chat's `session_id`, so resumed runs join their conversation, and ids are derived from event
//! time and hashes, so writing the same input again replaces the same rows.
//!
//! Calls are stored, not shown: their recorded args and results (scrubbed and bounded upstream,
//! `Card::recorded_result`) go under Cursor's keys (`toolstream_schemas::cursor_bubble`), with the
//! result's arm in `additionalData.resultStatus`, so reading the database back gives the same
//! calls. A call that never completed is `loading`.
//!
//! Memory does not grow with the conversations written: the sink holds the open runs and the
//! last [`HELD_CONVERSATIONS`] conversations whose runs closed; an older one is let go (its row
//! holds everything: name, times, status, workspace, model, bubble order) and read back from its
//! row if a run of it comes again, with the same result as if it had been held. What stays is a
//! 16-byte digest per conversation let go, to tell it from one an earlier import wrote.
//!
//! Safety: the file is created if absent; a symlink's target is written, and a FIFO, a device or a
//! directory is refused (`output_file`: SQLite needs a regular file); a file named `state.vscdb`
//! (Cursor's own database), or a link to one, is refused unless
//! [`CursorDbOptions::allow_cursor_state_db`]. Everything is written inside one
//! transaction, committed at the checkpoint (the end of the replay, or Ctrl-C's flush): a failure
//! before that leaves the file as it was.

pub mod index;
pub mod schema;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toolstream_schemas::pi_contract::NEUTRAL_REPLAY_TOOL;

use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Map, Value};
use toolstream_schemas::cursor_bubble::{
    bubble_args, bubble_id_for, bubble_key, bubble_result, bubble_status, composer_key, status, ComposerData,
    BUBBLE_ASSISTANT, BUBBLE_USER, BUBBLE_VERSION, CAPABILITY_THINKING, CAPABILITY_TOOL, COMPOSER_VERSION, HEADERS_KEY,
    RESULT_ARM_KEY,
};
use toolstream_schemas::ids::hash8;
use toolstream_schemas::iso_time::format_ms;
use toolstream_schemas::{Card, Output, OutputEvent, ResultStatus, RunId, RunStatus, Tool, ToolKind};

use crate::pi_session::ids::uuid_v7;
use crate::{Sink, SinkError};
use index::{HeadersIndex, ReadError};
use schema::Table;
use sha2::{Digest, Sha256};

/// How long a write waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);
/// Conversations whose runs all closed that stay in memory (the most recently closed; older ones
/// are let go, and read back from their row if a run of theirs comes again).
const HELD_CONVERSATIONS: usize = 64;
/// Keys a neutral card adds to the recorded args (they are not part of the call).
const CARD_ONLY_ARGS: [&str; 3] = ["activityTitle", "activitySummary", "incomplete"];

/// What the sink may do.
#[derive(Clone, Copy, Debug, Default)]
pub struct CursorDbOptions {
    /// Write into a file named `state.vscdb` (Cursor's own database; only with Cursor closed).
    pub allow_cursor_state_db: bool,
}

/// Why the sink could not start.
#[derive(Debug, thiserror::Error)]
pub enum CursorDbSinkError {
    #[error(
        "{}: this is Cursor's own chat database (state.vscdb); writing it while Cursor runs can lose data. Close Cursor and pass --i-know-cursor-is-closed, or name another file",
        .0.display()
    )]
    CursorStateDb(PathBuf),
    #[error("{}: {source}", path.display())]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    #[error("{0}")]
    Target(std::io::Error),
}

/// One conversation being written.
#[derive(Debug)]
struct Conversation {
    id: String,
    name: String,
    created: u64,
    updated: u64,
    cwd: Option<String>,
    model: Option<String>,
    status: &'static str,
    /// Bubble order: (bubble id, type).
    headers: Vec<(String, i64)>,
}

/// One open run's pending blocks.
#[derive(Debug, Default)]
struct RunState {
    /// Bubbles made so far (their ids' seed).
    made: u64,
    /// The run's first event time that is not 0 (a source line without a time gives 0).
    base: u64,
    /// The prompt, written as the first bubble once the run's first time is known.
    prompt: Option<String>,
    turn: u32,
    tool_index: u32,
    text: Option<(String, u64)>,
    /// Thinking text, started, last delta.
    thinking: Option<(String, u64, u64)>,
    /// Calls that never completed (their card, if shown, follows the notice).
    incomplete: HashSet<String>,
}

/// The conversation index during a transaction.
#[derive(Debug, Default)]
enum IndexState {
    /// Not read in this transaction yet.
    #[default]
    Unread,
    Read(HeadersIndex),
    /// The stored index cannot be read: it is left alone (never overwritten).
    Unreadable,
}

/// Writes runs as Cursor conversations into a database file.
pub struct CursorDbSink {
    conn: Connection,
    path: PathBuf,
    in_tx: bool,
    conversations: HashMap<Arc<str>, Conversation>,
    runs: HashMap<Arc<RunId>, RunState>,
    /// Conversations in the order their runs closed, for [`Self::let_go`].
    closed: std::collections::VecDeque<Arc<str>>,
    /// How many of them stay in memory ([`HELD_CONVERSATIONS`]; tests change it).
    hold: usize,
    /// Conversations written here and let go since ([`session_digest`]).
    let_go_ids: HashSet<[u8; 16]>,
    index: IndexState,
}

impl std::fmt::Debug for CursorDbSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorDbSink").field("path", &self.path).field("in_tx", &self.in_tx).finish_non_exhaustive()
    }
}

/// Whether `path` names Cursor's own database file.
pub fn is_cursor_state_db(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n.eq_ignore_ascii_case("state.vscdb"))
}

impl CursorDbSink {
    /// Open (or create) the database at `path` and make sure it has Cursor's tables.
    pub fn create(path: &Path, opts: CursorDbOptions) -> Result<CursorDbSink, CursorDbSinkError> {
        let file = crate::output_file::regular_file(path).map_err(CursorDbSinkError::Target)?;
        if (is_cursor_state_db(path) || is_cursor_state_db(&file)) && !opts.allow_cursor_state_db {
            return Err(CursorDbSinkError::CursorStateDb(path.to_path_buf()));
        }
        let err = |source| CursorDbSinkError::Sqlite { path: path.to_path_buf(), source };
        // The file was looked at just now: no link may have taken its place since.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&file, flags).map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        schema::ensure(&conn).map_err(err)?;
        // The index's entries wait in a temporary table (`index`): in a file behind SQLite's
        // bounded page cache, not in memory, whatever the build's default.
        conn.pragma_update(None, "temp_store", "FILE").map_err(err)?;
        Ok(CursorDbSink {
            conn,
            path: path.to_path_buf(),
            in_tx: false,
            conversations: HashMap::new(),
            runs: HashMap::new(),
            closed: std::collections::VecDeque::new(),
            hold: HELD_CONVERSATIONS,
            let_go_ids: HashSet::new(),
            index: IndexState::Unread,
        })
    }

    fn sql(&self, e: impl std::fmt::Display) -> SinkError {
        SinkError::Other { sink: "cursor-db", message: format!("{}: {e}", self.path.display()) }
    }

    /// Write a row, inside the sink's transaction (begun on the first write).
    fn put(&mut self, table: Table, key: &str, value: &Value) -> Result<(), SinkError> {
        if !self.in_tx {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| self.sql(e))?;
            self.in_tx = true;
        }
        schema::put(&self.conn, table, key, &value.to_string()).map_err(|e| self.sql(e))
    }

    fn event(&mut self, ev: &OutputEvent) -> Result<(), SinkError> {
        if let Output::RunOpened { cwd, model, prompt, .. } = &ev.kind {
            self.conversation(&ev.run, ev.at_ms, cwd.as_deref(), model.as_deref(), prompt.as_deref())?;
            let state = RunState { prompt: prompt.clone(), ..RunState::default() };
            self.runs.insert(ev.run.clone(), state);
        }
        // Event time 0 (a line without a time) is the run's first known time.
        let state = self.run(&ev.run);
        if state.base == 0 && ev.at_ms > 0 {
            state.base = ev.at_ms;
        }
        let at = if ev.at_ms == 0 { state.base } else { ev.at_ms };
        if at > 0 || matches!(ev.kind, Output::RunClosed { .. }) {
            if let Some(p) = self.run(&ev.run).prompt.take() {
                self.bubble(&ev.run, at, BUBBLE_USER, json!({ "text": p }))?;
            }
        }
        match &ev.kind {
            Output::RunOpened { .. } => {}
            Output::MessageStarted { turn } => {
                self.flush_blocks(&ev.run)?;
                let run = self.run(&ev.run);
                run.turn = *turn;
                run.tool_index = 0;
            }
            Output::Text { delta, .. } => {
                if self.run(&ev.run).thinking.is_some() {
                    self.flush_blocks(&ev.run)?;
                }
                let run = self.run(&ev.run);
                run.text.get_or_insert_with(|| (String::new(), at)).0.push_str(delta);
            }
            Output::Thinking { delta, .. } => {
                if self.run(&ev.run).text.is_some() {
                    self.flush_blocks(&ev.run)?;
                }
                let t = self.run(&ev.run).thinking.get_or_insert_with(|| (String::new(), at, at));
                t.0.push_str(delta);
                t.2 = at;
            }
            Output::BlockEnded { .. } | Output::MessageEnded { .. } => self.flush_blocks(&ev.run)?,
            Output::IncompleteCall(rec) => {
                self.flush_blocks(&ev.run)?;
                if rec.visible {
                    self.run(&ev.run).incomplete.insert(rec.call.hash.clone());
                } else {
                    // Never shown, so no card follows: the call is kept as a bare loading bubble.
                    let tf = tool_former(&ev.run, self.run(&ev.run), &rec.source_tool, &rec.call.hash, None);
                    self.tool_bubble(&ev.run, at, tf)?;
                }
            }
            Output::Card(card) => {
                self.flush_blocks(&ev.run)?;
                let incomplete = self.run(&ev.run).incomplete.remove(&card.call.hash);
                let tf = tool_former(
                    &ev.run,
                    self.run(&ev.run),
                    &card.source_tool,
                    &card.replay_id,
                    Some((card, incomplete)),
                );
                self.tool_bubble(&ev.run, at, tf)?;
            }
            Output::RunClosed { status: st, .. } => {
                self.flush_blocks(&ev.run)?;
                self.runs.remove(&ev.run);
                if let Some(c) = self.held(&ev.run.session)? {
                    c.status = conversation_status(*st);
                    c.updated = c.updated.max(at);
                }
                self.write_conversation(&ev.run.session)?;
                self.closed.push_back(ev.run.session.clone());
                if self.closed.len() > self.hold {
                    if let Some(oldest) = self.closed.pop_front() {
                        self.let_go(&oldest);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn run(&mut self, run: &Arc<RunId>) -> &mut RunState {
        self.runs.entry(run.clone()).or_default()
    }

    /// The run's conversation, started (or resumed from what the file already holds) on first use.
    fn conversation(
        &mut self,
        run: &Arc<RunId>,
        at: u64,
        cwd: Option<&str>,
        model: Option<&str>,
        prompt: Option<&str>,
    ) -> Result<(), SinkError> {
        if let Some(c) = self.held(&run.session)? {
            c.cwd = c.cwd.take().or(cwd.map(str::to_owned));
            c.model = model.map(str::to_owned).or(c.model.take());
            return Ok(());
        }
        let id = if run.session.is_empty() {
            uuid_v7(at, &format!("toolstream-composer/{}", run.label()))
        } else {
            run.session.to_string()
        };
        let name = prompt.map(title).filter(|t| !t.is_empty()).unwrap_or_else(|| "toolstream import".into());
        let mut c = Conversation {
            id,
            name,
            created: at,
            updated: at,
            cwd: cwd.map(str::to_owned),
            model: model.map(str::to_owned),
            status: conversation_status(RunStatus::Finished),
            headers: Vec::new(),
        };
        // A conversation the file already holds (an earlier import): keep its bubbles and age.
        if let Some(data) = self.stored(&c.id)? {
            c.headers = bubble_order(data.full_conversation_headers_only);
            if let Some(t) = data.created_at.as_ref().and_then(toolstream_schemas::cursor_bubble::time_ms) {
                c.created = if c.created == 0 { t } else { c.created.min(t) };
            }
        }
        self.conversations.insert(run.session.clone(), c);
        Ok(())
    }

    /// Write one bubble of `kind` with `fields` and add it to its conversation's order.
    fn bubble(&mut self, run: &Arc<RunId>, at: u64, kind: i64, fields: Value) -> Result<(), SinkError> {
        let state = self.run(run);
        state.made += 1;
        let seed = format!("{}/{}/{}", run.session, run.seq, state.made);
        let bubble_id = uuid_v7(at, &seed);
        if self.held(&run.session)?.is_none() {
            // Events of a run whose opening was not seen: its conversation starts here.
            self.conversation(run, at, None, None, None)?;
        }
        let Some(conv) = self.conversations.get(&run.session) else { return Ok(()) };
        let key = bubble_key(&conv.id, &bubble_id);
        let mut b = json!({
            "_v": BUBBLE_VERSION,
            "type": kind,
            "bubbleId": bubble_id,
            "createdAt": format_ms(at),
            "text": "",
            "codeBlocks": [],
        });
        if let (Some(obj), Value::Object(more)) = (b.as_object_mut(), fields) {
            obj.extend(more);
        }
        self.put(Table::DiskKv, &key, &b)?;
        if let Some(conv) = self.conversations.get_mut(&run.session) {
            if !conv.headers.iter().any(|(id, _)| *id == bubble_id) {
                conv.headers.push((bubble_id, kind));
            }
            if at > 0 && (conv.created == 0 || at < conv.created) {
                conv.created = at;
            }
            conv.updated = conv.updated.max(at);
        }
        Ok(())
    }

    fn tool_bubble(&mut self, run: &Arc<RunId>, at: u64, tool_former: Value) -> Result<(), SinkError> {
        self.run(run).tool_index += 1;
        let fields = json!({ "capabilityType": CAPABILITY_TOOL, "toolFormerData": tool_former });
        self.bubble(run, at, BUBBLE_ASSISTANT, fields)
    }

    /// Write the run's pending text or thinking block as a bubble.
    fn flush_blocks(&mut self, run: &Arc<RunId>) -> Result<(), SinkError> {
        let state = self.run(run);
        let (text, thinking) = (state.text.take(), state.thinking.take());
        if let Some((t, start, end)) = thinking.filter(|t| !t.0.is_empty()) {
            let fields = json!({
                "capabilityType": CAPABILITY_THINKING,
                "thinking": { "text": t, "signature": "" },
                "thinkingDurationMs": end.saturating_sub(start),
            });
            self.bubble(run, start, BUBBLE_ASSISTANT, fields)?;
        }
        if let Some((t, at)) = text.filter(|t| !t.0.is_empty()) {
            self.bubble(run, at, BUBBLE_ASSISTANT, json!({ "text": t }))?;
        }
        Ok(())
    }

    /// Write the conversation's `composerData` row and its entry in the 3.x index.
    fn write_conversation(&mut self, session: &Arc<str>) -> Result<(), SinkError> {
        self.held(session)?;
        let Some(c) = self.conversations.get(session) else { return Ok(()) };
        let headers: Vec<Value> = c.headers.iter().map(|(id, kind)| json!({ "bubbleId": id, "type": kind })).collect();
        let workspace = c.cwd.as_deref().map(|cwd| {
            json!({
                "id": format!("{}{}{}{}", hash8(cwd), hash8(&format!("{cwd}/1")), hash8(&format!("{cwd}/2")), hash8(&format!("{cwd}/3"))),
                "uri": { "$mid": 1, "fsPath": cwd, "external": format!("file://{cwd}"), "path": cwd, "scheme": "file" },
            })
        });
        let mut data = json!({
            "_v": COMPOSER_VERSION,
            "composerId": c.id,
            "name": c.name,
            "createdAt": c.created,
            "lastUpdatedAt": c.updated,
            "status": c.status,
            "isAgentic": true,
            "unifiedMode": "agent",
            "modelConfig": { "modelName": c.model.as_deref().unwrap_or("default") },
            "fullConversationHeadersOnly": headers,
            "conversationMap": {},
            "text": "",
            "richText": "",
            "hasLoaded": true,
        });
        let mut head = json!({
            "type": "head",
            "composerId": c.id,
            "name": c.name,
            "createdAt": c.created,
            "lastUpdatedAt": c.updated,
            "unifiedMode": "agent",
            "isArchived": false,
            "isDraft": false,
        });
        if let Some(w) = workspace {
            for v in [&mut data, &mut head] {
                if let Some(o) = v.as_object_mut() {
                    o.insert("workspaceIdentifier".into(), w.clone());
                }
            }
        }
        let key = composer_key(&c.id);
        let id = c.id.clone();
        self.put(Table::DiskKv, &key, &data)?;
        self.index(&id, head)
    }

    /// Let go of a conversation when none of its runs is open (its row, written at its run's
    /// close, holds it): memory holds the open runs and the last [`HELD_CONVERSATIONS`], not every
    /// conversation written. The one conversation of runs without a session id is kept (its id
    /// comes from its first run, not from its row).
    fn let_go(&mut self, session: &Arc<str>) {
        if session.is_empty() || self.runs.keys().any(|r| r.session == *session) {
            return;
        }
        if self.conversations.remove(session).is_some() {
            self.let_go_ids.insert(session_digest(session));
        }
    }

    /// The conversation of `session` as written so far: held, or let go and read back from its row
    /// (`None`: not written here, or its row is gone or no longer ours).
    fn held(&mut self, session: &Arc<str>) -> Result<Option<&mut Conversation>, SinkError> {
        if !self.conversations.contains_key(session) && self.let_go_ids.remove(&session_digest(session)) {
            let back = self.stored(session)?.and_then(|data| read_back(session, data));
            if let Some(c) = back {
                self.conversations.insert(session.clone(), c);
            }
        }
        Ok(self.conversations.get_mut(session))
    }

    /// Conversation `id`'s `composerData` row, when the file holds a readable one.
    fn stored(&self, id: &str) -> Result<Option<ComposerData>, SinkError> {
        let raw = schema::get(&self.conn, Table::DiskKv, &composer_key(id)).map_err(|e| self.sql(e))?;
        Ok(raw.and_then(|raw| serde_json::from_str::<ComposerData>(&raw).ok()))
    }

    /// Add (or replace) a conversation's entry in `ItemTable` `composer.composerHeaders`, in the
    /// index read at the transaction's first update (written back at the commit). An index that
    /// cannot be read is left alone (never overwritten).
    fn index(&mut self, id: &str, head: Value) -> Result<(), SinkError> {
        if let IndexState::Unread = self.index {
            let raw = schema::get(&self.conn, Table::Items, HEADERS_KEY).map_err(|e| self.sql(e))?;
            self.index = match HeadersIndex::read(&self.conn, raw.as_deref()) {
                Ok(index) => IndexState::Read(index),
                Err(ReadError::Sql(e)) => return Err(self.sql(e)),
                Err(ReadError::Json(e)) => {
                    tracing::warn!(
                        "{}: {HEADERS_KEY} is unreadable ({e}); not adding conversations to it",
                        self.path.display()
                    );
                    IndexState::Unreadable
                }
            };
        }
        if let IndexState::Read(index) = &mut self.index {
            index.put(&self.conn, id, &head).map_err(|e| self.sql(e))?;
        }
        Ok(())
    }

    /// Write the index back (when changed) and commit. The index is read again in the next
    /// transaction: between two, another program may change it.
    fn commit(&mut self) -> Result<(), SinkError> {
        if let IndexState::Read(index) = std::mem::take(&mut self.index) {
            if index.is_dirty() {
                index.write(&self.conn).map_err(|e| self.sql(e))?;
            }
        }
        if self.in_tx {
            self.conn.execute_batch("COMMIT").map_err(|e| self.sql(e))?;
            self.in_tx = false;
        }
        Ok(())
    }
}

/// What a conversation's row says of it, as [`CursorDbSink::write_conversation`] wrote it (`None`
/// when a field it always writes is missing: the row is not ours any more).
fn read_back(session: &str, data: ComposerData) -> Option<Conversation> {
    let status = [RunStatus::Finished, RunStatus::Cancelled, RunStatus::Error]
        .map(conversation_status)
        .into_iter()
        .find(|s| data.status.as_deref() == Some(*s))?;
    Some(Conversation {
        id: session.to_owned(),
        name: data.name?,
        created: data.created_at?.as_u64()?,
        updated: data.last_updated_at?.as_u64()?,
        cwd: data.workspace_identifier.and_then(|w| w.uri?.fs_path),
        model: data.model_config.and_then(|m| m.model_name),
        status,
        headers: bubble_order(data.full_conversation_headers_only),
    })
}

/// A conversation's `status` once its run closed.
fn conversation_status(run: RunStatus) -> &'static str {
    match run {
        RunStatus::Finished => "completed",
        RunStatus::Cancelled => "aborted",
        RunStatus::Error => "error",
    }
}

/// The digest a conversation let go is remembered by: the first 16 bytes of its session id's
/// SHA-256.
fn session_digest(session: &str) -> [u8; 16] {
    let digest = Sha256::digest(session.as_bytes());
    let mut out = [0; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// A stored conversation's bubble order: (bubble id, type).
fn bubble_order(headers: Option<Vec<toolstream_schemas::cursor_bubble::ConversationHeader>>) -> Vec<(String, i64)> {
    headers.into_iter().flatten().filter_map(|h| Some((h.bubble_id?, h.kind?.get()))).collect()
}

/// A prompt's first line, at most 80 characters: the conversation's title.
fn title(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// A card's recorded args (kept on the card for this sink), else its display args without what
/// the card added for display.
fn recorded_args(card: &Card) -> Map<String, Value> {
    if let Some(Value::Object(args)) = &card.recorded_args {
        return args.clone();
    }
    let mut args = card.args.as_object().cloned().unwrap_or_default();
    if card.pi_tool == NEUTRAL_REPLAY_TOOL {
        for k in CARD_ONLY_ARGS {
            args.remove(k);
        }
    }
    args
}

/// The `toolFormerData` of a call: from its card (`Some((card, never completed))`), or only its
/// tool when a call that never completed has no card.
fn tool_former(run: &RunId, state: &RunState, tool: &Tool, call_id: &str, card: Option<(&Card, bool)>) -> Value {
    let args = card.map(|(c, _)| recorded_args(c)).unwrap_or_default();
    // An MCP call Cursor reported as a web search or fetch keeps its MCP arguments.
    let mcp_shaped = args.contains_key("toolName") || args.contains_key("providerIdentifier");
    let (id, name) = bubble_id_for(tool, mcp_shaped);
    let kind = match tool.kind() {
        Some(ToolKind::WebSearch | ToolKind::WebFetch) if mcp_shaped => Some(ToolKind::Mcp),
        k => k,
    };
    let (raw_args, params) = bubble_args(kind, &args);
    let mut tf = json!({
        "tool": id,
        "toolCallId": call_id,
        "toolIndex": state.tool_index,
        "modelCallId": format!("{}-turn-{}", run.label(), state.turn),
        "status": status::LOADING,
        "name": name,
        "rawArgs": raw_args.to_string(),
        "params": params.to_string(),
        "additionalData": {},
    });
    let Some((card, incomplete)) = card else { return tf };
    if incomplete {
        return tf;
    }
    let arm =
        card.details.status.clone().unwrap_or(if card.is_error { ResultStatus::Error } else { ResultStatus::Success });
    let (st, decision) = bubble_status(&arm, card.is_error);
    if let Some(o) = tf.as_object_mut() {
        o.insert("status".into(), st.into());
        let outcome = if st == status::COMPLETED { "success" } else { "error" };
        o.insert("additionalData".into(), json!({ "status": outcome, RESULT_ARM_KEY: arm.as_str() }));
        if let Some(r) = &card.recorded_result {
            o.insert("result".into(), bubble_result(kind, r).to_string().into());
        }
        if let Some(d) = decision {
            o.insert("userDecision".into(), d.into());
        }
    }
    tf
}

impl Sink for CursorDbSink {
    fn name(&self) -> &'static str {
        "cursor-db"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.event(ev)?;
        }
        Ok(())
    }

    /// Nothing to do: rows are written as runs go, and committed at the checkpoint.
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Commit: the conversations written so far become visible, all at once. Runs still open
    /// (Ctrl-C) are written as far as they got, their calls still `loading`.
    fn checkpoint(&mut self) -> Result<(), SinkError> {
        let open: Vec<Arc<RunId>> = self.runs.keys().cloned().collect();
        for run in open {
            let state = self.run(&run);
            if let Some(p) = state.prompt.take() {
                let at = state.base;
                self.bubble(&run, at, BUBBLE_USER, json!({ "text": p }))?;
            }
            self.flush_blocks(&run)?;
            let session = run.session.clone();
            self.write_conversation(&session)?;
        }
        self.commit()
    }
}

#[cfg(test)]
mod tests;
