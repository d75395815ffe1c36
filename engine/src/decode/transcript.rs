//! Decoding of Cursor agent transcripts (SPEC §1.6) into canonical input events: one run per user
//! turn (its query as the prompt, its `<timestamp>` as its time), closed by `turn_ended`; the
//! assistant's text (without Cursor's `[REDACTED]` reasoning placeholders) and its tool calls,
//! each completed with **no** result — transcripts do not record one, so the card says so and
//! the call counts neither as done nor as failed.
//!
//! A transcript names nothing itself: its conversation is its file's name, and a subagent's file
//! (`<conversation>/subagents/<child>.jsonl`) is the child run of the task call whose prompt is
//! the subagent's first query. Both sides name that call the same way ([`task_call_id`]), so the
//! parent and the child decode apart and still meet.

use std::path::Path;
use std::sync::Arc;

use serde_json::value::to_raw_value;
use toolstream_schemas::cursor_hooks::{canonical_args, hook_tool};
use toolstream_schemas::cursor_transcript::{parse_line, Block, TranscriptLine, UserText, REDACTED};
use toolstream_schemas::ids::{call_ref, hash8};
use toolstream_schemas::{
    CallArgs, CallIdent, Input, InputEvent, ParentCall, RunContext, RunEnd, RunStart, RunStatus, SourcePos, Tool,
    ToolEvent, ToolKind,
};

/// The error of a turn the transcript ends inside.
pub const INCOMPLETE_TRANSCRIPT_TURN: &str = "incomplete: the transcript ends inside this turn";

/// The call id of a task call with this prompt (the parent names its call so, and the subagent
/// finds its parent call so).
pub fn task_call_id(prompt: &str) -> String {
    format!("transcript-task-{}", hash8(prompt.trim()))
}

/// A file's last change, in unix ms (the time of a transcript that names none).
pub fn modified_ms(path: &str) -> Option<u64> {
    let t = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    t.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_millis() as u64)
}

/// Where a transcript sits: its conversation, and its parent conversation when it is a subagent's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TranscriptPlace {
    pub conversation: String,
    pub parent_conversation: Option<String>,
    /// The workspace, when the file lies in Cursor's projects folder and its slug names a folder
    /// that exists.
    pub workspace: Option<String>,
}

impl TranscriptPlace {
    /// From a transcript's path: `…/<conversation>.jsonl`, `…/<parent>/subagents/<child>.jsonl`,
    /// and `…/projects/<slug>/agent-transcripts/…` for the workspace.
    pub fn of(path: &str) -> TranscriptPlace {
        let p = Path::new(path);
        let conversation = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let parent_dir = p.parent();
        let parent_conversation = parent_dir
            .filter(|d| d.file_name().is_some_and(|n| n == "subagents"))
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        let workspace = p
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "agent-transcripts"))
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .and_then(|slug| workspace_of_slug(&slug.to_string_lossy(), Path::new("/")));
        TranscriptPlace { conversation, parent_conversation, workspace }
    }
}

/// The folder a project slug names (Cursor writes `/Users/me/my-app` as `Users-me-my-app`: a `-`
/// is a separator or part of a name), found by walking the file system from `root`; `None`
/// when no existing folder fits.
pub fn workspace_of_slug(slug: &str, root: &Path) -> Option<String> {
    fn walk(dir: &Path, parts: &[&str], depth: usize) -> Option<std::path::PathBuf> {
        if parts.is_empty() {
            return Some(dir.to_path_buf());
        }
        if depth > 64 {
            return None;
        }
        // The longest name first: `my-app` before `my` + `app`.
        for n in (1..=parts.len()).rev() {
            let name = parts[..n].join("-");
            let next = dir.join(&name);
            if next.is_dir() {
                if let Some(found) = walk(&next, &parts[n..], depth + 1) {
                    return Some(found);
                }
            }
        }
        None
    }
    let parts: Vec<&str> = slug.split('-').filter(|s| !s.is_empty()).collect();
    if parts.is_empty() {
        return None;
    }
    walk(root, &parts, 0).map(|p| p.to_string_lossy().into_owned())
}

