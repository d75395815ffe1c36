use serde_json::json;

use super::*;

/// Decode bare payloads (one a line, times 1000, 2000, …) and finish.
fn decode(payloads: &[Value]) -> (Vec<Tagged>, HookDecoder) {
    let mut d = HookDecoder::default();
    let mut out = Vec::new();
    for (i, p) in payloads.iter().enumerate() {
        let p: HookPayload = serde_json::from_value(p.clone()).unwrap();
        d.decode_payload(Some(1000 * (i as u64 + 1)), p, SourcePos { line: i as u64 + 1, offset: 0 }, &mut out);
    }
    d.finish(&mut out);
    (out, d)
}

fn p(event: &str, conv: &str, gen: &str, extra: Value) -> Value {
    let mut v = json!({"hook_event_name": event, "conversation_id": conv, "generation_id": gen,
        "model": "default", "cursor_version": "3.7.19", "workspace_roots": ["/w"]});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn kinds(out: &[Tagged]) -> Vec<String> {
    out.iter()
        .map(|t| {
            let s = &t.event.session;
            match &t.event.kind {
                Input::RunStarted(_) => format!("{s}:start"),
                Input::UserPrompt { text } => format!("{s}:prompt {text}"),
                Input::TextDelta { text } => format!("{s}:text {text}"),
                Input::ThinkingDelta { text } => format!("{s}:thinking {text}"),
                Input::ThinkingCompleted { .. } => format!("{s}:thinking-done"),
                Input::TextBoundary => format!("{s}:boundary"),
                Input::TurnUsage(u) => format!("{s}:usage {}", u.input_tokens),
                Input::ToolStarted(t) => format!("{s}:started {} {}", t.tool, t.call_id),
                Input::ToolCompleted(t) => format!(
                    "{s}:completed {} {} {}",
                    t.tool,
                    t.call_id,
                    t.result.as_ref().map_or("none".to_owned(), |r| format!("{}:{}", r.status.as_str(), r.value.get()))
                ),
                Input::RunEnded(e) => format!("{s}:end {} {}", e.status.as_str(), e.error.as_deref().unwrap_or("")),
                Input::Raw { what, .. } => format!("{s}:raw {what}"),
                other => format!("{s}:{other:?}"),
            }
        })
        .collect()
}

#[test]
fn a_turn_is_a_run_from_its_prompt_to_its_stop() {
    let (out, _) = decode(&[
        p("sessionStart", "c", "", json!({"composer_mode": "agent"})),
        p("beforeSubmitPrompt", "c", "g1", json!({"prompt": "hi"})),
        p("afterAgentThought", "c", "g1", json!({"text": "hmm", "duration_ms": 5})),
        p(
            "afterAgentResponse",
            "c",
            "g1",
            json!({"text": "Hello", "input_tokens": 100, "output_tokens": 5, "cache_read_tokens": 60, "cache_write_tokens": 0}),
        ),
        p(
            "stop",
            "c",
            "g1",
            json!({"status": "completed", "input_tokens": 100, "output_tokens": 5, "cache_read_tokens": 60}),
        ),
    ]);
    assert_eq!(
        kinds(&out),
        [
            "c:start",
            "c:prompt hi",
            "c:thinking hmm",
            "c:thinking-done",
            "c:text Hello",
            "c:usage 100",
            "c:boundary",
            "c:end finished "
        ]
    );
    let Input::RunStarted(start) = &out[0].event.kind else { panic!() };
    assert_eq!(start.model.as_deref(), Some("auto"), "`default` is Auto");
    assert_eq!(start.cwd.as_deref(), Some("/w"));
    let ctx = start.context.as_deref().unwrap();
    assert_eq!(
        (ctx.cursor_version.as_deref(), ctx.composer_mode.as_deref(), &ctx.workspace_roots[..]),
        (Some("3.7.19"), Some("agent"), &["/w".to_owned()][..])
    );
    let Input::RunEnded(end) = &out[7].event.kind else { panic!() };
    assert_eq!(end.usage.map(|u| (u.input_tokens, u.cache_read_tokens)), Some((40, 60)), "run totals exclude cache");
    let turn = out[0].turn.clone().unwrap();
    assert!(out.iter().all(|t| t.turn.as_ref() == Some(&turn)), "every event is tagged with its turn");
    assert_eq!(&*turn.generation, "g1");
}

#[test]
fn pre_and_post_are_one_call_by_id_else_by_tool_and_input() {
    let read = json!({"file_path": "/w/a"});
    let (out, _) = decode(&[
        p("beforeSubmitPrompt", "c", "g", json!({"prompt": "x"})),
        // An empty id twice, then an id reused by the next call.
        p(
            "preToolUse",
            "c",
            "g",
            json!({"tool_name": "Write", "tool_input": {"file_path": "/w/b", "content": ""}, "tool_use_id": ""}),
        ),
        p("preToolUse", "c", "g", json!({"tool_name": "Read", "tool_input": read, "tool_use_id": ""})),
        p(
            "postToolUse",
            "c",
            "g",
            json!({"tool_name": "Read", "tool_input": read, "tool_use_id": "", "tool_output": "{\"file_path\":\"/w/a\",\"content_length\":3}"}),
        ),
        p(
            "postToolUse",
            "c",
            "g",
            json!({"tool_name": "Write", "tool_input": {"file_path": "/w/b", "content": ""}, "tool_use_id": "", "tool_output": "{\"file_path\":\"/w/b\",\"success\":true}"}),
        ),
        p(
            "preToolUse",
            "c",
            "g",
            json!({"tool_name": "Shell", "tool_input": {"command": "ls", "cwd": ""}, "tool_use_id": "t\n1"}),
        ),
        p(
            "postToolUseFailure",
            "c",
            "g",
            json!({"tool_name": "Shell", "tool_input": {"command": "ls", "cwd": ""}, "tool_use_id": "t\n1", "error_message": "boom", "failure_type": "error"}),
        ),
        p(
            "preToolUse",
            "c",
            "g",
            json!({"tool_name": "Shell", "tool_input": {"command": "pwd"}, "tool_use_id": "t\n1"}),
        ),
        // A completion whose start was never recorded.
        p(
            "postToolUse",
            "c",
            "g",
            json!({"tool_name": "Grep", "tool_input": {"pattern": "x"}, "tool_use_id": "lost", "tool_output": "{\"pattern\":\"x\",\"success\":true}"}),
        ),
        p("stop", "c", "g", json!({"status": "completed"})),
    ]);
    let k = kinds(&out);
    assert_eq!(
        &k[2..],
        [
            "c:started write #hook1",
            "c:started read #hook2",
            "c:completed read #hook2 success:{\"content_length\":3,\"path\":\"/w/a\"}",
            "c:completed write #hook1 success:{\"path\":\"/w/b\",\"success\":true}",
            "c:started shell t\n1",
            "c:completed shell t\n1 error:{\"errorMessage\":\"boom\"}",
            "c:started shell t\n1#hook3",
            "c:completed grep lost none",
            "c:end finished ",
        ]
    );
}

#[test]
fn execution_and_edit_hooks_attach_to_their_call() {
    let (out, d) = decode(&[
        p("beforeSubmitPrompt", "c", "g", json!({"prompt": "x"})),
        p("preToolUse", "c", "g", json!({"tool_name": "Shell", "tool_input": {"command": "make"}, "tool_use_id": "s"})),
        p("beforeShellExecution", "c", "g", json!({"command": "make", "cwd": "/w"})),
        p("afterShellExecution", "c", "g", json!({"command": "make", "output": "built\n", "duration": 3})),
        p(
            "postToolUse",
            "c",
            "g",
            json!({"tool_name": "Shell", "tool_input": {"command": "make"}, "tool_use_id": "s"}),
        ),
        p(
            "preToolUse",
            "c",
            "g",
            json!({"tool_name": "StrReplace", "tool_input": {"file_path": "/w/a"}, "tool_use_id": "e"}),
        ),
        p("afterFileEdit", "c", "g", json!({"file_path": "/w/a", "edits": [{"old_string": "a", "new_string": "b"}]})),
        p(
            "postToolUse",
            "c",
            "g",
            json!({"tool_name": "StrReplace", "tool_input": {"file_path": "/w/a"}, "tool_use_id": "e", "tool_output": "{}"}),
        ),
        p("beforeReadFile", "c", "g", json!({"file_path": "/w/a", "content": "SECRET FILE"})),
        // A shell no preToolUse reported: its execution hooks stand for it.
        p("beforeShellExecution", "c", "g", json!({"command": "date"})),
        p("afterShellExecution", "c", "g", json!({"command": "date", "output": "today"})),
        p("stop", "c", "g", json!({"status": "completed"})),
    ]);
    let k = kinds(&out);
    assert_eq!(
        &k[2..],
        [
            "c:started shell s",
            "c:completed shell s success:{\"stdout\":\"built\\n\"}",
            "c:started edit e",
            "c:completed edit e success:{}",
            "c:started shell #hook1",
            "c:completed shell #hook1 success:{\"stdout\":\"today\"}",
            "c:end finished ",
        ]
    );
    let Input::ToolCompleted(edit) = &out[5].event.kind else { panic!() };
    assert_eq!(edit.args.as_ref().unwrap().text(), r#"{"edits":[{"new_string":"b","old_string":"a"}],"path":"/w/a"}"#);
    assert_eq!(d.counts().attached, 4);
    assert!(!format!("{out:?}").contains("SECRET FILE"), "a read file's content is never kept");
}

#[test]
fn a_subagent_run_nests_under_its_task_call() {
    let (out, _) = decode(&[
        p("beforeSubmitPrompt", "root", "g", json!({"prompt": "spawn"})),
        p(
            "preToolUse",
            "root",
            "g",
            json!({"tool_name": "Subagent", "tool_input": {"description": "look", "prompt": "do it"}, "tool_use_id": "call_1\nfc_1"}),
        ),
        p(
            "subagentStart",
            "root",
            "root",
            json!({"subagent_id": "call_1\nfc_1", "tool_call_id": "call_1\nfc_1", "parent_conversation_id": "root", "task": "do it", "subagent_model": "fast"}),
        ),
        p(
            "preToolUse",
            "kid",
            "kg",
            json!({"tool_name": "Read", "tool_input": {"file_path": "/w/a"}, "tool_use_id": "r"}),
        ),
        p(
            "postToolUse",
            "kid",
            "kg",
            json!({"tool_name": "Read", "tool_input": {"file_path": "/w/a"}, "tool_use_id": "r", "tool_output": "{}"}),
        ),
        p(
            "subagentStop",
            "root",
            "root",
            json!({"subagent_id": "call_1\nfc_1", "status": "completed", "duration_ms": 900, "description": "look", "parent_conversation_id": "root"}),
        ),
        // A late completion of the task call repeats what subagentStop said.
        p(
            "postToolUse",
            "root",
            "g",
            json!({"tool_name": "Subagent", "tool_input": {"description": "look", "prompt": "do it"}, "tool_use_id": "call_1\nfc_1", "tool_output": "{}"}),
        ),
        p("stop", "root", "g", json!({"status": "completed"})),
    ]);
    assert_eq!(
        kinds(&out),
        [
            "root:start",
            "root:prompt spawn",
            "root:started task call_1\nfc_1",
            "kid:start",
            "kid:prompt do it",
            "kid:started read r",
            "kid:completed read r success:{}",
            "kid:end finished ",
            "root:completed task call_1\nfc_1 success:{\"description\":\"look\",\"durationMs\":900}",
            "root:end finished ",
        ]
    );
    let Input::RunStarted(kid) = &out[3].event.kind else { panic!() };
    assert_eq!(kid.model.as_deref(), Some("fast"));
    let link = kid.context.as_ref().and_then(|c| c.parent.clone()).unwrap();
    assert_eq!((&*link.session, link.call), ("root", call_ref("call_1\nfc_1")));
}

#[test]
fn turns_end_without_stop_as_incomplete_and_late_events_open_nothing() {
    let (out, d) = decode(&[
        p("beforeSubmitPrompt", "c", "g1", json!({"prompt": "one"})),
        p("beforeSubmitPrompt", "c", "g2", json!({"prompt": "two"})),
        p("stop", "c", "g2", json!({"status": "aborted"})),
        p("afterAgentResponse", "c", "g2", json!({"text": "late"})),
        p("someFutureHook", "c", "g3", json!({})),
        p("preToolUse", "c", "g3", json!({"tool_name": "Read", "tool_input": {}, "tool_use_id": "r", "brand_new": 1})),
        p("someFutureHook", "c", "g3", json!({"x": 1})),
    ]);
    assert_eq!(
        kinds(&out),
        [
            "c:start",
            "c:prompt one",
            &format!("c:end error {INCOMPLETE_TURN}"),
            "c:start",
            "c:prompt two",
            "c:end cancelled Cancelled: Cursor run was cancelled.",
            "c:start",
            "c:started read r",
            "c:raw unknown-fields:hook:preToolUse",
            "c:raw hook:someFutureHook",
            &format!("c:end error {INCOMPLETE_TURN}"),
        ]
    );
    let c = d.counts();
    assert_eq!((c.unknown_events, c.unknown_fields, c.ignored), (2, 1, 2), "{c:?}");
}
