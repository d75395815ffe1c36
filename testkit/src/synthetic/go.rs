//! `go test -v ./...` output: packages of `=== RUN` / `--- PASS` pairs (with subtests), failing
//! tests with their `file_test.go:N:` messages, each package's verdict line and the final `FAIL`.

/// A verbose run of `packages` packages of `per_package` tests each, `failing` of them failing
/// (spread over the run). Failing names are the test functions.
pub fn go_test_log(packages: usize, per_package: usize, failing: usize) -> (String, Vec<String>) {
    let total = packages * per_package;
    let step = total / failing.max(1);
    let mut log = String::new();
    let mut names = Vec::new();
    for p in 0..packages {
        let pkg = format!("example.com/shop/internal/{}{p:02}", ["cart", "pricing", "orders"][p % 3]);
        let file = format!("{}_test.go", ["cart", "pricing", "orders"][p % 3]);
        let mut failed = false;
        for t in 0..per_package {
            let name = format!("Test{}{:04}", ["Parse", "Render", "Total", "Apply"][t % 4], p * per_package + t);
            log.push_str(&format!("=== RUN   {name}\n"));
            if (p * per_package + t) % step == step / 2 && names.len() < failing {
                log.push_str(&format!(
                    "    {file}:{}: {name}: total = 99, want 100\n    {file}:{}: discount applied twice\n--- FAIL: {name} (0.00s)\n",
                    40 + t,
                    41 + t
                ));
                names.push(name);
                failed = true;
            } else if t % 5 == 0 {
                log.push_str(&format!("=== RUN   {name}/empty\n=== RUN   {name}/full\n--- PASS: {name} (0.01s)\n    --- PASS: {name}/empty (0.00s)\n    --- PASS: {name}/full (0.00s)\n"));
            } else {
                log.push_str(&format!("--- PASS: {name} (0.00s)\n"));
            }
        }
        if failed {
            log.push_str(&format!("FAIL\nFAIL\t{pkg}\t0.{:03}s\n", 100 + p));
        } else {
            log.push_str(&format!("PASS\nok  \t{pkg}\t0.{:03}s\n", 100 + p));
        }
    }
    log.push_str("FAIL\n");
    (log, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_marked_and_counted() {
        let (log, names) = go_test_log(12, 40, 5);
        assert_eq!(names.len(), 5);
        assert_eq!(log.matches("--- FAIL: ").count(), 5);
        assert!(log.ends_with("FAIL\n"));
    }
}