/// Decodes one transcript's lines.
#[derive(Debug)]
pub struct TranscriptDecoder {
    session: Arc<str>,
    place: TranscriptPlace,
    open: bool,
    /// The first query of the transcript (a subagent's task) was seen.
    seen_first_query: bool,
    at_ms: Option<u64>,
    /// `[REDACTED]` placeholders left out.
    redacted: u64,
    /// Lines of a kind transcripts do not define (kept as raw).
    unknown: u64,
    /// Events of the turns before the first `<timestamp>` (Cursor leaves it out of a
    /// conversation's first query): held until a time is known, then given it.
    untimed: Vec<InputEvent>,
}

impl TranscriptDecoder {
    /// A decoder for the transcript at `source` (its path names the conversation).
    pub fn new(source: &str) -> TranscriptDecoder {
        let place = TranscriptPlace::of(source);
        TranscriptDecoder {
            session: Arc::from(place.conversation.as_str()),
            place,
            open: false,
            seen_first_query: false,
            at_ms: None,
            redacted: 0,
            unknown: 0,
            untimed: Vec::new(),
        }
    }

    /// Placeholders and unknown lines so far (counted, not shown).
    pub fn ignored(&self) -> u64 {
        self.redacted + self.unknown
    }

    pub fn decode(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        if self.at_ms.is_some() {
            return self.decode_timed(text, pos, out);
        }
        let mut held = std::mem::take(&mut self.untimed);
        let r = self.decode_timed(text, pos, &mut held);
        if let Some(t) = self.at_ms {
            // The first time: the turns before it happened by then (a minute's precision anyway).
            for mut ev in held {
                ev.at_ms = ev.at_ms.or(Some(t));
                out.push(ev);
            }
        } else {
            self.untimed = held;
        }
        r
    }

    fn decode_timed(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        let line = parse_line(text).map_err(|e| e.to_string())?;
        match line {
            TranscriptLine::Message(m) if m.role == "user" => {
                let text: Vec<&str> = m
                    .message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let user = UserText::parse(&text.join("\n"));
                self.at_ms = user.time_ms().or(self.at_ms);
                self.end_incomplete(pos, out);
                self.start(&user.query, pos, out);
                self.push(out, pos, Input::UserPrompt { text: user.query });
            }
            TranscriptLine::Message(m) => {
                if !self.open {
                    self.start("", pos, out);
                }
                for (i, block) in m.message.content.into_iter().enumerate() {
                    match block {
                        Block::Text { text } => {
                            let shown = self.without_placeholders(&text);
                            if !shown.is_empty() {
                                self.push(out, pos, Input::TextDelta { text: shown.into() });
                            }
                        }
                        Block::ToolUse { name, input } => self.call(&name, &input, pos, i, out),
                        Block::Other(v) => {
                            self.unknown += 1;
                            if let Ok(value) = to_raw_value(&v) {
                                self.push(out, pos, Input::Raw { what: "transcript:block".into(), value });
                            }
                        }
                    }
                }
                self.push(out, pos, Input::TextBoundary);
            }
            TranscriptLine::TurnEnded(t) => {
                let (status, error) =
                    if t.is_success() { (RunStatus::Finished, None) } else { (RunStatus::Error, t.error_text()) };
                let error =
                    error.or_else(|| (status == RunStatus::Error).then(|| "the turn ended with an error".into()));
                if !self.open {
                    self.start("", pos, out);
                }
                self.end(status, error, pos, out);
            }
            TranscriptLine::Unknown(v) => {
                self.unknown += 1;
                if self.open {
                    if let Ok(value) = to_raw_value(&v) {
                        self.push(out, pos, Input::Raw { what: "transcript:line".into(), value });
                    }
                }
            }
        }
        Ok(())
    }

