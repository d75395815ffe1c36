//! Unit tests of the bridge queue core (no runtime), a proptest over random operation sequences,
//! and one actix test of the actor.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::queue::pi_call_id;
use super::*;

const TIMEOUT: u64 = 1_000;

fn queue() -> BridgeQueue {
    BridgeQueue::new(BridgeQueueConfig { call_timeout_ms: TIMEOUT })
}

fn run(id: &str, uuid: &str) -> RunKey {
    RunKey { run_id: id.into(), uuid: uuid.into() }
}

fn req(n: u32, target: Option<&str>) -> BridgeRequest {
    BridgeRequest {
        bridge_call_id: format!("bridge-{n}"),
        mcp_request_id: format!("mcp-{n}"),
        pi_tool: "web_search".into(),
        mcp_tool: "pi__web_search".into(),
        args: json!({"query": format!("q{n}")}),
        run: target.map(str::to_owned),
    }
}

fn text_result(t: &str) -> BridgeToolResult {
    BridgeToolResult { content: vec![json!({"type": "text", "text": t})], is_error: false }
}

fn dispatches(outs: &[BridgeOut]) -> Vec<(String, String)> {
    outs.iter()
        .filter_map(|o| match o {
            BridgeOut::Dispatch { run_id, pi_call_id, .. } => Some((run_id.clone(), pi_call_id.clone())),
            _ => None,
        })
        .collect()
}

fn rejects(outs: &[BridgeOut]) -> Vec<(String, RejectKind, String)> {
    outs.iter()
        .filter_map(|o| match o {
            BridgeOut::Reject { mcp_request_id, kind, message } => {
                Some((mcp_request_id.clone(), *kind, message.clone()))
            }
            _ => None,
        })
        .collect()
}

fn resolves(outs: &[BridgeOut]) -> Vec<String> {
    outs.iter()
        .filter_map(|o| match o {
            BridgeOut::Resolve { mcp_request_id, .. } => Some(mcp_request_id.clone()),
            _ => None,
        })
        .collect()
}

fn aborts(outs: &[BridgeOut]) -> Vec<String> {
    outs.iter()
        .filter_map(|o| match o {
            BridgeOut::AbortPiExecution { pi_call_id } => Some(pi_call_id.clone()),
            _ => None,
        })
        .collect()
}

fn diags(outs: &[BridgeOut]) -> Vec<(&'static str, serde_json::Map<String, Value>)> {
    outs.iter()
        .filter_map(|o| match o {
            BridgeOut::Diagnostic { event, fields } => Some((*event, fields.clone())),
            _ => None,
        })
        .collect()
}

fn pi_id(uuid: &str, n: u64) -> String {
    format!("cursor-pi-bridge-run-{uuid}-tool-{n}")
}

const UUID: &str = "0b4f4c1e-6a2d-4c2b-9f0e-3d1a2b3c4d5e";

#[test]
fn held_until_a_run_attaches() {
    let mut q = queue();
    let outs = q.enqueue(req(1, None), 0);
    assert!(dispatches(&outs).is_empty());
    assert_eq!((q.queued_count(), q.pending_count()), (1, 0));
    let held = q.call_by_mcp_id("mcp-1").unwrap();
    assert_eq!((held.pi_call_id.as_deref(), held.deadline_ms), (None, TIMEOUT));
    // Targeted at a run that has not attached yet: held too, and not taken by another run.
    q.enqueue(req(2, Some("r2")), 10);
    let outs = q.attach_run(run("r1", "u1"), 20);
    assert_eq!(dispatches(&outs), vec![("r1".to_owned(), pi_id("u1", 1))]);
    assert!(
        matches!(&outs[1], BridgeOut::Dispatch { args, pi_tool, .. } if args == &json!({"query":"q1"}) && pi_tool == "web_search")
    );
    assert_eq!((q.queued_count(), q.pending_count()), (1, 1));
    let outs = q.attach_run(run("r2", "u2"), 30);
    assert_eq!(dispatches(&outs), vec![("r2".to_owned(), pi_id("u2", 1))]);
    // The deadline counts from when the call was queued, not dispatched.
    assert_eq!(q.call_by_mcp_id("mcp-2").unwrap().deadline_ms, 10 + TIMEOUT);
    // Once a run is live, requests dispatch at once (untargeted → the newest live run).
    let outs = q.enqueue(req(3, None), 40);
    assert_eq!(dispatches(&outs), vec![("r2".to_owned(), pi_id("u2", 2))]);
    q.assert_consistent();
}

