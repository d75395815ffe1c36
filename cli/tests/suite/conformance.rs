//! Agreement with the reference (pi-cursor-sdk) on `@cursor/sdk` runs, one test per rule of issue
//! #15, each on an SDK recording written for it (`tests/data/conformance/`). Every test checks
//! what pi receives, both ways it can: the pi session file (`replay --sink pi-session=…`, the real
//! binary) and the pi live events (the provider's stream, rebuilt message by message), which must
//! be the same messages; then asserts their count and order, stop reasons, error messages, usage,
//! tool-call names and arguments, and tool-result text and error flags.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;

use serde_json::{json, Value};
use toolstream_sinks::pi_events::PiEventsSink;
use toolstream_sinks::Sink;

fn recording(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/conformance").join(name)
}

/// The messages pi receives for a recording: assistant messages and tool results, in order.
fn delivered(name: &str) -> Vec<Value> {
    let path = recording(name);
    // The pi session file, written by the binary.
    let dir = common::tempdir();
    let session = dir.join("s.jsonl");
    let run = common::toolstream(
        &["replay", "--sink", &format!("pi-session={}", session.display()), path.to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 0, "{name}: {}", run.stderr);
    let text = std::fs::read_to_string(&session).unwrap();
    let from_session: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message" && e["message"]["role"] != "user")
        .map(|e| e["message"].clone())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    // The pi live events, rebuilt as the provider's consumer does.
    let (events, stats) = common::collect(&[&path]);
    assert_eq!(stats.decode_errors, 0, "{name}");
    let mut sink = PiEventsSink::new(Vec::new());
    sink.write(&events).unwrap();
    let bytes = sink.into_inner();
    let lines: Vec<Value> =
        std::str::from_utf8(&bytes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let live = common::rebuild_stream(&lines).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(live, from_session, "{name}: live events and the session file differ");
    live
}

/// `A:<stopReason>` per assistant message, `R:<toolName>` per tool result.
fn shape(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m["role"].as_str() {
            Some("assistant") => format!("A:{}", m["stopReason"].as_str().unwrap()),
            _ => format!("R:{}", m["toolName"].as_str().unwrap()),
        })
        .collect()
}

fn tool_calls(messages: &[Value]) -> Vec<(String, Value)> {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| (b["name"].as_str().unwrap().to_owned(), b["arguments"].clone()))
        .collect()
}

/// `(text, isError)` of every tool result.
fn results(messages: &[Value]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| (m["content"][0]["text"].as_str().unwrap().to_owned(), m["isError"].as_bool().unwrap()))
        .collect()
}

/// `[input, output, cacheRead, cacheWrite, totalTokens]` of an assistant message.
fn usage(m: &Value) -> [u64; 5] {
    let u = &m["usage"];
    ["input", "output", "cacheRead", "cacheWrite", "totalTokens"].map(|k| u[k].as_u64().unwrap())
}

/// The text of the blocks of `kind` (`text` or `thinking`) of a message.
fn blocks(m: &Value, kind: &str) -> String {
    m["content"].as_array().unwrap().iter().filter(|b| b["type"] == kind).map(|b| b[kind].as_str().unwrap()).collect()
}

fn assistants(messages: &[Value]) -> Vec<&Value> {
    messages.iter().filter(|m| m["role"] == "assistant").collect()
}

// 1. SDK grep results (SPEC §1.2) -----------------------------------------------------------------

#[test]
fn sdk_grep_results_keep_their_matches() {
    let msgs = delivered("grep.jsonl");
    assert_eq!(shape(&msgs), ["A:toolUse", "R:grep", "A:toolUse", "R:grep", "A:toolUse", "R:grep", "A:stop"]);
    assert_eq!(
        tool_calls(&msgs),
        [
            ("grep".to_owned(), json!({"pattern": "parsePrice", "path": "src"})),
            ("grep".to_owned(), json!({"pattern": "TODO", "path": "."})),
            ("grep".to_owned(), json!({"pattern": "fixme", "path": "."})),
        ]
    );
    assert_eq!(
        results(&msgs),
        [
            (
                "src/price.ts:3: export function parsePrice(s: string) {\nsrc/cart.ts:12:   const p = parsePrice(raw);"
                    .to_owned(),
                false
            ),
            ("src/cart.ts\nREADME.md".to_owned(), false),
            ("src/cart.ts: 4".to_owned(), false),
        ]
    );
    assert!(msgs.iter().all(|m| !m.to_string().contains("No matches found")));
}

