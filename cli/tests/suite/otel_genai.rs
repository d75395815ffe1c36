//! OpenTelemetry the way the GenAI conventions expect (SPEC §9.7), against a real collector
//! (`common::otel`: rotel on 127.0.0.1): one trace per turn, the turns of a conversation sharing
//! `gen_ai.conversation.id`, a subagent's run a child `invoke_agent` span of its task call's
//! `execute_tool` span (from a hook log and from agent transcripts), Cursor's facts and both cache
//! token names on hook runs, incomplete turns marked, and the `gen_ai.client.*` metrics. Without
//! the collector these skip, except under `./scripts/test` (`TOOLSTREAM_REQUIRE_OTEL=1`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::cursor::hook_log_holds;
use common::otel::{check_subagent_nesting, rotel_agent, Collector, Span};
use common::toolstream;

const HOOK_LOG: &str = "cursor-hooks/cursor-hooks.jsonl";
/// The same session's transcripts (the main conversation and its subagent).
const TRANSCRIPTS: &str = "cursor-transcripts/6bd3db3e-e838-485e-befc-b5f0d05b18cd";
const CONVERSATION: &str = "6bd3db3e-e838-485e-befc-b5f0d05b18cd";

fn op<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some(name)).collect()
}

fn replay(collector: &Collector, args: &[&str]) {
    let sink = format!("otlp={}", collector.http_url());
    let mut all = vec!["replay", "--sink", &sink];
    all.extend_from_slice(args);
    let run = toolstream(&all, None);
    assert!(run.code <= 1, "{}", run.stderr);
    assert!(!run.stderr.contains("not delivered"), "{}", run.stderr);
}

#[test]
fn a_hook_log_gives_one_trace_per_turn_with_the_subagent_under_its_task_call_and_cursors_facts() {
    let Some(file) = toolstream_testkit::fixture(HOOK_LOG) else { return };
    let Some(agent) = rotel_agent() else { return };
    let (turns, calls) = hook_log_holds(&file);
    let collector = Collector::start(&agent);
    replay(&collector, &[file.to_str().unwrap()]);
    let spans = collector.wait_for(turns + calls, Duration::from_secs(30));
    assert_eq!((op(&spans, "invoke_agent").len(), op(&spans, "execute_tool").len()), (turns, calls));
    let roots = check_subagent_nesting(&spans, CONVERSATION, "hook log");
    assert_eq!(roots, turns - 1, "every turn but the subagent's is a root");
    for r in op(&spans, "invoke_agent") {
        assert_eq!(r.attr("cursor.version"), Some("3.7.19"), "hook runs carry the Cursor build");
        assert!(r.attr("cursor.workspace_roots").is_some_and(|w| w.contains("langsmith-cli")), "{:?}", r.attrs);
        if let Some(write) = r.attr("gen_ai.usage.cache_write.input_tokens") {
            assert_eq!(r.attr("gen_ai.usage.cache_creation.input_tokens"), Some(write), "both names, one value");
        }
    }
    let with_usage = op(&spans, "invoke_agent")
        .iter()
        .filter(|r| r.attr("gen_ai.usage.cache_write.input_tokens").is_some_and(|n| n != "Int(0)"))
        .count();
    assert!(with_usage > 0, "the fixture's cache writes reach the collector");
    let modes: HashSet<&str> =
        op(&spans, "invoke_agent").iter().filter_map(|r| r.attr("cursor.composer_mode")).collect();
    assert_eq!(modes, HashSet::from(["agent"]), "the composer mode of the session");
}

#[test]
fn agent_transcripts_nest_the_subagent_under_its_task_call_too() {
    let Some(dir) = toolstream_testkit::fixture(TRANSCRIPTS) else { return };
    let Some(agent) = rotel_agent() else { return };
    let collector = Collector::start(&agent);
    replay(&collector, &["--from-cursor-transcripts", dir.to_str().unwrap(), "--all"]);
    let main = dir.join(format!("{CONVERSATION}.jsonl"));
    let turns = std::fs::read_to_string(&main).unwrap().lines().filter(|l| l.contains("\"turn_ended\"")).count();
    let spans = collector.wait_for(turns + 1, Duration::from_secs(30));
    let roots = check_subagent_nesting(&spans, CONVERSATION, "transcripts");
    assert!(roots >= turns, "every turn of the main transcript: {roots} < {turns}");
}

