//! Criterion benches: decoding, each stage's pure core over a decoded stream, card building and
//! the scrubber.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::value::RawValue;
use toolstream_actors::intake::IntakeCore;
use toolstream_actors::item::{Item, RunOutput};
use toolstream_actors::lifecycle::LifecycleCore;
use toolstream_actors::present::card::{build_card, CardContext};
use toolstream_actors::present::scrub::Scrubber;
use toolstream_actors::run::Coordinator;
use toolstream_actors::shell::ShellCore;
use toolstream_actors::usage::UsageCore;
use toolstream_engine::decode::framing::LineReader;
use toolstream_engine::decode::Decoder;
use toolstream_schemas::{CallIdent, InputEvent, OutputEvent, ResultStatus, Tool, ToolEvent, ToolKind, ToolResult};

/// The allocator the `toolstream` binary uses, so these numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn decode_all(bytes: &[u8]) -> Vec<InputEvent> {
    let mut reader = LineReader::new(bytes);
    let mut decoder = Decoder::new("bench", None);
    let mut out = Vec::new();
    while let Some(frame) = reader.next_frame().unwrap() {
        let _ = decoder.decode_frame(frame, &mut out);
    }
    out
}

fn items(bytes: &[u8]) -> Vec<Item> {
    decode_all(bytes).into_iter().map(Item::Input).collect()
}

/// The items as intake hands them to the stages after it (calls matched and identified).
fn matched(bytes: &[u8]) -> Vec<Item> {
    let mut intake = IntakeCore::default();
    let mut out = Vec::new();
    for i in items(bytes) {
        intake.push(i, &mut out);
    }
    out
}

fn bench_decode(c: &mut Criterion) {
    let corpus = toolstream_benches::corpus(4 << 20);
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(corpus.len() as u64));
    g.bench_function("stream-json to canonical events", |b| b.iter(|| black_box(decode_all(&corpus).len())));
    g.finish();
}