#[test]
fn dispatch_ids_count_per_run_and_fit_64_chars() {
    let mut q = queue();
    q.attach_run(run("a", UUID), 0);
    q.attach_run(run("b", "other"), 0);
    let mut ids = Vec::new();
    for n in 1..=12 {
        let outs = q.enqueue(req(n, Some("a")), 0);
        ids.extend(dispatches(&outs).into_iter().map(|(_, id)| id));
    }
    assert_eq!(ids[0], pi_id(UUID, 1));
    assert_eq!(ids[8], pi_id(UUID, 9));
    assert!(ids.iter().all(|id| id.len() <= 64 && id.starts_with("cursor-pi-bridge-run-")), "{ids:?}");
    assert!(ids[9].ends_with("-tool-10") && ids[11].ends_with("-tool-12"));
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    let outs = q.enqueue(req(100, Some("b")), 0);
    assert_eq!(dispatches(&outs), vec![("b".to_owned(), pi_id("other", 1))]);
    // Long uuids sharing a long prefix stay distinct; unsafe characters never reach the id.
    let long_a = format!("{}-aaaa", "x".repeat(80));
    let long_b = format!("{}-bbbb", "x".repeat(80));
    for n in [1, 10, 123_456, u64::MAX] {
        let (a, b) = (pi_call_id(&long_a, n), pi_call_id(&long_b, n));
        assert!(a.len() <= 64 && b.len() <= 64 && a != b, "{a} {b}");
        assert!(a.ends_with(&format!("-tool-{n}")));
    }
    let odd = pi_call_id("ü/ ü", 1);
    assert!(odd.len() <= 64 && odd.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{odd}");
    assert_ne!(pi_call_id("a b", 1), pi_call_id("a_b", 1));
}

#[test]
fn lookups_stay_consistent_after_resolve_timeout_and_cancel() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    for n in 1..=4 {
        q.enqueue(req(n, None), 0);
    }
    q.enqueue(req(5, Some("later")), 0);
    q.enqueue(req(6, None), 500);
    q.assert_consistent();
    for (pi, b, m) in [(pi_id("u", 1), "bridge-1", "mcp-1"), (pi_id("u", 3), "bridge-3", "mcp-3")] {
        assert_eq!(q.call_by_pi_id(&pi), q.call_by_bridge_id(b));
        assert_eq!(q.call_by_pi_id(&pi), q.call_by_mcp_id(m));
    }

    q.resolve(&pi_id("u", 1), text_result("ok"), 10).unwrap();
    q.cancel_mcp_request("mcp-2", 20);
    q.assert_consistent();
    for (pi, b, m) in [(pi_id("u", 1), "bridge-1", "mcp-1"), (pi_id("u", 2), "bridge-2", "mcp-2")] {
        assert!(q.call_by_pi_id(&pi).is_none() && q.call_by_bridge_id(b).is_none() && q.call_by_mcp_id(m).is_none());
    }
    // 3, 4 and held 5 time out at 1000; 6 stays.
    let outs = q.advance(TIMEOUT);
    assert_eq!(rejects(&outs).len(), 3);
    q.assert_consistent();
    assert!(q.call_by_bridge_id("bridge-5").is_none() && q.call_by_mcp_id("mcp-4").is_none());
    assert!(q.call_by_pi_id(&pi_id("u", 4)).is_none());
    assert_eq!(q.call_by_mcp_id("mcp-6").and_then(|c| c.pi_call_id.clone()), Some(pi_id("u", 5)));
    q.cancel_run("r", 600);
    q.assert_consistent();
    assert_eq!((q.pending_count(), q.queued_count()), (0, 0));
    assert!(q.call_by_bridge_id("bridge-6").is_none() && q.call_by_pi_id(&pi_id("u", 5)).is_none());
    assert_eq!(q.next_deadline(), None);
}