// 2. Incomplete calls by run outcome (SPEC §5.3) ------------------------------------------------

#[test]
fn incomplete_calls_are_shown_by_how_the_run_ended() {
    // Finished with text: a thinking line for the shell; the stale read is trace-only; no card.
    let msgs = delivered("incomplete-finished-with-text.jsonl");
    assert_eq!(shape(&msgs), ["A:stop"]);
    assert_eq!(blocks(&msgs[0], "text"), "The build config looks fine.");
    assert_eq!(blocks(&msgs[0], "thinking"), "Cursor shell did not complete: missing completion\n");
    assert!(tool_calls(&msgs).is_empty());

    // Finished without text: an error card in a toolUse message.
    let msgs = delivered("incomplete-finished-without-text.jsonl");
    assert_eq!(shape(&msgs), ["A:toolUse", "R:cursor", "A:stop"]);
    assert_eq!(
        tool_calls(&msgs),
        [(
            "cursor".to_owned(),
            json!({"activityTitle": "Cursor MCP", "activitySummary": "missing completion", "incomplete": true})
        )]
    );
    assert_eq!(results(&msgs), [("Cursor MCP did not complete\nmissing completion".to_owned(), true)]);

    // Failed: the error card in a toolUse message, then the error message.
    let msgs = delivered("incomplete-failed.jsonl");
    assert_eq!(shape(&msgs), ["A:toolUse", "R:cursor", "A:error"]);
    assert_eq!(
        tool_calls(&msgs),
        [(
            "cursor".to_owned(),
            json!({"activityTitle": "Cursor shell", "activitySummary": "SDK run failed", "incomplete": true})
        )]
    );
    assert_eq!(results(&msgs), [("Cursor shell did not complete\nSDK run failed".to_owned(), true)]);

    // The input ended without its result: the same, saying so.
    let msgs = delivered("incomplete-stream-ended.jsonl");
    assert_eq!(shape(&msgs), ["A:toolUse", "R:cursor", "A:error"]);
    assert_eq!(results(&msgs), [("Cursor shell did not complete\nstream ended without a result".to_owned(), true)]);
    assert_eq!(msgs[2]["errorMessage"], "missing result");

    // Cancelled: one aborted message with the thinking line; pi is never asked to run anything.
    let msgs = delivered("incomplete-cancelled.jsonl");
    assert_eq!(shape(&msgs), ["A:aborted"]);
    assert!(tool_calls(&msgs).is_empty());
    assert_eq!(blocks(&msgs[0], "text"), "Starting with the cart module.");
    assert!(
        blocks(&msgs[0], "thinking").ends_with("Cursor subagent did not complete: aborted\n"),
        "{}",
        blocks(&msgs[0], "thinking")
    );
}

// 3. Run outcome messages (SPEC §5.4) -------------------------------------------------------------

#[test]
fn error_and_aborted_messages_carry_their_message_and_zero_usage() {
    // The turn's usage arrived before the failure: the error message still carries none.
    let msgs = delivered("outcome-error.jsonl");
    assert_eq!(shape(&msgs), ["A:error"]);
    assert_eq!(msgs[0]["errorMessage"], "rate limited (code: resource_exhausted)");
    assert_eq!(usage(&msgs[0]), [0; 5]);
    assert_eq!(blocks(&msgs[0], "text"), "Deploying now.");

    let msgs = delivered("outcome-cancelled.jsonl");
    assert_eq!(shape(&msgs), ["A:aborted"]);
    // Whatever the SDK said, a cancelled run's message says this.
    assert_eq!(msgs[0]["errorMessage"], "Cancelled: Cursor run was cancelled.");
    assert_eq!(usage(&msgs[0]), [0; 5]);

    let msgs = delivered("incomplete-failed.jsonl");
    let last = assistants(&msgs).pop().unwrap().clone();
    assert_eq!(last["errorMessage"], "Agent stream closed unexpectedly (code: unavailable)");
    assert_eq!(usage(&last), [0; 5]);
}

// 4. Model windows (SPEC §6c) ---------------------------------------------------------------------