/// Runs a stage over inputs produced fresh for every iteration (stages consume their input).
fn bench_stage<I, S: FnMut(I, &mut Vec<O>), O>(
    c: &mut Criterion,
    name: &str,
    count: u64,
    make_input: impl Fn() -> Vec<I>,
    mut make_stage: impl FnMut() -> S,
) {
    let mut g = c.benchmark_group("stages");
    g.throughput(Throughput::Elements(count));
    g.bench_function(name, |b| {
        b.iter_batched(
            &make_input,
            |input| {
                let mut stage = make_stage();
                let mut out = Vec::with_capacity(input.len());
                for i in input {
                    stage(i, &mut out);
                }
                black_box(out.len())
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn bench_stages(c: &mut Criterion) {
    let corpus = toolstream_benches::corpus(1 << 20);
    let n = items(&corpus).len() as u64;
    bench_stage(
        c,
        "intake",
        n,
        || items(&corpus),
        || {
            let mut core = IntakeCore::default();
            move |i, out: &mut Vec<Item>| core.push(i, out)
        },
    );
    bench_stage(
        c,
        "shell delta",
        n,
        || matched(&corpus),
        || {
            let mut core = ShellCore::default();
            move |i, out: &mut Vec<Item>| core.push(i, out)
        },
    );
    bench_stage(
        c,
        "lifecycle",
        n,
        || matched(&corpus),
        || {
            let mut core = LifecycleCore::default();
            move |i, out: &mut Vec<Item>| core.push(i, out)
        },
    );
    bench_stage(
        c,
        "run (incl. card building)",
        n,
        || matched(&corpus),
        || {
            let mut core = Coordinator::default();
            move |i, out: &mut Vec<RunOutput>| core.push(i, out)
        },
    );
    let outputs = || {
        let mut run = Coordinator::default();
        let mut out = Vec::new();
        for i in matched(&corpus) {
            run.push(i, &mut out);
        }
        out
    };
    let m = outputs().len() as u64;
    bench_stage(c, "usage", m, outputs, || {
        let mut core = UsageCore::default();
        move |e, out: &mut Vec<OutputEvent>| core.push(e, out)
    });
}

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

fn completed(kind: ToolKind, args: &str, value: &str) -> ToolEvent {
    ToolEvent {
        call_id: "call-1\nfc_1".into(),
        tool: Tool::Known(kind),
        wire_name: kind.spec().cli_key.into(),
        args: Some(std::sync::Arc::new(toolstream_schemas::CallArgs::new(raw(args)))),
        result: Some(ToolResult::new(ResultStatus::Success, raw(value))),
        model_call_id: None,
        started_at_ms: None,
        completed_at_ms: None,
        openai_call: None,
        reported_call_id: None,
        call: CallIdent::default(),
        extra: vec![],
    }
}

fn bench_cards(c: &mut Criterion) {
    let scrubber = Scrubber::new(Some("sk-live-bench".into()));
    let ctx = CardContext {
        scrubber: &scrubber,
        cwd: Some("/home/dev/shop"),
        turn: 0,
        replay_id: "r".into(),
        keep_recorded: false,
        compact: Default::default(),
    };
    let calls = [
        (
            "shell",
            completed(
                ToolKind::Shell,
                r#"{"command":"npm test -- --silent","workingDirectory":"","timeout":120000}"#,
                r#"{"command":"npm test","exitCode":1,"stdout":"FAIL src/cart.test.ts\n  x applies coupon after tax (4 ms)\n\nTests: 1 failed, 11 passed, 12 total","stderr":"npm ERR! Test failed.","executionTime":2310}"#,
            ),
        ),
        (
            "read",
            completed(
                ToolKind::Read,
                r#"{"path":"/home/dev/shop/src/price.ts"}"#,
                r#"{"content":"export function total(cents: number, rate: number): number {\n  return Math.round(cents * rate) / 100;\n}\n","totalLines":3}"#,
            ),
        ),
        (
            "edit",
            completed(
                ToolKind::Edit,
                r#"{"path":"/home/dev/shop/src/price.ts","streamContent":"x"}"#,
                r#"{"path":"/home/dev/shop/src/price.ts","linesAdded":1,"linesRemoved":1,"diffString":"@@ -11,3 +11,3 @@\n export function total() {\n-  return a;\n+  return b;\n }"}"#,
            ),
        ),
    ];
    let mut g = c.benchmark_group("card building");
    g.throughput(Throughput::Elements(1));
    for (name, ev) in &calls {
        g.bench_function(*name, |b| b.iter(|| black_box(build_card(ctx.clone(), black_box(ev)))));
    }
    g.finish();
}

fn json_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        serde_json::Value::Object(m) => m.values().for_each(|x| json_strings(x, out)),
        _ => {}
    }
}

/// The scrubber on typical text: every string of the recorded Cursor CLI captures (what the
/// pipeline hands it: commands, outputs, file contents, ids), a 64 KB `cargo test` log, this
/// crate's own source, and a `.env` full of secrets (every rule at work).
fn bench_scrub(c: &mut Criterion) {
    let scrubber = Scrubber::new(Some("sk-live-bench".into()));
    let mut captures = Vec::new();
    for f in toolstream_testkit::fixture_files("cursor-cli", "jsonl") {
        for l in std::fs::read_to_string(f).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l) {
                json_strings(&v, &mut captures);
            }
        }
    }
    // Without the captures the bench would time an empty loop and report picoseconds.
    assert!(
        !captures.is_empty(),
        "no recorded captures under {}: the scrub bench needs ../shared/fixtures/cursor-cli",
        toolstream_testkit::shared_dir().display()
    );
    let env =
        "AWS_ACCESS_KEY_ID=AKIAUJZDE8GXD6NCF10E\nAWS_SECRET_ACCESS_KEY=EVHzc0X0AWIRh+JUqBlIFXZ53Ncqe28/ajY75FnC\n\
               GITHUB_TOKEN=ghp_jIhKtJ0RlgLKOmxgJTeKdNnFRIBXuDL7Dxtp\nDB_PASSWORD=hunter2\nPORT=8080\n\
               STRIPE_KEY=sk_live_aEdFrRgSnRFsTHsDDDXh5Jmt\nDATABASE_URL=postgres://app:pw@db:5432/app\n"
            .repeat(8);
    let texts: [(&str, Vec<String>); 4] = [
        ("recorded captures", captures),
        ("cargo test log", vec![toolstream_testkit::synthetic::cargo_test_log(64 * 1024, 3).0]),
        ("rust source", vec![include_str!("engine.rs").to_owned()]),
        (".env with secrets", vec![env]),
    ];
    let mut g = c.benchmark_group("scrub");
    for (name, texts) in &texts {
        g.throughput(Throughput::Bytes(texts.iter().map(|t| t.len() as u64).sum()));
        g.bench_function(*name, |b| {
            b.iter(|| texts.iter().map(|t| black_box(scrubber.scrub(black_box(t))).len()).sum::<usize>())
        });
    }
    g.finish();
}

criterion_group!(benches, bench_decode, bench_stages, bench_cards, bench_scrub);
criterion_main!(benches);
