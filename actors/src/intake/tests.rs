use std::sync::Arc;

use toolstream_schemas::{Input, InputEvent, ResultStatus, RunEnd, RunStatus, SourcePos, Tool, ToolEvent, ToolKind};

use super::IntakeCore;
use crate::item::Item;

fn ev(at: u64, kind: Input) -> Item {
    Item::Input(InputEvent { session: Arc::from("s"), at_ms: Some(at), pos: SourcePos::default(), kind })
}

fn read(id: &str, path: Option<&str>, done: bool) -> Box<ToolEvent> {
    let args = path.map(|p| format!(r#"{{"path":"{p}"}}"#));
    let result = done.then_some((ResultStatus::Success, "{}"));
    Box::new(ToolEvent::from_json(id, Tool::Known(ToolKind::Read), args.as_deref(), result).unwrap())
}

/// The events that go on, as `kind:call_id:has_args`.
fn passed(items: Vec<Item>) -> Vec<String> {
    let mut core = IntakeCore::default();
    let mut out = Vec::new();
    for i in items {
        core.push(i, &mut out);
    }
    out.iter()
        .filter_map(|i| match i {
            Item::Input(InputEvent { kind: Input::ToolStarted(t), .. }) => Some(format!("start:{}", t.call_id)),
            Item::Input(InputEvent { kind: Input::ToolCompleted(t), .. }) => {
                Some(format!("done:{}:{}", t.call_id, t.args.is_some()))
            }
            Item::Input(InputEvent { kind: Input::RunEnded(_), .. }) => Some("end".to_owned()),
            Item::Diagnostic { fields, .. } => Some(format!("drop:{}", fields["action"].as_str().unwrap())),
            _ => None,
        })
        .collect()
}

#[test]
fn completions_carry_their_start_id_and_args() {
    let out = passed(vec![
        ev(0, Input::RunStarted(Box::default())),
        ev(1, Input::ToolStarted(read("a", Some("/x"), false))),
        ev(2, Input::ToolCompleted(read("a", None, true))),
        ev(3, Input::ToolStarted(read("b", Some("/y"), false))),
        // An unknown id matched by fingerprint: it becomes `b`.
        ev(4, Input::ToolCompleted(read("zz", Some("/y"), true))),
    ]);
    assert_eq!(out, vec!["start:a", "done:a:true", "start:b", "done:b:true"]);
}

#[test]
fn repeats_are_dropped_and_never_steal_another_call() {
    let out = passed(vec![
        ev(0, Input::RunStarted(Box::default())),
        ev(1, Input::ToolStarted(read("a", Some("/x"), false))),
        ev(2, Input::ToolStarted(read("b", Some("/x"), false))),
        ev(3, Input::ToolCompleted(read("a", None, true))),
        // The same completion again, by id and then without one: `b` keeps running.
        ev(4, Input::ToolCompleted(read("a", Some("/x"), true))),
        ev(5, Input::ToolCompleted(read("", Some("/x"), true))),
        // A start repeated after the completion.
        ev(6, Input::ToolStarted(read("a", Some("/x"), false))),
        ev(7, Input::ToolCompleted(read("b", None, true))),
    ]);
    assert_eq!(
        out,
        vec![
            "start:a",
            "start:b",
            "done:a:true",
            "drop:drop-duplicate-completion",
            "drop:drop-duplicate-completion",
            "drop:ignore-start-after-completion",
            "done:b:true"
        ]
    );
}

fn shell(id: &str, result: Option<&str>) -> Box<ToolEvent> {
    let result = result.map(|r| (ResultStatus::Success, r));
    Box::new(ToolEvent::from_json(id, Tool::Known(ToolKind::Shell), Some(r#"{"command":"date"}"#), result).unwrap())
}

#[test]
fn idless_reports_of_identical_running_shells_wait_until_they_can_be_told_apart() {
    // Two identical shells run at once; the SDK's id-less step reports arrive before either
    // completes by id. Each report is one of those completions again, never a third call.
    let out = passed(vec![
        ev(0, Input::RunStarted(Box::default())),
        ev(1, Input::ToolStarted(shell("a", None))),
        ev(2, Input::ToolStarted(shell("b", None))),
        ev(3, Input::ToolCompleted(shell("", Some(r#"{"stdout":"10:00:01"}"#)))),
        ev(4, Input::ToolCompleted(shell("", Some(r#"{"stdout":"10:00:02"}"#)))),
        ev(5, Input::ToolCompleted(shell("a", Some(r#"{"stdout":"10:00:01"}"#)))),
        ev(6, Input::ToolCompleted(shell("b", Some(r#"{"stdout":"10:00:02"}"#)))),
    ]);
    assert_eq!(
        out,
        vec![
            "start:a",
            "start:b",
            "done:a:true",
            "drop:drop-duplicate-completion",
            // The other report is now `b`'s completion (one shell left), so `b`'s own is a repeat.
            "done:b:true",
            "drop:drop-duplicate-completion",
        ]
    );
}

#[test]
fn held_reports_are_released_when_the_run_ends() {
    let out = passed(vec![
        ev(0, Input::RunStarted(Box::default())),
        ev(1, Input::ToolStarted(shell("a", None))),
        ev(2, Input::ToolStarted(shell("b", None))),
        ev(3, Input::ToolCompleted(shell("", Some(r#"{"stdout":"x"}"#)))),
        ev(
            4,
            Input::RunEnded(Box::new(RunEnd {
                status: RunStatus::Finished,
                result_text: None,
                usage: None,
                error: None,
                duration_ms: None,
                incomplete: false,
                extra: vec![],
            })),
        ),
    ]);
    assert_eq!(out, vec!["start:a", "start:b", "done::true", "end"]);
}
