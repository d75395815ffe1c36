//! `toolstream bench`: generate (or take) a recorded high-volume corpus, then measure every stage
//! on the same bytes in one run, each in its own child process, and report MB/s, events/s, each
//! stage's ratio to the parse floor, and peak RSS. `--sink otlp=URL` adds a stage into that OTLP
//! sink (the user's collector) and its spans per second. `--json` ends with one JSON object.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ByteSize;
use crate::bench::corpus::{self, CorpusSpec};
use crate::bench::measure::{self, run_stage, Measurement, Stage};
use crate::bench::otlp::bench_spec;
use crate::bench::progress::Progress;
use toolstream_engine::sinks::SinkSpec;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Size of the corpus to generate (ignored with --input).
    #[arg(long, value_name = "SIZE", default_value = "200MB")]
    pub size: ByteSize,
    /// Measure this stream-json file instead of a generated corpus.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Recorded runs to build the corpus from (default: ../shared/fixtures/cursor-cli when it
    /// exists, else ./examples).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Concurrent sessions interleaved in the corpus.
    #[arg(long, default_value_t = 64)]
    pub sessions: usize,
    /// Seed of the corpus generator (same seed, same bytes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stages to measure (default: all but `e2e-cursor-db`, and `e2e-otlp` unless `--sink`).
    #[arg(long = "stage", value_enum)]
    pub stages: Vec<Stage>,
    /// Measure every stage this many times, the stages taking turns; each stage reports its
    /// fastest run (the one least disturbed by the rest of the machine) and its highest RSS.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Also measure end to end into this OTLP sink (`otlp=URL` or `otlp-grpc=URL`: a collector
    /// you run; bench starts none), with spans per second and the spans it lost. Measured with
    /// `when_full=block`, so the engine drops nothing on the way.
    #[arg(long = "sink", value_name = "SPEC")]
    pub sink: Option<SinkSpec>,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
    /// Keep the generated corpus at this path.
    #[arg(long, value_name = "FILE")]
    pub keep_corpus: Option<PathBuf>,
    /// Internal: run one stage in this process and print its measurement as JSON.
    #[arg(long, hide = true, value_enum)]
    pub child_stage: Option<Stage>,
    /// Internal: scratch directory for a child stage's output files.
    #[arg(long, hide = true)]
    pub scratch: Option<PathBuf>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<i32> {
    if let Some(stage) = args.child_stage {
        return run_child(stage, &args);
    }
    // A missing or unreadable input is reported once, here, not by every child stage.
    if let Some(input) = &args.input {
        measure::check_input(input)?;
    }
    if let Some(spec) = &args.sink {
        bench_spec(spec).map_err(anyhow::Error::msg)?;
    }
    if args.sink.is_none() && args.stages.contains(&Stage::E2eOtlp) {
        bail!("--stage e2e-otlp needs the OTLP sink to measure: --sink otlp=URL");
    }
    let scratch = std::env::temp_dir().join(format!("toolstream-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let mut progress = Progress::stderr();
    let result = measure_all(&args, &scratch, &mut progress);
    progress.finish();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// What a child stage prints on stdout: its measurement, or why it failed.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ChildReport {
    Measured(Measurement),
    Failed { error: String },
}

/// Run one stage in this process and print its report as one JSON line (the parent reads it).
fn run_child(stage: Stage, args: &BenchArgs) -> anyhow::Result<i32> {
    let input = args.input.as_deref().context("--child-stage needs --input")?;
    let scratch = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let (report, code) = match run_stage(stage, input, &scratch, args.sink.as_ref()) {
        Ok(m) => (ChildReport::Measured(m), 0),
        Err(e) => (ChildReport::Failed { error: e.to_string() }, 1),
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(code)
}

fn measure_all(args: &BenchArgs, scratch: &Path, progress: &mut Progress<std::io::Stderr>) -> anyhow::Result<i32> {
    let corpus_path = match &args.input {
        Some(p) => p.clone(),
        None => {
            let path = args.keep_corpus.clone().unwrap_or_else(|| scratch.join("corpus.jsonl"));
            generate_corpus(args, &path, progress)?;
            path
        }
    };
    let stages: Vec<Stage> = if args.stages.is_empty() {
        Stage::all().into_iter().chain(args.sink.as_ref().map(|_| Stage::E2eOtlp)).collect()
    } else {
        args.stages.clone()
    };
    let exe = std::env::current_exe()?;
    let mut results: Vec<Measurement> = Vec::new();
    progress.start_measuring(args.repeat.saturating_mul(u32::try_from(stages.len()).unwrap_or(u32::MAX)));
    for round in 1..=args.repeat {
        for (i, &stage) in stages.iter().enumerate() {
            progress.measuring(stage, round, args.repeat);
            let m = measure_child(&exe, stage, &corpus_path, scratch, args.sink.as_ref())?;
            progress.measured(&m, round, args.repeat);
            match results.get_mut(i) {
                Some(best) => best.merge(&m),
                None => results.push(m),
            }
        }
    }
    progress.finish();
    print_report(&results, args.repeat, args.json);
    Ok(0)
}

/// Run one stage in a child process and read its measurement.
fn measure_child(
    exe: &Path,
    stage: Stage,
    corpus: &Path,
    scratch: &Path,
    sink: Option<&SinkSpec>,
) -> anyhow::Result<Measurement> {
    let mut cmd = Command::new(exe);
    cmd.arg("bench");
    if let Some(spec) = sink.filter(|_| stage == Stage::E2eOtlp) {
        cmd.arg("--sink").arg(spec.to_string());
    }
    let out = cmd
        .arg("--child-stage")
        .arg(stage.name())
        .arg("--input")
        .arg(corpus)
        .arg("--scratch")
        .arg(scratch)
        .output()
        .with_context(|| format!("starting stage {}", stage.name()))?;
    match serde_json::from_slice(out.stdout.trim_ascii()) {
        Ok(ChildReport::Measured(m)) if out.status.success() => Ok(m),
        Ok(ChildReport::Failed { error }) => bail!("stage {} failed: {error}", stage.name()),
        // It died before it could report (a panic, a signal): what it said is all there is.
        _ => bail!(
            "stage {} failed ({}): {}",
            stage.name(),
            out.status,
            String::from_utf8_lossy(out.stderr.trim_ascii())
        ),
    }
}

fn generate_corpus(args: &BenchArgs, path: &Path, progress: &mut Progress<std::io::Stderr>) -> anyhow::Result<()> {
    let dir = match &args.templates {
        Some(d) => d.clone(),
        None => {
            let shared = PathBuf::from("../shared/fixtures/cursor-cli");
            if shared.is_dir() {
                shared
            } else {
                PathBuf::from("examples")
            }
        }
    };
    let templates = corpus::templates_from_dir(&dir).with_context(|| format!("reading runs from {}", dir.display()))?;
    if templates.is_empty() {
        bail!("no recorded stream-json runs in {}", dir.display());
    }
    progress.note(&format!(
        "generating a {} corpus from {} recorded runs ({} KiB) in {}, {} concurrent sessions, seed {}…",
        args.size,
        templates.len(),
        corpus::template_bytes(&templates) / 1024,
        dir.display(),
        args.sessions,
        args.seed
    ));
    let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let target = args.size.0;
    let mut out = Counting {
        inner: BufWriter::with_capacity(1 << 20, file),
        written: 0,
        reported: 0,
        on_progress: |written| progress.generating(written, target),
    };
    let spec = CorpusSpec { target_bytes: target, concurrency: args.sessions, seed: args.seed };
    let stats = corpus::generate(&templates, &spec, &mut out).with_context(|| format!("writing {}", path.display()))?;
    out.flush().with_context(|| format!("writing {}", path.display()))?;
    drop(out);
    progress.note(&format!(
        "corpus: {} MB, {} lines, {} runs, {} calls",
        stats.bytes / 1_000_000,
        stats.lines,
        stats.runs,
        stats.calls
    ));
    Ok(())
}

/// A writer that reports the bytes written so far, every [`Counting::STEP`] bytes.
struct Counting<W: Write, F: FnMut(u64)> {
    inner: W,
    written: u64,
    reported: u64,
    on_progress: F,
}

impl<W: Write, F: FnMut(u64)> Counting<W, F> {
    const STEP: u64 = 1 << 20;
}

impl<W: Write, F: FnMut(u64)> Write for Counting<W, F> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        if self.written >= self.reported + Self::STEP {
            self.reported = self.written;
            (self.on_progress)(self.written);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn print_report(results: &[Measurement], repeat: u32, json: bool) {
    let floor = results.iter().find(|m| m.stage == Stage::Floor).map(Measurement::mbps);
    if repeat > 1 {
        println!("fastest of {repeat} runs per stage, the stages taking turns; peak RSS is the highest seen");
    }
    println!("{:<34} {:>10} {:>14} {:>9} {:>10} {:>8}", "stage", "MB/s", "events/s", "× floor", "peak RSS", "seconds");
    for m in results {
        let ratio = floor.map_or("-".to_owned(), |f| format!("{:.2}", m.mbps() / f));
        let events = if m.events == 0 { "-".to_owned() } else { format!("{:.0}", m.events_per_s()) };
        println!(
            "{:<34} {:>10.1} {:>14} {:>9} {:>7} MiB {:>8.2}",
            m.stage.label(),
            m.mbps(),
            events,
            ratio,
            m.peak_rss_kib / 1024,
            m.seconds
        );
    }
    let otlp = results.iter().find(|m| m.stage == Stage::E2eOtlp);
    if let (Some(m), Some(o), Some(rate)) =
        (otlp, otlp.and_then(|m| m.otlp.as_ref()), otlp.and_then(Measurement::spans_per_s))
    {
        println!(
            "{}: {rate:.0} spans/s ({} runs + calls exported in {:.2} s), {} spans lost",
            o.sink, o.spans, m.seconds, o.spans_lost
        );
    }
    if json {
        let get = |s: Stage| results.iter().find(|m| m.stage == s);
        let mbps = |s: Stage| get(s).map(Measurement::mbps);
        let e2e_events = get(Stage::E2eNull).or(get(Stage::Decode)).map(Measurement::events_per_s);
        let peak = results.iter().filter(|m| m.stage != Stage::Floor).map(|m| m.peak_rss_kib).max().unwrap_or(0);
        let obj = json!({
            "floor_mbps": mbps(Stage::Floor),
            "decode_mbps": mbps(Stage::Decode),
            "e2e_null_mbps": mbps(Stage::E2eNull),
            "e2e_jsonl_mbps": mbps(Stage::E2eJsonl),
            "e2e_pi_session_mbps": mbps(Stage::E2ePiSession),
            "e2e_cursor_db_mbps": mbps(Stage::E2eCursorDb),
            "e2e_otlp_mbps": mbps(Stage::E2eOtlp),
            "otlp_sink": otlp.and_then(|m| m.otlp.as_ref()).map(|o| o.sink.clone()),
            "otlp_spans": otlp.and_then(|m| m.otlp.as_ref()).map(|o| o.spans),
            "otlp_spans_per_s": otlp.and_then(Measurement::spans_per_s),
            "otlp_spans_lost": otlp.and_then(|m| m.otlp.as_ref()).map(|o| o.spans_lost),
            "events_per_s": e2e_events,
            "peak_rss_mib": peak as f64 / 1024.0,
            "bytes": results.first().map(|m| m.bytes),
            "repeat": repeat,
            "stages": results,
        });
        println!("{obj}");
    }
}
