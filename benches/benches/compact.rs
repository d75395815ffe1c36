//! Benchmark of shell-output compaction (#14, #24) — a measurement, not a test. Inputs are
//! generated (toolstream_testkit::synthetic, deterministic): a `cargo test` log with 47 failing
//! tests and a log no rule names (timestamped lines, a few warnings), from 50 KB to 5 MB.
//!
//! 1. Criterion, in process: `compact()` with the command named (`cargo test`), recognised by
//!    content (`cat test.log`), and the generic reducer — the throughput should stay flat across
//!    sizes (linear).
//! 2. Side by side, end to end (process start included), printed as a Markdown table: `toolstream
//!    compact --command 'cargo test'`, `toolstream wrap -- cargo test` (a stand-in `cargo` prints
//!    the log) and `toolstream wrap -- sh -c 'cat test.log'`; and, when TOOLSTREAM_BENCH_TOKENJUICE
//!    names tokenjuice's `dist/cli/main.js` (run with TOOLSTREAM_BENCH_NODE, default `node`),
//!    tokenjuice 0.8.5's `wrap -- cargo test` and `reduce-json` on the same log, once each,
//!    stopped after TOOLSTREAM_BENCH_TOKENJUICE_TIMEOUT seconds (default 300). A 50 MB row,
//!    toolstream alone, shows the time growing in step with the size.
//!
//! `scripts/bench-compact` installs tokenjuice and Node project-locally and runs this. Build the
//! release binary first: `cargo build --release`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use toolstream_actors::compact::{compact, Request};
use toolstream_testkit::synthetic::cargo_test_log;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SIZES: &[(&str, usize)] = &[("50KB", 50 << 10), ("500KB", 500 << 10), ("5MB", 5 << 20)];
/// The end-to-end table adds a log ten times the largest above, for toolstream alone: its time
/// beside the 5 MB row shows whether compaction stays linear.
const LARGE: (&str, usize) = ("50MB", 50 << 20);
/// Runs of each toolstream command per size in the side-by-side table (the median is shown).
const CLI_RUNS: usize = 5;

/// A log no rule names, of about `bytes`: timestamped progress lines of one shape, with a
/// warning and a distinct line now and then.
fn generic_log(bytes: usize) -> String {
    let mut log = String::with_capacity(bytes + 200);
    let mut i = 0usize;
    while log.len() < bytes {
        log.push_str(&format!(
            "[2026-05-01T10:{:02}:{:02}Z] synced record_{i} from 'db-{}' in {}ms\n",
            i / 60 % 60,
            i % 60,
            i % 7,
            i % 13
        ));
        if i % 5_000 == 4_999 {
            log.push_str(&format!("WARNING: replica lag {} s on db-{}\ncheckpoint {i} written\n", i % 9, i % 7));
        }
        i += 1;
    }
    log
}

fn bench_in_process(c: &mut Criterion) {
    let mut g = c.benchmark_group("compact/in-process");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for &(name, size) in SIZES {
        let (log, names) = cargo_test_log(size, 47);
        let generic = generic_log(size);
        for (label, command, text) in [
            ("cargo-test", "cargo test", &log),
            ("cat-cargo-log", "cat test.log", &log),
            ("generic", "./sync", &generic),
        ] {
            let req = Request { command: Some(command), output: text, exit_code: Some(101), ..Request::default() };
            let out = compact(&req);
            if label != "generic" {
                assert!(names.iter().all(|n| out.text.contains(n.as_str())), "a failing test was lost at {name}");
            }
            eprintln!(
                "{label} {name}: {} bytes -> {} chars (ratio {:.4})",
                text.len(),
                out.text.len(),
                out.trace.ratio
            );
            g.throughput(Throughput::Bytes(text.len() as u64));
            g.bench_with_input(BenchmarkId::new(label, name), &req, |b, req| b.iter(|| compact(black_box(req))));
        }
    }
    g.finish();
}

