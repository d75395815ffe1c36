use std::sync::Arc;

use toolstream_schemas::cursor_cli::tool_models::{ResultModel, ToolSuccess};
use toolstream_schemas::{Input, InputEvent, ResultStatus, ShellStream, SourcePos, Tool, ToolEvent, ToolKind};

use super::ShellCore;
use crate::item::Item;

fn ev(at: u64, kind: Input) -> Item {
    Item::Input(InputEvent { session: Arc::from("s"), at_ms: Some(at), pos: SourcePos::default(), kind })
}

fn shell(id: &str, cmd: &str, result: Option<&str>) -> Box<ToolEvent> {
    let args = format!(r#"{{"command":"{cmd}"}}"#);
    let result = result.map(|v| (ResultStatus::Success, v));
    Box::new(ToolEvent::from_json(id, Tool::Known(ToolKind::Shell), Some(&args), result).unwrap())
}

fn out_delta(at: u64, data: &str) -> Item {
    ev(at, Input::ShellOutput { call_id: None, stream: ShellStream::Stdout, data: data.into() })
}

fn run(items: Vec<Item>) -> Vec<Item> {
    let mut core = ShellCore::default();
    let mut out = Vec::new();
    for i in crate::intake::matched(items) {
        core.push(i, &mut out);
    }
    out
}

fn completed_stdout(out: &[Item]) -> Vec<String> {
    out.iter()
        .filter_map(|i| match i {
            Item::Input(InputEvent { kind: Input::ToolCompleted(t), .. }) => {
                // What the card reads: the model, and the tree kept for sinks that store results.
                let r = t.result.as_ref()?;
                let ResultModel::Success(ToolSuccess::Shell(s)) = r.model(ToolKind::Shell) else { return None };
                let stdout = s.stdout.clone().unwrap_or_default();
                assert_eq!(r.tree()?["stdout"].as_str().unwrap_or(""), stdout);
                Some(stdout)
            }
            _ => None,
        })
        .collect()
}

fn progress(out: &[Item]) -> Vec<String> {
    out.iter()
        .filter_map(|i| match i {
            Item::ShellProgress { line, stream } => Some(format!("{}:{}", stream.as_str(), line.text)),
            _ => None,
        })
        .collect()
}

#[test]
fn delta_fallback_fills_an_empty_successful_shell() {
    let out = run(vec![
        ev(0, Input::ToolStarted(shell("a", "npm test", None))),
        out_delta(10, "\n\nPASS all\nmore\n"),
        out_delta(20, "   \n"),
        out_delta(30, "done\n"),
        ev(40, Input::ToolCompleted(shell("a", "npm test", Some(r#"{"exitCode":0,"stdout":"","stderr":" "}"#)))),
    ]);
    assert_eq!(completed_stdout(&out), vec!["\n\nPASS all\nmore\n   \ndone\n"]);
    // Blank chunks do not spend the budget.
    assert_eq!(progress(&out), vec!["stdout:PASS all", "stdout:done"]);
}

#[test]
fn recorded_output_wins() {
    let out = run(vec![
        ev(0, Input::ToolStarted(shell("a", "ls", None))),
        out_delta(10, "from delta\n"),
        ev(40, Input::ToolCompleted(shell("a", "ls", Some(r#"{"exitCode":0,"stdout":"recorded","stderr":""}"#)))),
    ]);
    assert_eq!(completed_stdout(&out), vec!["recorded"]);
}

#[test]
fn overlapping_shells_get_no_attribution_ever() {
    let (mut intake, mut core) = (crate::intake::IntakeCore::default(), ShellCore::default());
    let mut out = Vec::new();
    let mut push = |item: Item, out: &mut Vec<Item>| {
        let mut matched = Vec::new();
        intake.push(item, &mut matched);
        for i in matched {
            core.push(i, out);
        }
    };
    for i in [
        ev(0, Input::ToolStarted(shell("a", "sleep 1", None))),
        ev(1, Input::ToolStarted(shell("b", "sleep 2", None))),
        out_delta(10, "who wrote this?\n"),
    ] {
        push(i, &mut out);
    }
    assert!(progress(&out).is_empty());
    assert!(out.iter().any(|i| matches!(i, Item::Diagnostic { phase: "shell_output_ambiguous", .. })));
    // b finishes; a is alone now but was marked ambiguous: it never buffers again.
    push(ev(20, Input::ToolCompleted(shell("b", "sleep 2", Some(r#"{"exitCode":0,"stdout":""}"#)))), &mut out);
    push(out_delta(30, "late\n"), &mut out);
    push(ev(40, Input::ToolCompleted(shell("a", "sleep 1", Some(r#"{"exitCode":0,"stdout":""}"#)))), &mut out);
    assert_eq!(completed_stdout(&out), vec!["", ""]);
    assert!(progress(&out).is_empty());
}

#[test]
fn progress_is_limited_to_three_lines_and_scrubbed() {
    let mut items = vec![ev(0, Input::ToolStarted(shell("a", "x", None)))];
    for n in 0..5 {
        items.push(out_delta(n, &format!("line {n} token=s3cret\n")));
    }
    let out = run(items);
    assert_eq!(
        progress(&out),
        vec!["stdout:line 0 token=[redacted]", "stdout:line 1 token=[redacted]", "stdout:line 2 token=[redacted]"]
    );
}

#[test]
fn a_private_key_streamed_over_several_chunks_never_shows_in_a_progress_line() {
    let out = run(vec![
        ev(0, Input::ToolStarted(shell("a", "cat id_rsa", None))),
        out_delta(1, "-----BEGIN RSA PRIVATE KEY-----\n"),
        out_delta(2, "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qzVRa3Gv7Tb+fs8Fw0hS1RG2aL\n"),
        out_delta(
            3,
            "Yp4fE3kqZ8n+vG0bH1xQ2m7sT9cJ5wA6rD4uF8eK3lN0oP2qR7sU9tV1wX3yZ5a\n-----END RSA PRIVATE KEY-----\n",
        ),
        out_delta(4, "copied\n"),
    ]);
    assert_eq!(
        progress(&out),
        [
            "stdout:-----BEGIN RSA PRIVATE KEY-----",
            "stdout:[redacted private key]",
            // The chunk that ends the key is all key: no line of its own.
            "stdout:copied",
        ]
    );
}

#[test]
fn a_token_cut_between_chunks_shows_no_piece_of_itself_in_a_progress_line() {
    let (tok, aws) = ("ghp_jIhKtJ0RlgLKOmxgJTeKdNnFRIBXuDL7Dxtp", "AKIAUJZDE8GXD6NCF10E");
    let out = run(vec![
        ev(0, Input::ToolStarted(shell("a", "cat .env", None))),
        out_delta(1, &format!("tok {}", &tok[..16])),
        out_delta(2, &format!("{} id {}", &tok[16..], &aws[..12])),
        out_delta(3, &format!("{}\ndone\n", &aws[12..])),
    ]);
    // A chunk's unfinished last line loses its open end: the next chunk may make it a secret.
    assert_eq!(progress(&out), ["stdout:tok", "stdout:[redacted] id", "stdout:[redacted]"]);
}

#[test]
fn output_with_no_active_shell_is_dropped() {
    let out = run(vec![out_delta(1, "orphan\n")]);
    assert!(progress(&out).is_empty());
}