/// A hook log whose second turn is still open when its conversation ends.
fn ends_inside_a_turn() -> String {
    let p = |event: &str, gen: &str, extra: &str| {
        format!(
            r#"{{"hook_event_name":"{event}","conversation_id":"conv-open","generation_id":"{gen}","cursor_version":"3.7.19"{extra}}}"#
        )
    };
    [
        p("beforeSubmitPrompt", "g1", r#","prompt":"first""#),
        p("stop", "g1", r#","status":"completed""#),
        p("beforeSubmitPrompt", "g2", r#","prompt":"second""#),
        p("afterAgentThought", "g2", r#","text":"thinking""#),
        p("sessionEnd", "", r#","reason":"window_close""#),
    ]
    .join("\n")
}

#[test]
fn a_turn_still_open_when_its_conversation_ends_is_closed_and_marked_incomplete() {
    let Some(agent) = rotel_agent() else { return };
    let collector = Collector::start(&agent);
    let dir = common::tempdir();
    let hooks = dir.join("open-turn.jsonl");
    std::fs::write(&hooks, ends_inside_a_turn()).unwrap();
    // And a CLI run whose stream ends without its result.
    let cli = dir.join("no-result.jsonl");
    let demo = std::fs::read_to_string(common::example("demo.jsonl")).unwrap();
    let cut: Vec<&str> = demo.lines().filter(|l| !l.contains(r#""type":"result""#)).collect();
    std::fs::write(&cli, cut.join("\n")).unwrap();
    for file in [&hooks, &cli] {
        replay(&collector, &[file.to_str().unwrap()]);
    }
    let spans = collector.wait_for(2 + 1 + 7, Duration::from_secs(30));
    let runs = op(&spans, "invoke_agent");
    let by_conv = |c: &str| runs.iter().filter(|r| r.attr("gen_ai.conversation.id") == Some(c)).collect::<Vec<_>>();
    let hook_runs = by_conv("conv-open");
    assert_eq!(hook_runs.len(), 2);
    let kinds: Vec<Option<&str>> = hook_runs.iter().map(|r| r.attr("error.type")).collect();
    assert!(kinds.contains(&None) && kinds.contains(&Some("incomplete")), "{kinds:?}");
    let open = hook_runs.iter().find(|r| r.attr("error.type").is_some()).unwrap();
    assert_eq!(open.status, "STATUS_CODE_ERROR");
    let cli_runs = by_conv("5f1c2a9e-7b3d-4e21-9c8a-2d6f0e4b1a77");
    assert_eq!(cli_runs.len(), 1);
    assert_eq!(cli_runs[0].attr("error.type"), Some("incomplete"), "a stream that ends inside its run");
}

#[test]
fn the_genai_client_metrics_reach_the_collector() {
    let Some(file) = toolstream_testkit::fixture(HOOK_LOG) else { return };
    let Some(agent) = rotel_agent() else { return };
    let (turns, calls) = hook_log_holds(&file);
    let collector = Collector::start_with_metrics(&agent);
    replay(&collector, &[file.to_str().unwrap()]);
    collector.wait_for(turns + calls, Duration::from_secs(30));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let count = |points: &[common::otel::Point], metric: &str, op: &str| -> u64 {
        points
            .iter()
            .filter(|p| p.metric == metric && p.attrs.get("gen_ai.operation.name").map(String::as_str) == Some(op))
            .map(|p| p.count)
            .sum()
    };
    let mut points = collector.metrics();
    while count(&points, "gen_ai.client.operation.duration", "invoke_agent") < turns as u64
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(200));
        points = collector.metrics();
    }
    let duration = "gen_ai.client.operation.duration";
    assert_eq!(count(&points, duration, "invoke_agent"), turns as u64, "one run duration per turn");
    assert_eq!(count(&points, duration, "execute_tool"), calls as u64, "one call duration per call");
    assert!(points.iter().filter(|p| p.metric == duration).all(|p| p.unit == "s"));
    let usage: Vec<&common::otel::Point> = points.iter().filter(|p| p.metric == "gen_ai.client.token.usage").collect();
    assert!(!usage.is_empty() && usage.iter().all(|p| p.unit == "{token}"));
    let types: HashSet<&str> =
        usage.iter().filter_map(|p| p.attrs.get("gen_ai.token.type")).map(String::as_str).collect();
    assert_eq!(types, HashSet::from(["input", "output"]));
    let input: f64 = usage.iter().filter(|p| p.attrs["gen_ai.token.type"] == "input").map(|p| p.value).sum();
    assert!(input > 0.0, "the turns' input tokens");
    // The failed call's duration carries its error type.
    assert!(points.iter().any(|p| p.metric == duration && p.attrs.contains_key("error.type")));
}