#[test]
fn deadline_rejects_with_the_exact_message_and_aborts_pi() {
    let mut q = BridgeQueue::new(BridgeQueueConfig::default());
    assert_eq!(q.config().call_timeout_ms, 3_600_000);
    q.enqueue(req(1, Some("later")), 0);
    q.attach_run(run("r", "u"), 0);
    q.enqueue(req(2, Some("r")), 5);
    q.enqueue(req(3, Some("nobody")), 7);
    assert_eq!(q.next_deadline(), Some(3_600_000));
    assert!(q.advance(3_599_999).is_empty());
    let outs = q.advance(3_600_000);
    let msg = "Cursor pi bridge CallTool timed out after 3600000 ms".to_owned();
    assert_eq!(rejects(&outs), vec![("mcp-1".to_owned(), RejectKind::Timeout, msg.clone())]);
    // `later` never attached, so nothing ran: no abort.
    assert!(aborts(&outs).is_empty());
    assert_eq!(q.next_deadline(), Some(3_600_005));
    let outs = q.advance(10_000_000);
    assert_eq!(
        rejects(&outs),
        vec![("mcp-2".to_owned(), RejectKind::Timeout, msg.clone()), ("mcp-3".to_owned(), RejectKind::Timeout, msg)]
    );
    assert_eq!(aborts(&outs), vec![pi_id("u", 1)]);
    // Each rejected call is also rejected in diagnostics, with its kind.
    let kinds: Vec<_> = diags(&outs).into_iter().map(|(e, f)| (e, f["rejectionKind"].clone())).collect();
    assert_eq!(kinds, vec![(events::REQUEST_REJECTED, json!("timeout")), (events::REQUEST_REJECTED, json!("timeout"))]);
    assert_eq!(q.next_deadline(), None);
}

#[test]
fn a_due_deadline_fires_before_the_next_event() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    q.enqueue(req(1, None), 0);
    // A later event (a new request) first rejects the due call.
    let outs = q.enqueue(req(2, None), 1_500);
    assert!(
        matches!(&outs[0], BridgeOut::Reject { kind: RejectKind::Timeout, mcp_request_id, .. } if mcp_request_id == "mcp-1")
    );
    assert_eq!(dispatches(&outs), vec![("r".to_owned(), pi_id("u", 2))]);
}

#[test]
fn result_at_or_after_the_deadline_is_refused() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    q.enqueue(req(1, None), 0);
    q.enqueue(req(2, None), 0);
    let err = q.resolve(&pi_id("u", 1), text_result("late"), TIMEOUT).unwrap_err();
    assert_eq!(err.reason, RefuseReason::TimedOut);
    // The same step rejected both due calls: the refusal carries those outputs.
    assert_eq!(rejects(&err.outs).len(), 2);
    assert!(resolves(&err.outs).is_empty());
    let err = q.resolve(&pi_id("u", 2), text_result("later"), TIMEOUT + 1).unwrap_err();
    assert_eq!((err.reason, err.outs.len()), (RefuseReason::NotPending, 0));
    q.assert_consistent();
}

