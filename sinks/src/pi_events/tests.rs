use serde_json::{json, Value};
use toolstream_schemas::{Output, RunStatus, StopReason};

use super::testutil::*;
use super::*;

fn events(batch: &[OutputEvent]) -> Vec<Value> {
    let mut sink = PiEventsSink::new(Vec::new());
    sink.write(batch).unwrap();
    sink.flush().unwrap();
    lines(&sink.into_inner())
}

fn raw(batch: &[OutputEvent]) -> String {
    let mut sink = PiEventsSink::new(Vec::new());
    sink.write(batch).unwrap();
    String::from_utf8(sink.into_inner()).unwrap()
}

const USAGE_3_4: &str = r#"{"input":3,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":7,"cost":{"input":0.25,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
const USAGE_0: &str = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

#[test]
fn a_tool_use_message_then_a_final_answer_exact_lines() {
    let r = run("s", 1);
    let label = r.label();
    let out = raw(&[
        ev(&r, 0, opened("composer-2", "fix it")),
        ev(&r, 10, Output::MessageStarted { turn: 0 }),
        ev(&r, 10, thinking("Look")),
        ev(&r, 11, thinking("ing.")),
        ev(&r, 12, lifecycle("Cursor shell", "npm test")),
        ev(&r, 13, Output::BlockEnded { turn: 0 }),
        ev(&r, 14, text("Running tests.")),
        ev(&r, 15, progress()),
        ev(&r, 20, Output::BlockEnded { turn: 0 }),
        ev(&r, 20, card(&label, 1, "bash", json!({"command": "npm test"}), "ok", false)),
        ev(&r, 30, ended(StopReason::ToolUse, usage(3, 4), None)),
        ev(&r, 40, Output::MessageStarted { turn: 1 }),
        ev(&r, 40, text("Done.")),
        ev(&r, 41, Output::BlockEnded { turn: 1 }),
        ev(&r, 41, ended(StopReason::Stop, usage(3, 4), None)),
        ev(&r, 41, closed(RunStatus::Finished)),
    ]);
    let id = format!("cursor-replay-{label}-tool-1");
    let head = |ts: u64, content: &str, usage: &str, stop: &str| {
        format!(
            r#"{{"role":"assistant","content":[{content}],"api":"cursor-sdk","provider":"cursor","model":"composer-2","responseId":"s","usage":{usage},"stopReason":"{stop}","timestamp":{ts}}}"#
        )
    };
    let call = format!(r#"{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{"command":"npm test"}}}}"#);
    let first = format!(
        r#"{{"type":"thinking","thinking":"Looking.Cursor shell: npm test\n"}},{{"type":"text","text":"Running tests."}},{call}"#
    );
    let expected = [
        format!(r#"{{"type":"start","partial":{}}}"#, head(10, "", USAGE_0, "stop")),
        r#"{"type":"thinking_start","contentIndex":0}"#.to_owned(),
        r#"{"type":"thinking_delta","contentIndex":0,"delta":"Look"}"#.to_owned(),
        r#"{"type":"thinking_delta","contentIndex":0,"delta":"ing."}"#.to_owned(),
        r#"{"type":"thinking_delta","contentIndex":0,"delta":"Cursor shell: npm test\n"}"#.to_owned(),
        r#"{"type":"thinking_end","contentIndex":0,"content":"Looking.Cursor shell: npm test\n"}"#.to_owned(),
        r#"{"type":"text_start","contentIndex":1}"#.to_owned(),
        r#"{"type":"text_delta","contentIndex":1,"delta":"Running tests."}"#.to_owned(),
        r#"{"type":"text_end","contentIndex":1,"content":"Running tests."}"#.to_owned(),
        format!(
            r#"{{"type":"toolcall_start","contentIndex":2,"toolCall":{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{}}}}}}"#
        ),
        r#"{"type":"toolcall_delta","contentIndex":2,"delta":"{\"command\":\"npm test\"}"}"#.to_owned(),
        format!(r#"{{"type":"toolcall_end","contentIndex":2,"toolCall":{call}}}"#),
        format!(r#"{{"type":"done","reason":"toolUse","message":{}}}"#, head(10, &first, USAGE_3_4, "toolUse")),
        format!(
            r#"{{"type":"tool_results","results":[{{"role":"toolResult","toolCallId":"{id}","toolName":"bash","content":[{{"type":"text","text":"ok"}}],"details":{{"sourceToolName":"shell","status":"success","summary":"","title":"Cursor shell","variant":"native"}},"isError":false,"timestamp":30}}]}}"#
        ),
        format!(r#"{{"type":"start","partial":{}}}"#, head(40, "", USAGE_0, "stop")),
        r#"{"type":"text_start","contentIndex":0}"#.to_owned(),
        r#"{"type":"text_delta","contentIndex":0,"delta":"Done."}"#.to_owned(),
        r#"{"type":"text_end","contentIndex":0,"content":"Done."}"#.to_owned(),
        format!(
            r#"{{"type":"done","reason":"stop","message":{}}}"#,
            head(40, r#"{"type":"text","text":"Done."}"#, USAGE_3_4, "stop")
        ),
    ];
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), expected.len(), "{out}");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g, e);
    }
}

/// Checks every message has exactly one terminal line, results follow each tool-use message one
/// per call, and every usage is complete. Returns the terminal messages.
fn check_stream(lines: &[Value]) -> Vec<Value> {
    let mut terminals = Vec::new();
    let mut open = false;
    let mut awaiting: Option<Vec<String>> = None;
    for l in lines {
        let t = l["type"].as_str().unwrap();
        if let Some(ids) = awaiting.take() {
            assert_eq!(t, "tool_results", "results right after a toolUse message");
            let got: Vec<String> =
                l["results"].as_array().unwrap().iter().map(|r| r["toolCallId"].as_str().unwrap().to_owned()).collect();
            assert_eq!(got, ids);
            for r in l["results"].as_array().unwrap() {
                assert_eq!(r["role"], "toolResult");
                assert!(r["content"][0]["text"].is_string());
                assert!(r["isError"].is_boolean());
            }
            continue;
        }
        match t {
            "start" => {
                assert!(!open, "start while a message is open");
                open = true;
            }
            "done" | "error" => {
                assert!(open, "terminal without start");
                open = false;
                let m = if t == "done" { &l["message"] } else { &l["error"] };
                assert_eq!(m["stopReason"], l["reason"]);
                if t == "done" {
                    assert!(["stop", "toolUse"].contains(&l["reason"].as_str().unwrap()));
                } else {
                    assert!(["error", "aborted"].contains(&l["reason"].as_str().unwrap()));
                    assert!(m["errorMessage"].is_string());
                }
                for k in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
                    assert!(m["usage"][k].is_u64(), "{k}");
                }
                for k in ["input", "output", "cacheRead", "cacheWrite", "total"] {
                    assert!(m["usage"]["cost"][k].is_number(), "cost.{k}");
                }
                let ids: Vec<String> = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "toolCall")
                    .map(|b| b["id"].as_str().unwrap().to_owned())
                    .collect();
                if !ids.is_empty() {
                    assert_eq!(l["reason"], "toolUse", "tool calls only end toolUse messages");
                }
                if l["reason"] == "toolUse" {
                    awaiting = Some(ids);
                }
                terminals.push(m.clone());
            }
            "tool_results" => panic!("results without a toolUse message"),
            _ => assert!(open, "{t} outside a message"),
        }
    }
    assert!(!open, "a message never ended");
    assert!(awaiting.is_none(), "results missing at the end");
    terminals
}