    /// End of the transcript: a turn still open ends without its `turn_ended`. Turns that never
    /// got a time take the file's last change (`modified_ms`), when known.
    pub fn finish(&mut self, modified_ms: Option<u64>, out: &mut Vec<InputEvent>) {
        let mut held = std::mem::take(&mut self.untimed);
        self.end_incomplete(SourcePos::default(), &mut held);
        for mut ev in held {
            ev.at_ms = ev.at_ms.or(modified_ms);
            out.push(ev);
        }
    }

    fn push(&self, out: &mut Vec<InputEvent>, pos: SourcePos, kind: Input) {
        out.push(InputEvent { session: self.session.clone(), at_ms: self.at_ms, pos, kind });
    }

    fn start(&mut self, query: &str, pos: SourcePos, out: &mut Vec<InputEvent>) {
        let first = !std::mem::replace(&mut self.seen_first_query, true);
        let parent = match (&self.place.parent_conversation, first && !query.is_empty()) {
            (Some(p), true) => {
                Some(ParentCall { session: Arc::from(p.as_str()), call: call_ref(&task_call_id(query)) })
            }
            _ => None,
        };
        let context = RunContext {
            parent,
            workspace_roots: self.place.workspace.iter().cloned().collect(),
            ..RunContext::default()
        };
        let start = RunStart {
            cwd: self.place.workspace.clone(),
            model: None,
            prompt: None,
            context: Some(Box::new(context)),
            extra: Vec::new(),
        };
        self.open = true;
        self.push(out, pos, Input::RunStarted(Box::new(start)));
    }

    fn end(&mut self, status: RunStatus, error: Option<String>, pos: SourcePos, out: &mut Vec<InputEvent>) {
        self.end_as(status, error, false, pos, out);
    }

    /// End the open turn as one the transcript ends (or a next query begins) inside.
    fn end_incomplete(&mut self, pos: SourcePos, out: &mut Vec<InputEvent>) {
        self.end_as(RunStatus::Error, Some(INCOMPLETE_TRANSCRIPT_TURN.into()), true, pos, out);
    }