#[test]
fn stale_ids_are_refused_and_never_resolve_a_newer_call() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    for n in 1..=11 {
        q.enqueue(req(n, None), 0);
    }
    let first = pi_id("u", 1);
    let outs = q.resolve(&first, text_result("one"), 1).unwrap();
    assert_eq!(resolves(&outs), vec!["mcp-1".to_owned()]);
    // Already resolved: refused, even though `…-tool-10` and `…-tool-11` (same prefix) are pending.
    let err = q.resolve(&first, text_result("again"), 2).unwrap_err();
    assert_eq!((err.reason, err.outs.len()), (RefuseReason::NotPending, 0));
    for stale in
        ["", "cursor-pi-bridge-run-u-tool-", "cursor-pi-bridge-run-u-tool-01", "CURSOR-PI-BRIDGE-RUN-U-TOOL-10"]
    {
        assert_eq!(q.resolve(stale, text_result("x"), 3).unwrap_err().reason, RefuseReason::NotPending);
    }
    assert_eq!(q.pending_count(), 10);
    let outs = q.resolve(&pi_id("u", 11), text_result("eleven"), 4).unwrap();
    assert_eq!(resolves(&outs), vec!["mcp-11".to_owned()]);
    // A disposed run's id is refused; a new run with another uuid never reuses it.
    q.dispose_run("r", 5);
    q.attach_run(run("r2", "u2"), 6);
    let outs = q.enqueue(req(50, None), 7);
    assert_eq!(dispatches(&outs), vec![("r2".to_owned(), pi_id("u2", 1))]);
    assert_eq!(q.resolve(&pi_id("u", 2), text_result("x"), 8).unwrap_err().reason, RefuseReason::NotPending);
    assert!(q.call_by_mcp_id("mcp-50").is_some());
}

#[test]
fn same_uuid_on_two_live_runs_never_shares_an_id() {
    let mut q = queue();
    q.attach_run(run("a", "same"), 0);
    q.attach_run(run("b", "same"), 0);
    let a = dispatches(&q.enqueue(req(1, Some("a")), 0));
    let b = dispatches(&q.enqueue(req(2, Some("b")), 0));
    assert_ne!(a[0].1, b[0].1);
    q.assert_consistent();
}

#[test]
fn mcp_cancellation_rejects_aborted_and_aborts_pi() {
    let mut q = queue();
    q.enqueue(req(1, None), 0);
    // Held (not dispatched): rejected, nothing to abort.
    let outs = q.cancel_mcp_request("mcp-1", 1);
    assert_eq!(rejects(&outs)[0].1, RejectKind::Aborted);
    assert!(aborts(&outs).is_empty());
    q.attach_run(run("r", "u"), 2);
    q.enqueue(req(2, None), 3);
    let outs = q.cancel_mcp_request("mcp-2", 4);
    assert_eq!(
        rejects(&outs).iter().map(|r| (r.0.as_str(), r.1)).collect::<Vec<_>>(),
        vec![("mcp-2", RejectKind::Aborted)]
    );
    assert_eq!(aborts(&outs), vec![pi_id("u", 1)]);
    // The result arriving afterwards is refused; a second cancel does nothing.
    assert!(q.resolve(&pi_id("u", 1), text_result("x"), 5).is_err());
    assert!(q.cancel_mcp_request("mcp-2", 6).is_empty());
    assert!(q.cancel_mcp_request("unknown", 6).is_empty());
}

#[test]
fn cancel_run_rejects_pending_and_queued_calls() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    q.attach_run(run("other", "o"), 0);
    q.enqueue(req(1, Some("r")), 0);
    q.enqueue(req(2, Some("r")), 0);
    q.enqueue(req(3, Some("other")), 0);
    q.enqueue(req(4, Some("not-yet")), 0);
    let outs = q.cancel_run("r", 10);
    let r = rejects(&outs);
    assert_eq!(
        r.iter().map(|r| (r.0.as_str(), r.1)).collect::<Vec<_>>(),
        vec![("mcp-1", RejectKind::Cancelled), ("mcp-2", RejectKind::Cancelled)]
    );
    assert_eq!(aborts(&outs), vec![pi_id("u", 1), pi_id("u", 2)]);
    assert_eq!(diags(&outs).last().map(|d| d.0), Some(events::RUN_CANCELLED));
    assert!(q.call_by_mcp_id("mcp-3").is_some() && !q.is_live("r") && q.is_live("other"));
    // Held calls targeting a run are rejected by its cancel too.
    let outs = q.cancel_run("not-yet", 11);
    assert_eq!(rejects(&outs)[0].0, "mcp-4");
    // A cancelled run takes no new calls.
    let outs = q.enqueue(req(5, Some("r")), 12);
    assert_eq!(rejects(&outs)[0].1, RejectKind::Cancelled);
    let outs = q.enqueue(req(6, None), 12);
    assert_eq!(dispatches(&outs), vec![("other".to_owned(), pi_id("o", 2))]);
    q.assert_consistent();
}