#[test]
fn incomplete_cards_in_a_failed_last_message_are_split_off() {
    let r = run("s", 1);
    let label = r.label();
    let out = events(&[
        ev(&r, 0, opened("Auto", "go")),
        ev(&r, 5, Output::MessageStarted { turn: 0 }),
        ev(&r, 5, text("Partial answer")),
        ev(&r, 6, Output::BlockEnded { turn: 0 }),
        ev(&r, 6, incomplete_card(&label, 1)),
        ev(&r, 6, incomplete_card(&label, 2)),
        ev(&r, 6, ended(StopReason::Error, usage(5, 6), Some("missing result"))),
        ev(&r, 6, closed(RunStatus::Error)),
    ]);
    let msgs = check_stream(&out);
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["stopReason"], "toolUse");
    assert_eq!(msgs[0]["content"].as_array().unwrap().len(), 3);
    assert_eq!(msgs[0]["content"][1]["arguments"]["incomplete"], true);
    assert_eq!(msgs[0]["usage"]["totalTokens"], 0);
    assert_eq!(msgs[1]["stopReason"], "error");
    assert_eq!(msgs[1]["errorMessage"], "missing result");
    assert_eq!(msgs[1]["content"], json!([]));
    assert_eq!(msgs[1]["usage"]["totalTokens"], 11);
    let results: Vec<&Value> = out.iter().filter(|l| l["type"] == "tool_results").collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["results"][1]["isError"], true);
}