    fn end_as(
        &mut self,
        status: RunStatus,
        error: Option<String>,
        incomplete: bool,
        pos: SourcePos,
        out: &mut Vec<InputEvent>,
    ) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        let end =
            RunEnd { status, result_text: None, usage: None, error, duration_ms: None, incomplete, extra: Vec::new() };
        self.push(out, pos, Input::RunEnded(Box::new(end)));
    }

    /// Assistant text without Cursor's reasoning placeholders.
    fn without_placeholders(&mut self, text: &str) -> String {
        let n = text.matches(REDACTED).count() as u64;
        if n == 0 {
            return text.to_owned();
        }
        self.redacted += n;
        text.replace(REDACTED, "").trim().to_owned()
    }

    /// A tool call: started and completed at once, with no result.
    fn call(&mut self, name: &str, input: &serde_json::Value, pos: SourcePos, block: usize, out: &mut Vec<InputEvent>) {
        let (kind, mcp_tool) = hook_tool(name);
        let args = CallArgs::from_tree(canonical_args(kind, mcp_tool, Some(input))).ok().map(Arc::new);
        let tool = match kind {
            Some(k) => Tool::Known(k).reclassified_for_mcp(mcp_tool),
            None => Tool::unknown(name),
        };
        let id = match (kind, input.get("prompt").and_then(serde_json::Value::as_str)) {
            (Some(ToolKind::Task), Some(prompt)) => task_call_id(prompt),
            _ => format!("transcript-{}-{}-{block}", pos.line, hash8(args.as_deref().map_or("", CallArgs::text))),
        };
        let event = |_: ()| ToolEvent {
            call_id: id.clone(),
            tool: tool.clone(),
            wire_name: name.to_owned(),
            args: args.clone(),
            result: None,
            model_call_id: None,
            started_at_ms: None,
            completed_at_ms: None,
            openai_call: None,
            reported_call_id: None,
            call: CallIdent::default(),
            extra: Vec::new(),
        };
        self.push(out, pos, Input::ToolStarted(Box::new(event(()))));
        self.push(out, pos, Input::ToolCompleted(Box::new(event(()))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(source: &str, lines: &[&str]) -> Vec<InputEvent> {
        let mut d = TranscriptDecoder::new(source);
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            d.decode(l, SourcePos { line: i as u64 + 1, offset: 0 }, &mut out).unwrap();
        }
        d.finish(None, &mut out);
        out
    }

    #[test]
    fn a_turn_is_a_run_and_calls_have_no_result() {
        let out = decode(
            "/x/abc.jsonl",
            &[
                r#"{"role":"user","message":{"content":[{"type":"text","text":"<timestamp>Monday, Aug 24, 2026, 3:01 PM (UTC-5)</timestamp>\n<user_query>\nls\n</user_query>"}]}}"#,
                r#"{"role":"assistant","message":{"content":[{"type":"text","text":"Looking.\n\n[REDACTED]"},{"type":"tool_use","name":"Shell","input":{"command":"ls","working_directory":"/w"}}]}}"#,
                r#"{"type":"turn_ended","status":"success"}"#,
            ],
        );
        assert!(out.iter().all(|e| &*e.session == "abc"));
        let kinds: Vec<&str> = out
            .iter()
            .map(|e| match &e.kind {
                Input::RunStarted(_) => "start",
                Input::UserPrompt { .. } => "prompt",
                Input::TextDelta { .. } => "text",
                Input::ToolStarted(_) => "tool-started",
                Input::ToolCompleted(t) => {
                    assert!(t.result.is_none(), "no invented result");
                    assert_eq!(t.tool, Tool::Known(ToolKind::Shell));
                    assert_eq!(t.args.as_ref().unwrap().text(), r#"{"command":"ls","workingDirectory":"/w"}"#);
                    "tool-completed"
                }
                Input::TextBoundary => "boundary",
                Input::RunEnded(e) => {
                    assert_eq!(e.status, RunStatus::Finished);
                    "end"
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["start", "prompt", "text", "tool-started", "tool-completed", "boundary", "end"]);
        let Input::TextDelta { text } = &out[2].kind else { panic!() };
        assert_eq!(text, "Looking.", "the placeholder is left out");
        assert_eq!(out[0].at_ms, toolstream_schemas::iso_time::parse_ms("2026-08-24T20:01:00Z"));
    }

    #[test]
    fn a_subagent_names_its_parent_task_call() {
        let prompt = "Task: read it all";
        let parent = decode(
            "/t/p1/p1.jsonl",
            &[&format!(
                r#"{{"role":"assistant","message":{{"content":[{{"type":"tool_use","name":"Subagent","input":{{"prompt":"{prompt}"}}}}]}}}}"#
            )],
        );
        let Some(Input::ToolCompleted(task)) =
            parent.iter().map(|e| &e.kind).find(|k| matches!(k, Input::ToolCompleted(_)))
        else {
            panic!()
        };
        let child = decode(
            "/t/p1/subagents/c1.jsonl",
            &[&format!(
                r#"{{"role":"user","message":{{"content":[{{"type":"text","text":"<user_query>\n{prompt}\n</user_query>"}}]}}}}"#
            )],
        );
        let Input::RunStarted(start) = &child[0].kind else { panic!() };
        let link = start.context.as_ref().and_then(|c| c.parent.clone()).unwrap();
        assert_eq!(&*link.session, "p1");
        assert_eq!(link.call, call_ref(&task.call_id));
        let Input::RunEnded(end) = &child.last().unwrap().kind else { panic!() };
        assert_eq!(end.error.as_deref(), Some(INCOMPLETE_TRANSCRIPT_TURN), "no turn_ended: incomplete");
    }

    #[test]
    fn a_slug_names_the_folder_that_exists() {
        let root = std::env::temp_dir().join(format!("toolstream-slug-{}", std::process::id()));
        std::fs::create_dir_all(root.join("Users/me/my-app")).unwrap();
        assert_eq!(
            workspace_of_slug("Users-me-my-app", &root),
            Some(root.join("Users/me/my-app").display().to_string())
        );
        assert_eq!(workspace_of_slug("Users-me-other", &root), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
