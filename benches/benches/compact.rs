//! Criterion bench of shell-output compaction (#14): a generated `cargo test` log with 47 failing
//! tests (toolstream_testkit::synthetic, deterministic) from 50 KB to 5 MB, in process (linear
//! scaling: the throughput should stay flat across sizes), then end to end through the CLIs —
//! `toolstream wrap -- cargo test` and, when its `dist/cli/main.js` is named by
//! TOOLSTREAM_BENCH_TOKENJUICE (and `node` runs), `tokenjuice wrap -- cargo test` — on the same
//! log, printed by a stand-in `cargo` script (tokenjuice on the smallest size only: see
//! TOKENJUICE_MAX_BYTES). Build the binary first: `cargo build --release`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use toolstream_actors::compact::{compact, Request};
use toolstream_testkit::synthetic::cargo_test_log;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SIZES: &[(&str, usize)] = &[("50KB", 50 << 10), ("500KB", 500 << 10), ("5MB", 5 << 20)];
/// tokenjuice 0.8.5 took about 7 s per 50 KB run on this machine and had not finished one
/// 500 KB run after 15 minutes (CPU-bound), so it is measured on the smallest size only.
const TOKENJUICE_MAX_BYTES: usize = 50 << 10;

fn bench_in_process(c: &mut Criterion) {
    let mut g = c.benchmark_group("compact/cargo-test-47-failures");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for &(name, size) in SIZES {
        let (log, names) = cargo_test_log(size, 47);
        let out =
            compact(&Request { command: Some("cargo test"), output: &log, exit_code: Some(101), ..Request::default() });
        assert!(names.iter().all(|n| out.text.contains(n.as_str())), "a failing test was lost at {name}");
        eprintln!("{name}: {} bytes -> {} chars (ratio {:.4})", log.len(), out.text.len(), out.trace.ratio);
        g.throughput(Throughput::Bytes(log.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), &log, |b, log| {
            b.iter(|| {
                compact(&Request {
                    command: Some("cargo test"),
                    output: black_box(log),
                    exit_code: Some(101),
                    ..Request::default()
                })
            })
        });
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

fn run_cli(program: &str, args: &[&str], path: &str, log: &Path) {
    let status = Command::new(program)
        .args(args)
        .args(["wrap", "--", "cargo", "test"])
        .env("PATH", path)
        .env("TS_LOG", log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(101));
}

fn bench_cli(c: &mut Criterion) {
    let toolstream = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/toolstream");
    if !toolstream.exists() {
        eprintln!("note: {} is absent (cargo build --release); the CLI comparison is skipped", toolstream.display());
        return;
    }
    let tokenjuice = std::env::var("TOOLSTREAM_BENCH_TOKENJUICE").ok().filter(|p| {
        let runs = Command::new("node").arg(p).arg("--version").stdout(Stdio::null()).status();
        runs.is_ok_and(|s| s.success())
    });
    if tokenjuice.is_none() {
        eprintln!(
            "note: TOOLSTREAM_BENCH_TOKENJUICE does not name a runnable tokenjuice main.js; measuring toolstream alone"
        );
    }
    let dir = std::env::temp_dir().join(format!("toolstream-bench-compact-{}", std::process::id()));
    let bin = fake_cargo(&dir);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut g = c.benchmark_group("wrap-cli/cargo-test-47-failures");
    g.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_millis(500));
    for &(name, size) in SIZES {
        let (log, _) = cargo_test_log(size, 47);
        let file = dir.join(format!("{name}.log"));
        std::fs::write(&file, &log).unwrap();
        g.throughput(Throughput::Bytes(log.len() as u64));
        g.bench_function(BenchmarkId::new("toolstream", name), |b| {
            b.iter(|| run_cli(toolstream.to_str().unwrap(), &[], &path, &file))
        });
        if let Some(main) = tokenjuice.as_ref().filter(|_| size <= TOKENJUICE_MAX_BYTES) {
            g.bench_function(BenchmarkId::new("tokenjuice", name), |b| {
                b.iter(|| run_cli("node", &[main], &path, &file))
            });
        }
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench_in_process, bench_cli);
criterion_main!(benches);
