//! `jest --verbose` output: suites of passing tests (`✓`), a few failing ones (`✕`) with their
//! `●` blocks (message, code frame, stack), and jest's closing tally.

/// A verbose jest run of `suites` suites of `per_suite` tests each, `failing` of them failing
/// (spread over the run). Failing names are jest's `suite › test` titles.
pub fn jest_log(suites: usize, per_suite: usize, failing: usize) -> (String, Vec<String>) {
    let total = suites * per_suite;
    let step = total / failing.max(1);
    let mut log = String::new();
    let mut names = Vec::new();
    let mut failed_suites = 0;
    for s in 0..suites {
        let suite = format!("feature_{s:02}");
        let path = format!("src/{}/{suite}.test.ts", ["cart", "api", "ui", "store"][s % 4]);
        let failing_here: Vec<usize> =
            (0..per_suite).filter(|t| names.len() < failing && (s * per_suite + t) % step == step / 2).collect();
        let failing_here: Vec<usize> = failing_here.into_iter().take(failing - names.len()).collect();
        let verdict = if failing_here.is_empty() { "PASS" } else { "FAIL" };
        log.push_str(&format!("{verdict} {path} ({}.{:03} s)\n  {suite}\n", 1 + s % 3, (s * 37) % 1000));
        for t in 0..per_suite {
            let mark = if failing_here.contains(&t) { '✕' } else { '✓' };
            log.push_str(&format!("    {mark} handles case {t} ({} ms)\n", 1 + (s + t) % 9));
        }
        for &t in &failing_here {
            let name = format!("{suite} › handles case {t}");
            log.push_str(&format!(
                "\n  ● {name}\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: {}\n    Received: {t}\n\n      {} |   it('handles case {t}', () => {{\n      {} |     const got = compute({t});\n    > {} |     expect(got).toBe({});\n         |                 ^\n      {} |   }});\n\n      at Object.<anonymous> ({path}:{}:17)\n      at Promise.then.completed (node_modules/jest-circus/build/utils.js:298:28)\n      at new Promise (<anonymous>)\n      at callAsyncCircusFn (node_modules/jest-circus/build/utils.js:231:10)\n",
                t + 1,
                40 + t,
                41 + t,
                42 + t,
                t + 1,
                43 + t,
                42 + t
            ));
            names.push(name);
        }
        if !failing_here.is_empty() {
            failed_suites += 1;
            log.push('\n');
        }
    }
    log.push_str(&format!(
        "\nTest Suites: {failed_suites} failed, {} passed, {suites} total\nTests:       {} failed, {} passed, {total} total\nSnapshots:   0 total\nTime:        12.345 s\nRan all test suites.\n",
        suites - failed_suites,
        names.len(),
        total - names.len()
    ));
    (log, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_matches_the_marks() {
        let (log, names) = jest_log(50, 24, 7);
        assert_eq!(names.len(), 7);
        assert_eq!(log.matches("    ✕ ").count(), 7);
        assert_eq!(log.matches("    ✓ ").count(), 1193);
        assert!(log.contains("Tests:       7 failed, 1193 passed, 1200 total\n"));
    }
}
