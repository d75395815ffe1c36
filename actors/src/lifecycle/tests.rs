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

/// One step of a random stream over three sessions: a shell call starting or completing, a text
/// delta, or a tick of the clock.
#[derive(Clone, Debug)]
enum Step {
    Start { session: usize, call: usize, dt: u64 },
    Complete { call: usize, dt: u64 },
    Delta { session: usize, dt: u64 },
    Tick,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        2 => (0..3usize, 0..6usize, 0..150u64).prop_map(|(session, call, dt)| Step::Start { session, call, dt }),
        2 => (0..6usize, 0..150u64).prop_map(|(call, dt)| Step::Complete { call, dt }),
        3 => (0..3usize, 0..150u64).prop_map(|(session, dt)| Step::Delta { session, dt }),
        1 => Just(Step::Tick),
    ]
}

/// The stream of `steps` (each session on a clock of its own, so event times interleave out of
/// order across sessions), and the lines a stage that looked at every pending timer of an event's
/// session on every event would show.
fn stream_and_model(steps: &[Step]) -> (Vec<Item>, Vec<String>) {
    let mut clocks = [1_000u64, 1_037, 1_500];
    // Per call: its session, and whether it started and completed.
    let mut calls: [(usize, bool, bool); 6] = [(0, false, false); 6];
    // Per session: pending (call, due, fired), in start order.
    let mut pending: [Vec<(usize, u64, bool)>; 3] = Default::default();
    let (mut items, mut shown) = (Vec::new(), Vec::new());
    let fire = |list: &mut Vec<(usize, u64, bool)>, fires: &dyn Fn(u64) -> bool, shown: &mut Vec<String>| {
        let mut due: Vec<usize> = (0..list.len()).filter(|&i| !list[i].2 && fires(list[i].1)).collect();
        due.sort_by_key(|&i| (list[i].1, i));
        for i in due {
            list[i].2 = true;
            shown.push(format!("Cursor shell@{}: cmd{}", list[i].1, list[i].0));
        }
    };
    let session_ev = |s: usize, at: u64, kind: Input| {
        Item::Input(InputEvent {
            session: Arc::from(format!("s{s}")),
            at_ms: Some(at),
            pos: SourcePos::default(),
            kind,
        })
    };
    for st in steps {
        match *st {
            Step::Start { session, call, dt } if !calls[call].1 => {
                clocks[session] += dt;
                let t = clocks[session];
                fire(&mut pending[session], &|due| due < t, &mut shown);
                calls[call] = (session, true, false);
                pending[session].push((call, t + 75, false));
                let kind = Input::ToolStarted(shell(&format!("c{call}"), &format!("cmd{call}"), false));
                items.push(session_ev(session, t, kind));
            }
            Step::Complete { call, dt } if calls[call].1 && !calls[call].2 => {
                let session = calls[call].0;
                clocks[session] += dt;
                let t = clocks[session];
                fire(&mut pending[session], &|due| due < t, &mut shown);
                calls[call].2 = true;
                pending[session].retain(|p| p.0 != call);
                let kind = Input::ToolCompleted(shell(&format!("c{call}"), &format!("cmd{call}"), true));
                items.push(session_ev(session, t, kind));
            }
            Step::Delta { session, dt } => {
                clocks[session] += dt;
                let t = clocks[session];
                fire(&mut pending[session], &|due| due < t, &mut shown);
                items.push(session_ev(session, t, Input::TextDelta { text: "x".into() }));
            }
            Step::Tick => {
                let t = clocks.iter().copied().min().unwrap_or(0);
                for list in &mut pending {
                    fire(list, &|due| due <= t, &mut shown);
                }
                items.push(Item::Tick(t));
            }
            _ => {}
        }
    }
    (items, shown)
}

proptest::proptest! {
    /// Events that come while no timer can be due skip their session's timers; the lines are
    /// those of looking every time.
    #[test]
    fn lines_are_those_of_checking_every_timer_on_every_event(steps in proptest::collection::vec(step(), 0..60)) {
        let (items, expected) = stream_and_model(&steps);
        proptest::prop_assert_eq!(lines(items), expected);
    }
}
