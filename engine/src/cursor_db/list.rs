//! The conversations of a Cursor chat database (`--list`): every `composerData:<id>` row, with
//! what Cursor 3.x keeps in its headers where the row itself lacks it (title, times, workspace).

use serde::Serialize;
use toolstream_schemas::cursor_bubble::{
    bubble_key, time_ms, Bubble, ComposerData, ComposerHead, BUBBLE_PREFIX, BUBBLE_USER, COMPOSER_DATA_PREFIX,
};

use super::open::{CursorDb, CursorDbError};

/// One conversation, as `--list` shows it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: String,
    /// Cursor's title, else the first prompt (one line).
    pub title: String,
    pub created_ms: Option<u64>,
    pub updated_ms: Option<u64>,
    pub bubbles: usize,
    pub model: Option<String>,
    /// The workspace folder.
    pub cwd: Option<String>,
    /// The `composerData` row could not be read (it is still listed, so it can be named).
    pub unreadable: bool,
}

/// Every conversation, oldest first.
pub fn list(db: &CursorDb) -> Result<Vec<Conversation>, CursorDbError> {
    let heads = db.heads();
    let mut out = Vec::new();
    for (key, raw) in db.rows_with_prefix(COMPOSER_DATA_PREFIX)? {
        let id = key[COMPOSER_DATA_PREFIX.len()..].to_owned();
        let head = heads.iter().find(|h| h.composer_id.as_deref() == Some(id.as_str()));
        let mut c = match serde_json::from_str::<ComposerData>(&raw) {
            Ok(data) => summary(db, &id, &data, head)?,
            Err(e) => {
                tracing::warn!("{}: {key}: {e}", db.path().display());
                Conversation { id: id.clone(), unreadable: true, ..Conversation::default() }
            }
        };
        if c.title.is_empty() {
            c.title = head.and_then(|h| h.name.clone()).unwrap_or_default();
        }
        out.push(c);
    }
    out.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    Ok(out)
}

fn summary(
    db: &CursorDb,
    id: &str,
    data: &ComposerData,
    head: Option<&ComposerHead>,
) -> Result<Conversation, CursorDbError> {
    let ms = |own: &Option<serde_json::Value>, theirs: Option<&Option<serde_json::Value>>| {
        own.as_ref().or(theirs.and_then(Option::as_ref)).and_then(time_ms)
    };
    let bubbles = match (&data.full_conversation_headers_only, &data.conversation) {
        (Some(h), _) if !h.is_empty() => h.len(),
        (_, Some(c)) if !c.is_empty() => c.len(),
        _ => db.rows_with_prefix(&format!("{BUBBLE_PREFIX}{id}:"))?.len(),
    };
    let mut title = data.name.clone().filter(|n| !n.trim().is_empty()).unwrap_or_default();
    if title.is_empty() {
        title = first_prompt(db, id, data)?.unwrap_or_default();
    }
    Ok(Conversation {
        id: id.to_owned(),
        title: one_line(&title),
        created_ms: ms(&data.created_at, head.map(|h| &h.created_at)),
        updated_ms: ms(&data.last_updated_at, head.map(|h| &h.last_updated_at)),
        bubbles,
        model: data.model_config.as_ref().and_then(|m| m.model_name.clone()),
        cwd: data
            .workspace_identifier
            .as_ref()
            .or(head.and_then(|h| h.workspace_identifier.as_ref()))
            .and_then(|w| w.folder())
            .map(str::to_owned),
        unreadable: false,
    })
}

/// The text of the conversation's first user bubble.
fn first_prompt(db: &CursorDb, id: &str, data: &ComposerData) -> Result<Option<String>, CursorDbError> {
    let is_user = |b: &Bubble| b.kind.map(|k| k.get()) == Some(BUBBLE_USER);
    if let Some(headers) = &data.full_conversation_headers_only {
        let Some(first) = headers.iter().find(|h| h.kind.map(|k| k.get()) == Some(BUBBLE_USER)) else {
            return Ok(None);
        };
        let Some(bubble_id) = &first.bubble_id else { return Ok(None) };
        let raw = db.value(&bubble_key(id, bubble_id))?;
        return Ok(raw.and_then(|r| serde_json::from_str::<Bubble>(&r).ok()).and_then(|b| b.text));
    }
    Ok(data
        .conversation
        .iter()
        .flatten()
        .filter_map(|v| serde_json::from_value::<Bubble>(v.clone()).ok())
        .find(is_user)
        .and_then(|b| b.text))
}

/// The first non-empty line, at most 80 characters.
fn one_line(s: &str) -> String {
    let line = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}
