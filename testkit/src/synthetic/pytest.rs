//! A pytest suite to run for real: many passing parametrized cases and a few failing tests with
//! different kinds of assertion failures (so pytest prints its real tracebacks and summaries).

/// Python source of a test module with `passing` passing cases and `failing` failing tests
/// (at most 9 distinct kinds, repeated beyond that). Failing names are the test functions.
pub fn pytest_suite(passing: usize, failing: usize) -> (String, Vec<String>) {
    let mut src = String::from(
        "import pytest\n\n\ndef compute(x):\n    return x * 2\n\n\n@pytest.mark.parametrize(\"n\", range(",
    );
    src.push_str(&format!("{passing}))\ndef test_doubles(n):\n    assert compute(n) == n * 2\n\n"));
    let bodies = [
        "    data = {\"a\": 1, \"b\": [1, 2, 3]}\n    assert data == {\"a\": 1, \"b\": [1, 2, 4]}",
        "    assert compute(21) == 43, \"the answer moved\"",
        "    items = [compute(i) for i in range(5)]\n    assert 9 in items",
        "    raise ValueError(\"bad config: missing key 'region'\")",
        "    assert \"checkout\".startswith(\"check-out\")",
        "    with pytest.raises(KeyError):\n        {\"a\": 1}[\"a\"]",
        "    total = sum(compute(i) for i in range(10))\n    assert total == 91, f\"total was {total}\"",
        "    assert [1, 2, 3] == [1, 3, 2]",
        "    assert None is not None, \"session id is missing\"",
    ];
    let kinds = ["dict", "answer", "membership", "config", "prefix", "raises", "total", "order", "session"];
    let mut names = Vec::new();
    for k in 0..failing {
        let name = format!("test_{}_{k}", kinds[k % kinds.len()]);
        src.push_str(&format!("\ndef {name}():\n{}\n\n", bodies[k % bodies.len()]));
        names.push(name);
    }
    (src, names)
}