#[test]
fn a_whole_run_total_never_reaches_a_message() {
    // The recording reports, as one turn's usage, the run total the reference's compaction-poison
    // fixture shows persisted on one assistant message of `cursor/composer-2-5` (200k window).
    let recorded: Vec<Value> = std::fs::read_to_string(recording("compaction-poison.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let poison = &recorded.iter().rev().find(|r| r["delta"]["type"] == "turn-ended").unwrap()["delta"]["usage"];
    if let Some(fixture) =
        toolstream_testkit::fixture("pi-cursor-sdk/nathannli/cursor-run-usage-compaction-poison.jsonl")
    {
        let text = std::fs::read_to_string(fixture).unwrap();
        let entries: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let model = entries.iter().find(|e| e["type"] == "model_change").unwrap()["modelId"].clone();
        let bad = &entries.iter().find(|e| e["type"] == "message").unwrap()["message"]["usage"];
        assert_eq!(recorded[0]["start"]["model"], model);
        assert_eq!((&poison["inputTokens"], &poison["outputTokens"]), (&bad["input"], &bad["output"]));
        assert_eq!(poison["cacheReadTokens"], bad["cacheRead"]);
    }
    let msgs = delivered("compaction-poison.jsonl");
    assert_eq!(shape(&msgs), ["A:toolUse", "R:read", "A:stop"]);
    let a = assistants(&msgs);
    // A sane turn usage is used, mapped as SPEC §6c's example says.
    assert_eq!(usage(a[0]), [1309, 612, 24000, 123, 26044]);
    // The run total is not: the final message is estimated, far inside the model's window.
    let last = usage(a[1]);
    assert_eq!((last[2], last[3]), (0, 0), "estimates have no cache counts");
    assert!(last[4] < 200_000, "{last:?}");
    assert!(msgs.iter().all(|m| !m.to_string().contains("1125429")));

    // An unknown model counts as 200,000 / 64,000: 65,000 output tokens are not believed.
    let msgs = delivered("unknown-model.jsonl");
    assert_eq!(shape(&msgs), ["A:stop"]);
    let u = usage(&msgs[0]);
    assert!(u[1] < 100 && u[2] == 0, "{u:?}");
}

// 5. Display arguments (SPEC §4) ------------------------------------------------------------------

#[test]
fn tool_calls_carry_display_arguments_that_fit_the_pi_tool() {
    let msgs = delivered("display.jsonl");
    let calls = tool_calls(&msgs);
    let want = [
        ("bash", json!({"command": "npm test", "timeout": 120})),
        ("read", json!({"path": "src/price.ts", "offset": 10, "limit": 5})),
        ("find", json!({"pattern": "**/*.test.ts", "path": "src"})),
        ("cursor", json!({"activityTitle": "Cursor edit", "activitySummary": "src/price.ts", "path": "src/price.ts"})),
        ("edit", json!({"path": "src/cart.ts", "edits": [{"oldText": "let total = 0", "newText": "let total = 0n"}]})),
        ("write", json!({"path": "notes/todo.md", "content": "# TODO\n- cart\n"})),
        (
            "cursor",
            json!({"activityTitle": "Cursor MCP", "activitySummary": "get_issue", "toolName": "get_issue",
                   "preview": "SHOP-12: cart total off by a cent"}),
        ),
        (
            "cursor",
            json!({"activityTitle": "Cursor web search", "activitySummary": "bigint json", "query": "bigint json"}),
        ),
        (
            "cursor",
            json!({"activityTitle": "Cursor web fetch", "activitySummary": "https://example.com/bigint",
                   "url": "https://example.com/bigint"}),
        ),
        (
            "cursor",
            json!({"activityTitle": "Cursor subagent", "activitySummary": "check coupons: $ grep -rn coupon src",
                   "description": "check coupons", "preview": "$ grep -rn coupon src"}),
        ),
        ("cursor", json!({"activityTitle": "Cursor futureWidget", "activitySummary": "extra=true, label=x, limit=3"})),
        ("read", json!({"path": "src/missing.ts"})),
    ];
    assert_eq!(calls.len(), want.len());
    for ((name, args), (want_name, want_args)) in calls.iter().zip(&want) {
        assert_eq!((name.as_str(), args), (*want_name, want_args));
    }
    // Never an absolute path inside the cwd, never a recorded-only field.
    let all = serde_json::to_string(&calls).unwrap();
    for leak in ["/repo/", "workingDirectory", "providerIdentifier", "streamContent", "old_string", "\"model\""] {
        assert!(!all.contains(leak), "{leak} in {all}");
    }
}

// 6. What pi's model reads (SPEC §4 "Replayed result text") --------------------------------------

#[test]
fn tool_results_read_as_the_reference_transcript() {
    let msgs = delivered("display.jsonl");
    assert_eq!(assistants(&msgs).len(), 13);
    let got = results(&msgs);
    let want: [(&str, bool); 12] = [
        ("1 failing\n\nCommand exited with code 1", true),
        ("a\nb\n", false),
        ("src/a.test.ts", false),
        (
            "edit src/price.ts\n\n+1 -1\n\n--- a/src/price.ts\n+++ b/src/price.ts\n@@ -1 +1 @@\n-export const x = 1;\n+export const x = 2;",
            false,
        ),
        ("edit src/cart.ts\n\n+1 -1\n\n@@ -4 +4 @@\n-let total = 0\n+let total = 0n", false),
        ("write notes/todo.md\n\nCreated 2 lines\n\nFile size: 14 bytes\n\n# TODO\n- cart\n", false),
        ("get_issue\n\nSHOP-12: cart total off by a cent\nstatus: open", false),
        ("web search bigint json\n\nBigInt cannot be serialized by JSON.stringify", false),
        ("web fetch https://example.com/bigint\n\n# BigInt\nUse a replacer.", false),
        (
            "subagent check coupons\n\n$ grep -rn coupon src\nsrc/coupon.ts:3: applyCoupon\nCoupons apply after tax in src/coupon.ts.",
            false,
        ),
        ("futureWidget\n\nextra: true\nlabel: x\nlimit: 3\nmode: fast\nnested: {\"a\":1}\n\nwidget done", false),
        ("Error: ENOENT: no such file", true),
    ];
    assert_eq!(got.len(), want.len());
    for ((text, is_error), (want_text, want_error)) in got.iter().zip(want) {
        assert_eq!((text.as_str(), *is_error), (want_text, want_error));
    }
    // The subagent's output is extracted, never its raw payload.
    assert!(!got[9].0.contains("conversationSteps") && !got[9].0.contains('{'));
}

// 8. Terminal cards follow the same facts (SPEC §9.4) ---------------------------------------------

#[test]
fn terminal_cards_show_relative_paths_errors_and_subagent_output() {
    let run = common::toolstream(
        &["replay", "--color", "never", "--expanded", recording("display.jsonl").to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    for line in [
        "✗ read src/missing.ts\n    Error: ENOENT: no such file\n",
        "● read src/price.ts\n",
        "● Cursor find **/*.test.ts in src\n    src/a.test.ts\n",
        "● edit src/price.ts added 1 line, removed 1 line\n    -1 export const x = 1;\n    +1 export const x = 2;\n",
        "● Cursor subagent check coupons: $ grep -rn coupon src\n    $ grep -rn coupon src\n    src/coupon.ts:3: applyCoupon\n    Coupons apply after tax in src/coupon.ts.\n",
        "● Cursor futureWidget extra=true, label=x, limit=3\n",
    ] {
        assert!(out.contains(line), "{line:?} not in:\n{out}");
    }
    assert!(!out.contains("/repo/"), "an absolute path inside the cwd:\n{out}");
    assert!(!out.contains("+++ ") && !out.contains("@@ "), "diff headers:\n{out}");

    // Cancelled and failed runs on the terminal: a dimmed thinking line, an error card.
    let run = common::toolstream(
        &["replay", "--color", "never", recording("incomplete-cancelled.jsonl").to_str().unwrap()],
        None,
    );
    assert!(run.stdout.contains("┆ Cursor subagent did not complete: aborted\n"), "{}", run.stdout);
    assert!(!run.stdout.contains('✗'), "{}", run.stdout);
    let run = common::toolstream(
        &["replay", "--color", "never", recording("incomplete-failed.jsonl").to_str().unwrap()],
        None,
    );
    assert!(run.stdout.contains("✗ $ npm test did not complete: SDK run failed\n"), "{}", run.stdout);
    assert!(run.stdout.contains("✗ error: Agent stream closed unexpectedly (code: unavailable)\n"), "{}", run.stdout);
}