#[test]
fn dispose_rejects_and_later_results_and_requests_are_refused() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    q.enqueue(req(1, None), 0);
    q.enqueue(req(2, Some("r")), 0);
    let outs = q.dispose_run("r", 10);
    assert_eq!(rejects(&outs).iter().map(|r| r.1).collect::<Vec<_>>(), vec![RejectKind::Disposed; 2]);
    assert_eq!(aborts(&outs).len(), 2);
    assert_eq!(diags(&outs).last().map(|d| d.0), Some(events::RUN_DISPOSED));
    assert!(q.is_disposed("r") && !q.is_live("r"));
    assert_eq!(q.resolve(&pi_id("u", 1), text_result("x"), 11).unwrap_err().reason, RefuseReason::NotPending);
    // Requests for the disposed run are rejected at once (the endpoint answers 410).
    let outs = q.enqueue(req(3, Some("r")), 12);
    assert_eq!(rejects(&outs)[0].1, RejectKind::Disposed);
    assert_eq!((q.pending_count(), q.queued_count()), (0, 0));
    // It does not come back by attaching again; untargeted requests are held for a new run.
    assert!(dispatches(&q.attach_run(run("r", "u"), 13)).is_empty());
    assert!(dispatches(&q.enqueue(req(4, None), 14)).is_empty());
    assert_eq!(q.queued_count(), 1);
    q.assert_consistent();
}

#[test]
fn duplicate_ids_are_rejected_without_touching_the_pending_call() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    q.enqueue(req(1, None), 0);
    let mut dup = req(2, None);
    dup.mcp_request_id = "mcp-1".into();
    let outs = q.enqueue(dup, 1);
    assert_eq!(rejects(&outs)[0].1, RejectKind::Duplicate);
    assert!(dispatches(&outs).is_empty());
    let mut dup = req(3, None);
    dup.bridge_call_id = "bridge-1".into();
    assert_eq!(rejects(&q.enqueue(dup, 2))[0].1, RejectKind::Duplicate);
    assert_eq!(q.pending_count(), 1);
    assert_eq!(resolves(&q.resolve(&pi_id("u", 1), text_result("ok"), 3).unwrap()), vec!["mcp-1".to_owned()]);
}

