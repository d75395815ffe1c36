//! Synthetic inputs generated in code, deterministically (no fixture file needed): a large
//! `cargo test` log with a chosen number of failing tests, for the compaction tests and bench.

/// A `cargo test` log of about `target_bytes` bytes whose `failing` tests fail, spread evenly
/// over the run, with cargo's `failures:` details and name list and its `test result:` line.
/// Returns the log and the failing test names, in order.
pub fn cargo_test_log(target_bytes: usize, failing: usize) -> (String, Vec<String>) {
    // Each result line is 44 bytes (`test ` + a 31-char name + ` ... ok\n`); the failure
    // details are small next to them.
    let total = (target_bytes / 44).max(failing + 1);
    let step = total / failing.max(1);
    let name = |i: usize| format!("module_{:03}::tests::case_{i:07}", i % 97);
    let is_failing = |i: usize| failing > 0 && i % step == step / 2 && i / step < failing;

    let mut log = String::with_capacity(target_bytes + 4096);
    log.push_str("   Compiling synthetic v0.1.0 (/tmp/synthetic)\n");
    log.push_str("    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.20s\n");
    log.push_str("     Running unittests src/lib.rs (target/debug/deps/synthetic-0123456789abcdef)\n\n");
    log.push_str(&format!("running {total} tests\n"));
    let mut names = Vec::with_capacity(failing);
    for i in 0..total {
        let status = if is_failing(i) {
            names.push(name(i));
            "FAILED"
        } else {
            "ok"
        };
        log.push_str(&format!("test {} ... {status}\n", name(i)));
    }
    log.push_str("\nfailures:\n\n");
    for (k, n) in names.iter().enumerate() {
        log.push_str(&format!(
            "---- {n} stdout ----\nthread '{n}' panicked at src/module_{:03}.rs:{}:9:\nassertion `left == right` failed\n  left: {k}\n right: {}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n",
            k % 97,
            10 + k,
            k + 1
        ));
    }
    log.push_str("\nfailures:\n");
    for n in &names {
        log.push_str(&format!("    {n}\n"));
    }
    log.push_str(&format!(
        "\ntest result: FAILED. {} passed; {} failed; 0 ignored; 0 measured; 0 filtered out; finished in 12.34s\n\nerror: test failed, to rerun pass `--lib`\n",
        total - names.len(),
        names.len()
    ));
    (log, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_has_the_size_and_failures_asked_for() {
        let (log, names) = cargo_test_log(1 << 20, 47);
        assert_eq!(names.len(), 47);
        assert!(log.len() > (1 << 20) * 9 / 10 && log.len() < (1 << 20) * 11 / 10, "{}", log.len());
        assert_eq!(log.matches(" ... FAILED\n").count(), 47);
        assert_eq!(cargo_test_log(1 << 20, 47), (log, names), "deterministic");
    }
}