/// A folder with a `cargo` script that prints `$TS_LOG` and exits 101.
fn fake_cargo(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("cargo");
    std::fs::write(&script, "#!/bin/sh\ncat \"$TS_LOG\"\nexit 101\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// One run of `program args…` (stdout discarded, `stdin` piped in); its wall time, or `None`
/// when it was stopped at `limit`.
fn time_once(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&Path>,
    limit: Duration,
) -> Option<Duration> {
    let mut cmd = Command::new(program);
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(match stdin {
        Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
        None => Stdio::null(),
    });
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The median of `CLI_RUNS` runs.
fn median(program: &str, args: &[&str], env: &[(&str, &str)], stdin: Option<&Path>) -> Duration {
    let mut times: Vec<Duration> = (0..CLI_RUNS)
        .map(|_| time_once(program, args, env, stdin, Duration::from_secs(600)).expect("toolstream finishes"))
        .collect();
    times.sort();
    times[CLI_RUNS / 2]
}

fn cell(bytes: usize, t: Option<Duration>, limit: Duration) -> String {
    match t {
        Some(t) => format!("{:.0} ms ({:.1} MB/s)", t.as_secs_f64() * 1e3, bytes as f64 / 1e6 / t.as_secs_f64()),
        None => format!("stopped after {} s", limit.as_secs()),
    }
}

fn side_by_side() {
    let toolstream = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/toolstream");
    if !toolstream.exists() {
        eprintln!(
            "note: {} is absent (cargo build --release); the side-by-side table is skipped",
            toolstream.display()
        );
        return;
    }
    let toolstream = toolstream.to_str().unwrap();
    let node = std::env::var("TOOLSTREAM_BENCH_NODE").unwrap_or_else(|_| "node".to_owned());
    let tokenjuice = std::env::var("TOOLSTREAM_BENCH_TOKENJUICE").ok().filter(|main| {
        let runs = Command::new(&node).arg(main).arg("--version").stdout(Stdio::null()).status();
        runs.is_ok_and(|s| s.success())
    });
    if tokenjuice.is_none() {
        eprintln!("note: TOOLSTREAM_BENCH_TOKENJUICE names no runnable tokenjuice main.js; measuring toolstream alone");
    }
    let limit = Duration::from_secs(
        std::env::var("TOOLSTREAM_BENCH_TOKENJUICE_TIMEOUT").ok().and_then(|s| s.parse().ok()).unwrap_or(300),
    );
    let dir = std::env::temp_dir().join(format!("toolstream-bench-compact-{}", std::process::id()));
    let bin = fake_cargo(&dir);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut rows = Vec::new();
    for &(name, size) in SIZES.iter().chain([&LARGE]) {
        let (log, _) = cargo_test_log(size, 47);
        let file = dir.join(format!("{name}.log"));
        std::fs::write(&file, &log).unwrap();
        let file_s = file.to_str().unwrap();
        let env = [("PATH", path.as_str()), ("TS_LOG", file_s)];
        let bytes = log.len();
        let compact_cli =
            median(toolstream, &["compact", "--command", "cargo test", "--exit-code", "101", file_s], &[], None);
        let wrap = median(toolstream, &["wrap", "--", "cargo", "test"], &env, None);
        let wrap_cat = median(toolstream, &["wrap", "--", "sh", "-c", &format!("cat '{file_s}'")], &[], None);
        let mut row = format!(
            "| {name} ({bytes} bytes) | {} | {} | {} |",
            cell(bytes, Some(compact_cli), limit),
            cell(bytes, Some(wrap), limit),
            cell(bytes, Some(wrap_cat), limit)
        );
        if size == LARGE.1 {
            if tokenjuice.is_some() {
                row.push_str(" not run | not run |");
            }
        } else if let Some(main) = &tokenjuice {
            let json = dir.join(format!("{name}.json"));
            let input = serde_json::json!({
                "toolName": "exec", "command": "cargo test", "argv": ["cargo", "test"], "combinedText": log, "exitCode": 101
            });
            std::fs::write(&json, input.to_string()).unwrap();
            let tj_wrap = time_once(&node, &[main, "wrap", "--", "cargo", "test"], &env, None, limit);
            let tj_reduce = time_once(&node, &[main, "reduce-json", json.to_str().unwrap()], &[], None, limit);
            row.push_str(&format!(" {} | {} |", cell(bytes, tj_wrap, limit), cell(bytes, tj_reduce, limit)));
        }
        eprintln!("{row}");
        rows.push(row);
    }
    let mut header =
        "| log | toolstream compact | toolstream wrap -- cargo test | toolstream wrap -- sh -c 'cat log' |".to_owned();
    let mut rule = "| --- | ---: | ---: | ---: |".to_owned();
    if tokenjuice.is_some() {
        header.push_str(" tokenjuice 0.8.5 wrap | tokenjuice 0.8.5 reduce-json |");
        rule.push_str(" ---: | ---: |");
    }
    println!("\nEnd to end, median of {CLI_RUNS} runs for toolstream, one run for tokenjuice:\n{header}\n{rule}");
    for row in rows {
        println!("{row}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench_in_process);

fn main() {
    benches();
    side_by_side();
    Criterion::default().configure_from_args().final_summary();
}