#[test]
fn result_content_is_normalised() {
    let mut q = queue();
    q.attach_run(run("r", "u"), 0);
    q.enqueue(req(1, None), 0);
    q.enqueue(req(2, None), 0);
    let content = vec![
        json!({"type": "text", "text": "hello", "textSignature": "sig"}),
        json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
        json!({"type": "toolCall", "id": "x"}),
        json!({"type": "text"}),
        json!("bare"),
        json!(42),
    ];
    let outs = q.resolve(&pi_id("u", 1), BridgeToolResult { content, is_error: true }, 1).unwrap();
    let BridgeOut::Resolve { content, is_error, .. } = &outs[0] else { panic!("{outs:?}") };
    assert!(*is_error);
    assert_eq!(
        content,
        &vec![
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
            json!({"type": "text", "text": r#"{"id":"x","type":"toolCall"}"#}),
            json!({"type": "text", "text": r#"{"type":"text"}"#}),
            json!({"type": "text", "text": "bare"}),
            json!({"type": "text", "text": "42"}),
        ]
    );
    let outs = q.resolve(&pi_id("u", 2), BridgeToolResult::default(), 2).unwrap();
    assert!(
        matches!(&outs[0], BridgeOut::Resolve { content, is_error: false, .. } if content == &vec![json!({"type":"text","text":""})])
    );
    assert_eq!(diags(&outs)[0].1["isError"], json!(false));
}

#[test]
fn diagnostics_use_only_allowlisted_fields_and_never_leak_ids_or_args() {
    const ALLOWED: [&str; 10] = [
        "runId",
        "bridgeCallId",
        "cursorMcpCallId",
        "piToolCallId",
        "mcpToolName",
        "piToolName",
        "pendingCount",
        "queuedCount",
        "isError",
        "rejectionKind",
    ];
    let raw_mcp = "RAW-MCP-REQUEST-ID";
    let secret_req = |n: u32, target: Option<&str>| BridgeRequest {
        mcp_request_id: format!("{raw_mcp}-{n}"),
        args: json!({"token": "ARG-SECRET"}),
        ..req(n, target)
    };
    let mut q = queue();
    let mut all = Vec::new();
    all.extend(q.enqueue(secret_req(1, None), 0));
    all.extend(q.attach_run(run("r", "u"), 1));
    all.extend(q.enqueue(secret_req(2, None), 2));
    all.extend(q.enqueue(secret_req(3, None), 2));
    all.extend(q.enqueue(secret_req(4, None), 2));
    let secret_result =
        BridgeToolResult { content: vec![json!({"type":"text","text":"RESULT-SECRET"})], is_error: true };
    all.extend(q.resolve(&pi_id("u", 1), secret_result, 3).unwrap());
    all.extend(q.cancel_mcp_request(&format!("{raw_mcp}-2"), 4));
    all.extend(q.enqueue(secret_req(5, Some("gone")), 4));
    all.extend(q.cancel_run("r", 5));
    all.extend(q.enqueue(secret_req(6, None), 5));
    all.extend(q.dispose_run("r", 6));
    all.extend(q.dispose_run("gone", 6));
    all.extend(q.enqueue(secret_req(7, Some("gone")), 7));
    all.extend(q.advance(10_000));

    let d = diags(&all);
    let names: std::collections::BTreeSet<_> = d.iter().map(|(e, _)| *e).collect();
    assert_eq!(
        names,
        [
            events::RUN_CREATED,
            events::RUN_CANCELLED,
            events::RUN_DISPOSED,
            events::REQUEST_QUEUED,
            events::REQUEST_RESOLVED,
            events::REQUEST_REJECTED
        ]
        .into_iter()
        .collect()
    );
    for (event, fields) in &d {
        for k in fields.keys() {
            assert!(ALLOWED.contains(&k.as_str()), "{event}: field {k}");
        }
        let text = Value::Object(fields.clone()).to_string();
        for secret in [raw_mcp, "ARG-SECRET", "RESULT-SECRET", "timed out", "aborted by"] {
            assert!(!text.contains(secret), "{event}: {text}");
        }
        if let Some(id) = fields.get("cursorMcpCallId").and_then(Value::as_str) {
            let hex = id.strip_prefix("cursor-mcp-call-").unwrap();
            assert!(hex.len() == 8 && hex.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        }
    }
    let queued = d.iter().find(|(e, f)| *e == events::REQUEST_QUEUED && f["bridgeCallId"] == "bridge-2").unwrap();
    assert_eq!(queued.1["cursorMcpCallId"], json!(hashed_mcp_call_id(&format!("{raw_mcp}-2"))));
    assert_eq!(queued.1["piToolCallId"], json!(pi_id("u", 2)));
    assert_eq!((queued.1["pendingCount"].clone(), queued.1["queuedCount"].clone()), (json!(2), json!(0)));
    assert_eq!(hashed_mcp_call_id("abc"), "cursor-mcp-call-ba7816bf");
}

// --- proptest: every enqueued request ends exactly once ---

#[derive(Debug, Clone)]
enum Op {
    Enqueue { target: Option<u8> },
    Attach(u8),
    Result { pick: usize, stale: bool },
    CancelMcp(usize),
    CancelRun(u8),
    Dispose(u8),
    Tick,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => proptest::option::of(0u8..3).prop_map(|target| Op::Enqueue { target }),
        2 => (0u8..3).prop_map(Op::Attach),
        4 => (any::<usize>(), any::<bool>()).prop_map(|(pick, stale)| Op::Result { pick, stale }),
        1 => any::<usize>().prop_map(Op::CancelMcp),
        1 => (0u8..3).prop_map(Op::CancelRun),
        1 => (0u8..3).prop_map(Op::Dispose),
        1 => Just(Op::Tick),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn every_request_ends_exactly_once(ops in proptest::collection::vec((op(), 0u64..400), 1..80)) {
        let mut q = queue();
        let mut now = 0;
        let mut enqueued = 0u32;
        // mcp id → number of terminal outputs (Resolve or Reject)
        let mut ends: HashMap<String, u32> = HashMap::new();
        let mut dispatched: Vec<String> = Vec::new();
        let mut dispatch_count: HashMap<String, u32> = HashMap::new();
        let mut record = |outs: &[BridgeOut], ends: &mut HashMap<String, u32>, dispatched: &mut Vec<String>| {
            for o in outs {
                match o {
                    BridgeOut::Resolve { mcp_request_id, .. } | BridgeOut::Reject { mcp_request_id, .. } => {
                        *ends.entry(mcp_request_id.clone()).or_default() += 1;
                    }
                    BridgeOut::Dispatch { pi_call_id, .. } => {
                        *dispatch_count.entry(pi_call_id.clone()).or_default() += 1;
                        dispatched.push(pi_call_id.clone());
                    }
                    _ => {}
                }
            }
        };
        for (op, dt) in ops {
            now += dt;
            let outs = match op {
                Op::Enqueue { target } => {
                    enqueued += 1;
                    q.enqueue(req(enqueued, target.map(|t| format!("r{t}")).as_deref()), now)
                }
                Op::Attach(r) => q.attach_run(run(&format!("r{r}"), &format!("u{r}")), now),
                Op::Result { pick, stale } => {
                    let id = if stale || dispatched.is_empty() {
                        format!("cursor-pi-bridge-run-u{}-tool-{}", pick % 3, pick % 50)
                    } else {
                        dispatched[pick % dispatched.len()].clone()
                    };
                    match q.resolve(&id, text_result("r"), now) {
                        Ok(outs) => {
                            prop_assert_eq!(resolves(&outs).len(), 1);
                            outs
                        }
                        Err(refused) => {
                            prop_assert!(resolves(&refused.outs).is_empty());
                            refused.outs
                        }
                    }
                }
                Op::CancelMcp(pick) => q.cancel_mcp_request(&format!("mcp-{}", 1 + pick % (enqueued.max(1) as usize)), now),
                Op::CancelRun(r) => q.cancel_run(&format!("r{r}"), now),
                Op::Dispose(r) => q.dispose_run(&format!("r{r}"), now),
                Op::Tick => q.advance(now),
            };
            record(&outs, &mut ends, &mut dispatched);
            q.assert_consistent();
            prop_assert!(ends.values().all(|&n| n == 1), "{:?}", ends);
            prop_assert_eq!(ends.len() + q.pending_count() + q.queued_count(), enqueued as usize);
        }
        // Past every deadline, everything has ended, exactly once.
        let outs = q.advance(u64::MAX);
        record(&outs, &mut ends, &mut dispatched);
        prop_assert_eq!(ends.len(), enqueued as usize);
        prop_assert!(ends.values().all(|&n| n == 1), "{:?}", ends);
        prop_assert!(dispatch_count.values().all(|&n| n == 1));
        prop_assert_eq!(q.next_deadline(), None);
    }
}

// --- the actor ---

#[test]
fn actor_times_out_and_refuses_a_stale_result() {
    use crate::bridge::messages::{BridgeAttachRun, BridgeEnqueue, BridgeNextDeadline, BridgePiToolResult, BridgeTick};
    use actix::Actor;

    actix::System::new().block_on(async {
        let addr = BridgeQueueActor::new(BridgeQueueConfig { call_timeout_ms: TIMEOUT }).start();
        let outs = addr.send(BridgeEnqueue { request: req(1, None), now_ms: 0 }).await.unwrap();
        assert!(dispatches(&outs).is_empty());
        let outs = addr.send(BridgeAttachRun { run: run("r", "u"), now_ms: 5 }).await.unwrap();
        assert_eq!(dispatches(&outs), vec![("r".to_owned(), pi_id("u", 1))]);
        addr.send(BridgeEnqueue { request: req(2, None), now_ms: 10 }).await.unwrap();
        assert_eq!(addr.send(BridgeNextDeadline).await.unwrap(), Some(TIMEOUT));

        let outs = addr.send(BridgeTick { now_ms: TIMEOUT }).await.unwrap();
        assert_eq!(
            rejects(&outs),
            vec![(
                "mcp-1".to_owned(),
                RejectKind::Timeout,
                format!("Cursor pi bridge CallTool timed out after {TIMEOUT} ms")
            )]
        );
        assert_eq!(aborts(&outs), vec![pi_id("u", 1)]);

        let stale = BridgePiToolResult { pi_call_id: pi_id("u", 1), result: text_result("late"), now_ms: TIMEOUT + 1 };
        let refused = addr.send(stale).await.unwrap().unwrap_err();
        assert_eq!(refused.reason, RefuseReason::NotPending);

        let fresh = BridgePiToolResult { pi_call_id: pi_id("u", 2), result: text_result("ok"), now_ms: TIMEOUT + 5 };
        let outs = addr.send(fresh).await.unwrap().unwrap();
        assert_eq!(resolves(&outs), vec!["mcp-2".to_owned()]);
    });
}

#[test]
fn actor_exposes_tools_per_run_and_calls_them_by_mcp_name() {
    use crate::bridge::exposure::{expose, ExposureSettings, PiToolDef};
    use crate::bridge::messages::{
        BridgeAttachRun, BridgeCallTool, BridgeDisposeRun, BridgeExposeTools, BridgeListTools,
    };
    use actix::Actor;

    let defs: Vec<PiToolDef> =
        serde_json::from_value(json!([{"name": "web search"}, {"name": "read"}, {"name": "cursor"}])).unwrap();
    let tools = expose(&defs, &ExposureSettings::default());
    actix::System::new().block_on(async {
        let addr = BridgeQueueActor::new(BridgeQueueConfig { call_timeout_ms: TIMEOUT }).start();
        let outs = addr.send(BridgeExposeTools { run_id: "r".into(), tools }).await.unwrap();
        assert_eq!(diags(&outs).len(), 1);
        assert_eq!(diags(&outs)[0].0, events::TOOLS_EXPOSED);
        let none = addr.send(BridgeExposeTools { run_id: "empty".into(), tools: vec![] }).await.unwrap();
        assert_eq!(diags(&none)[0].0, events::RUN_SKIPPED);

        let listed = addr.send(BridgeListTools { run_id: "r".into() }).await.unwrap().unwrap();
        assert_eq!(listed.iter().map(|t| t.mcp_name.as_str()).collect::<Vec<_>>(), ["pi__web_search"]);
        assert!(addr.send(BridgeListTools { run_id: "other".into() }).await.unwrap().is_none());

        addr.send(BridgeAttachRun { run: run("r", "u"), now_ms: 0 }).await.unwrap();
        let call = |name: &str, n: u32| BridgeCallTool {
            run_id: "r".into(),
            mcp_tool: name.into(),
            bridge_call_id: format!("b{n}"),
            mcp_request_id: format!("m{n}"),
            args: json!({"q": n}),
            now_ms: 1,
        };
        let unknown = addr.send(call("pi__read", 1)).await.unwrap().unwrap_err();
        assert_eq!(unknown.to_string(), "Unknown pi bridge tool: pi__read");
        let outs = addr.send(call("pi__web_search", 2)).await.unwrap().unwrap();
        assert!(outs.iter().any(|o| matches!(o, BridgeOut::Dispatch { pi_tool, args, .. }
            if pi_tool == "web search" && args == &json!({"q": 2}))));

        let outs = addr.send(BridgeDisposeRun { run_id: "r".into(), now_ms: 2 }).await.unwrap();
        assert_eq!(rejects(&outs)[0].1, RejectKind::Disposed);
        assert!(addr.send(BridgeListTools { run_id: "r".into() }).await.unwrap().is_none());
        assert!(addr.send(call("pi__web_search", 3)).await.unwrap().is_err());
    });
}
