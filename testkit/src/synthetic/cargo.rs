//! `cargo test` logs: one test binary with many tests (for size), and a workspace run with
//! several binaries and doc-tests under `--no-fail-fast` (for summaries that add up).

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

/// A `cargo test --no-fail-fast` log of a crate with `tests` tests over three binaries (the
/// library's unit tests, an integration test `tests/api.rs`, doc-tests), `failing` of them failing
/// (in the first two binaries), as cargo prints it. Returns the log and the failing names.
pub fn cargo_workspace_log(tests: usize, failing: usize) -> (String, Vec<String>) {
    let lib = tests * 6 / 10;
    let doc = tests / 20;
    let api = tests - lib - doc;
    let lib_failing = failing.div_ceil(2).min(lib);
    let api_failing = (failing - lib_failing).min(api);
    let mut log = String::from(
        "   Compiling proc-macro2 v1.0.95\n   Compiling unicode-ident v1.0.18\n   Compiling quote v1.0.40\n   Compiling syn v2.0.104\n   Compiling serde_derive v1.0.219\n   Compiling serde v1.0.219\n   Compiling shop v0.3.0 (/work/shop)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 21.84s\n",
    );
    let mut names = Vec::new();
    let mut failed_targets = Vec::new();
    let binaries = [
        ("unittests src/lib.rs (target/debug/deps/shop-5f0c2a1b9d3e4f60)", "--lib", lib, lib_failing),
        ("tests/api.rs (target/debug/deps/api-0a1b2c3d4e5f6071)", "--test api", api, api_failing),
    ];
    for (running, target, total, fails) in binaries {
        log.push_str(&format!("     Running {running}\n\nrunning {total} tests\n"));
        let step = total / fails.max(1);
        let mut here = Vec::new();
        for i in 0..total {
            let name = if target == "--lib" {
                format!(
                    "{}::tests::{}_{i}",
                    ["cart", "pricing", "orders", "stock"][i % 4],
                    ["adds", "rounds", "keeps"][i % 3]
                )
            } else {
                format!("api_{}_{i}", ["checkout", "refund", "login"][i % 3])
            };
            let fails_here = fails > 0 && i % step == step / 2 && here.len() < fails;
            log.push_str(&format!("test {name} ... {}\n", if fails_here { "FAILED" } else { "ok" }));
            if fails_here {
                here.push(name);
            }
        }
        if !here.is_empty() {
            log.push_str("\nfailures:\n\n");
            for (k, n) in here.iter().enumerate() {
                log.push_str(&format!(
                    "---- {n} stdout ----\n\nthread '{n}' panicked at src/{}.rs:{}:9:\nassertion `left == right` failed: total after discount\n  left: {}\n right: {}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n",
                    if target == "--lib" { "pricing" } else { "../tests/api" },
                    40 + k,
                    100 + k,
                    99 + k
                ));
            }
            log.push_str("\nfailures:\n");
            for n in &here {
                log.push_str(&format!("    {n}\n"));
            }
            failed_targets.push(target);
        }
        log.push_str(&format!(
            "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.{:02}s\n\n",
            if here.is_empty() { "ok" } else { "FAILED" },
            total - here.len(),
            here.len(),
            total % 100
        ));
        if !here.is_empty() {
            log.push_str(&format!("error: test failed, to rerun pass `{target}`\n"));
        }
        names.extend(here);
    }
    log.push_str(&format!("   Doc-tests shop\n\nrunning {doc} tests\n"));
    for i in 0..doc {
        log.push_str(&format!("test src/lib.rs - Cart::total (line {}) ... ok\n", 10 + i * 7));
    }
    log.push_str(&format!(
        "\ntest result: ok. {doc} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.84s\n\nerror: {} targets failed:\n",
        failed_targets.len()
    ));
    for t in failed_targets {
        log.push_str(&format!("    `{t}`\n"));
    }
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

    #[test]
    fn the_workspace_log_adds_up() {
        let (log, names) = cargo_workspace_log(4023, 23);
        assert_eq!(names.len(), 23);
        assert_eq!(log.matches(" ... FAILED\n").count(), 23);
        assert_eq!(log.matches(" ... ok\n").count(), 4000);
        assert_eq!(log.matches("\ntest result: ").count(), 3);
    }
}
