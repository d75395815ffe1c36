use std::sync::Arc;

use toolstream_schemas::{Input, InputEvent, ResultStatus, SourcePos, Tool, ToolEvent, ToolKind};

use super::{has_uri_or_path, LifecycleCore};
use crate::item::Item;

fn ev(at: u64, kind: Input) -> Item {
    Item::Input(InputEvent { session: Arc::from("s"), at_ms: Some(at), pos: SourcePos::default(), kind })
}

fn call(id: &str, tool: Tool, wire: &str, args: &str, done: bool) -> Box<ToolEvent> {
    let result = done.then_some((ResultStatus::Success, "{}"));
    let mut ev = ToolEvent::from_json(id, tool, Some(args), result).unwrap();
    ev.wire_name = wire.into();
    Box::new(ev)
}

fn mcp(id: &str, name: &str, done: bool) -> Box<ToolEvent> {
    let tool = Tool::Known(ToolKind::Mcp).reclassified_for_mcp(Some(name));
    call(id, tool, "mcpToolCall", &format!(r#"{{"toolName":"{name}","args":{{"query":"rust actors"}}}}"#), done)
}

fn shell(id: &str, cmd: &str, done: bool) -> Box<ToolEvent> {
    call(id, Tool::Known(ToolKind::Shell), "shellToolCall", &format!(r#"{{"command":"{cmd}"}}"#), done)
}

fn lines(items: Vec<Item>) -> Vec<String> {
    let mut core = LifecycleCore::default();
    let mut out = Vec::new();
    for i in crate::intake::matched(items) {
        core.push(i, &mut out);
    }
    out.iter()
        .filter_map(|i| match i {
            Item::Lifecycle(l) => Some(format!("{}@{}: {}", l.title, l.at_ms, l.text)),
            _ => None,
        })
        .collect()
}

#[test]
fn slow_mcp_gets_exactly_one_line_and_a_fast_one_none() {
    let slow = lines(vec![
        ev(1000, Input::ToolStarted(mcp("a", "external_search", false))),
        ev(1100, Input::ToolCompleted(mcp("a", "external_search", true))),
    ]);
    assert_eq!(slow, vec!["Cursor MCP@1075: external_search"]);
    let fast = lines(vec![
        ev(1000, Input::ToolStarted(mcp("a", "external_search", false))),
        ev(1020, Input::ToolCompleted(mcp("a", "external_search", true))),
        ev(2000, Input::TextDelta { text: "later".into() }),
    ]);
    assert!(fast.is_empty(), "{fast:?}");
}

#[test]
fn two_slow_identical_shells_give_one_line() {
    let out = lines(vec![
        ev(0, Input::ToolStarted(shell("a", "npm test", false))),
        ev(5, Input::ToolStarted(shell("b", "npm test", false))),
        ev(500, Input::ToolCompleted(shell("a", "npm test", true))),
        ev(600, Input::ToolCompleted(shell("b", "npm test", true))),
    ]);
    assert_eq!(out, vec!["Cursor shell@75: npm test"]);
}

#[test]
fn mcp_web_search_is_titled_cursor_web_search() {
    let out = lines(vec![ev(0, Input::ToolStarted(mcp("a", "WebSearch", false))), Item::Tick(100)]);
    assert_eq!(out, vec!["Cursor web search@75: rust actors"]);
}

#[test]
fn an_mcp_web_search_reads_search_term_only_when_query_is_absent() {
    let search = |args: &str| {
        let tool = Tool::Known(ToolKind::Mcp).reclassified_for_mcp(Some("WebSearch"));
        let call = call("a", tool, "mcpToolCall", args, false);
        lines(vec![ev(0, Input::ToolStarted(call)), Item::Tick(100)])
    };
    assert_eq!(
        search(r#"{"toolName":"WebSearch","args":{"search_term":"tokio"}}"#),
        vec!["Cursor web search@75: tokio"]
    );
    // A query that is there but not text is no label; the search term does not stand in.
    assert_eq!(
        search(r#"{"toolName":"WebSearch","args":{"query":7,"search_term":"tokio"}}"#),
        vec!["Cursor web search@75: web search"]
    );
}

#[test]
fn bridge_calls_and_fast_local_tools_never_get_lines() {
    let out = lines(vec![
        ev(0, Input::ToolStarted(mcp("a", "pi__sem_reindex", false))),
        ev(0, Input::ToolStarted(call("r", Tool::Known(ToolKind::Read), "readToolCall", r#"{"path":"/a"}"#, false))),
        Item::Tick(1000),
    ]);
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn labels_fall_back_when_they_hold_a_uri_or_path_and_web_fetch_never_shows_the_url() {
    let out = lines(vec![
        ev(
            0,
            Input::ToolStarted(call(
                "a",
                Tool::Known(ToolKind::SemSearch),
                "semSearchToolCall",
                r#"{"query":"see https://x.io/a"}"#,
                false,
            )),
        ),
        ev(
            0,
            Input::ToolStarted(call(
                "b",
                Tool::Known(ToolKind::WebFetch),
                "webFetchToolCall",
                r#"{"url":"https://example.com"}"#,
                false,
            )),
        ),
        ev(
            0,
            Input::ToolStarted(call(
                "c",
                Tool::Known(ToolKind::Task),
                "taskToolCall",
                r#"{"description":"read ~/notes"}"#,
                false,
            )),
        ),
        ev(
            0,
            Input::ToolStarted(call(
                "d",
                Tool::Known(ToolKind::UpdateTodos),
                "updateTodosToolCall",
                r#"{"todos":[{},{}]}"#,
                false,
            )),
        ),
        ev(
            0,
            Input::ToolStarted(call(
                "e",
                Tool::Known(ToolKind::CreatePlan),
                "createPlanToolCall",
                "{\"plan\":\"\\n\\n# Ship it\\nsteps\"}",
                false,
            )),
        ),
        Item::Tick(75),
    ]);
    assert_eq!(
        out,
        vec![
            "Cursor semantic search@75: semantic search",
            "Cursor web fetch@75: web fetch",
            "Cursor subagent@75: task",
            "Cursor todos@75: 2 items",
            "Cursor plan@75: # Ship it"
        ]
    );
}

#[test]
fn rescheduling_replaces_the_timer() {
    let out = lines(vec![
        ev(0, Input::ToolStarted(shell("a", "make", false))),
        ev(50, Input::ToolPartial(shell("a", "make all", false))),
        ev(100, Input::TextDelta { text: "x".into() }),
        ev(130, Input::TextDelta { text: "y".into() }),
    ]);
    assert_eq!(out, vec!["Cursor shell@125: make all"]);
}

#[test]
fn a_run_end_cancels_pending_lines() {
    let out = lines(vec![ev(0, Input::ToolStarted(shell("a", "sleep 9", false))), Item::EndOfSource, Item::Tick(1000)]);
    assert!(out.is_empty());
}

#[test]
fn uri_and_path_detection() {
    for yes in ["https://a", "www.x.org", "~/x", "/usr/bin", "see /etc/passwd", "C:\\x", "d:/x", "(/tmp)"] {
        assert!(has_uri_or_path(yes), "{yes}");
    }
    for no in ["npm test", "a/b", "external_search", "50/50", "and/or", "x: y"] {
        assert!(!has_uri_or_path(no), "{no}");
    }
}