#[test]
fn aborted_and_stop_messages_and_text_after_a_card() {
    let r = run("s", 2);
    let label = r.label();
    let out = events(&[
        ev(&r, 0, opened("Auto", "go")),
        ev(&r, 5, Output::MessageStarted { turn: 0 }),
        ev(&r, 6, card(&label, 1, "read", json!({"path": "a"}), "x", false)),
        // Never produced by the engine, handled anyway: text after a card in one message.
        ev(&r, 7, text("after")),
        ev(&r, 8, ended(StopReason::Stop, usage(1, 1), None)),
        ev(&r, 9, Output::MessageStarted { turn: 1 }),
        ev(&r, 9, thinking("hm")),
        ev(&r, 10, ended(StopReason::Aborted, usage(1, 1), None)),
        ev(&r, 10, closed(RunStatus::Cancelled)),
    ]);
    let msgs = check_stream(&out);
    let reasons: Vec<&str> = msgs.iter().map(|m| m["stopReason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["toolUse", "stop", "aborted"]);
    assert_eq!(msgs[1]["content"], json!([{"type": "text", "text": "after"}]));
    assert_eq!(msgs[2]["errorMessage"], "Cancelled: Cursor run was cancelled.");
    // Exactly one terminal line per message.
    let starts = out.iter().filter(|l| l["type"] == "start").count();
    let terminals = out.iter().filter(|l| l["type"] == "done" || l["type"] == "error").count();
    assert_eq!((starts, terminals), (3, 3));
}

#[test]
fn interleaved_runs_keep_their_own_messages() {
    let (a, b) = (run("a", 1), run("b", 1));
    let out = events(&[
        ev(&a, 1, opened("m-a", "pa")),
        ev(&b, 1, opened("m-b", "pb")),
        ev(&a, 2, Output::MessageStarted { turn: 0 }),
        ev(&a, 2, text("A")),
        ev(&b, 3, Output::MessageStarted { turn: 0 }),
        ev(&b, 3, text("B")),
        ev(&a, 4, ended(StopReason::Stop, usage(1, 1), None)),
        ev(&b, 5, ended(StopReason::Stop, usage(1, 1), None)),
    ]);
    let done: Vec<(&str, &str)> = out
        .iter()
        .filter(|l| l["type"] == "done")
        .map(|l| (l["message"]["model"].as_str().unwrap(), l["message"]["content"][0]["text"].as_str().unwrap()))
        .collect();
    assert_eq!(done, [("m-a", "A"), ("m-b", "B")]);
}

fn failed_message_lines(model: &str, timestamp: u64, aborted: bool, message: &str) -> String {
    let mut out = Vec::new();
    for step in failed_message_steps(model, timestamp, aborted, message) {
        write_step(&step, &mut out).unwrap();
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn a_failed_message_is_a_start_and_one_error_line() {
    let text = failed_message_lines("auto", 7, false, "cursor-agent exited with status 1: not logged in");
    assert!(text.ends_with('\n'));
    let out = lines(text.as_bytes());
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["type"], "start");
    assert_eq!(out[0]["partial"]["content"], json!([]));
    assert_eq!(out[1]["type"], "error");
    assert_eq!(out[1]["reason"], "error");
    let m = &out[1]["error"];
    assert_eq!(
        (m["stopReason"].as_str(), m["model"].as_str(), m["timestamp"].as_u64()),
        (Some("error"), Some("auto"), Some(7))
    );
    assert_eq!(m["errorMessage"], "cursor-agent exited with status 1: not logged in");
    assert_eq!(m["usage"]["cost"]["total"], 0);
    let aborted = lines(failed_message_lines("auto", 7, true, "Cursor run aborted").as_bytes());
    assert_eq!(
        (aborted[1]["reason"].as_str(), aborted[1]["error"]["stopReason"].as_str()),
        (Some("aborted"), Some("aborted"))
    );
}
