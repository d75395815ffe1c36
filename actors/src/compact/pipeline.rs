//! The line pipeline a rule drives, in one pass over the output (linear in its size): clean each
//! line (ANSI escapes, carriage-return progress, trailing blanks), count, keep failures and
//! sections, drop skipped lines, rewrite, collapse repeats and progress runs, then bound to head +
//! tail while keeping every failure line in between, and put the exit code and counts on top.

use std::borrow::Cow;

use regex::RegexSet;

use super::rules::{CounterMode, Rule};
use crate::present::bounds::truncate_chars;

/// Longest line kept (chars); longer ones end with `…`.
pub const LINE_MAX_CHARS: usize = 1_000;

/// A kept line.
#[derive(Debug)]
struct Kept {
    text: String,
    /// A failure or section line: never omitted.
    must: bool,
    /// Times it appeared in a row.
    count: usize,
    /// The `last_of` pattern it matched.
    last_of: Option<usize>,
}

/// The rule's reduction of `output` (already through the rule's code reducer, if any).
///
/// Precedence per line: the rule's `keep` beats its `skip`, which beats the common failure
/// patterns (so a passing test named `parses_error` is still dropped).
pub fn run(rule: &Rule, common_failure: &RegexSet, output: &str, exit_code: Option<i32>) -> String {
    let mut counts = vec![0u64; rule.counters.len()];
    let mut kept: Vec<Kept> = Vec::new();
    let mut in_section: Option<usize> = None;

    for raw in output.lines() {
        let cleaned = clean_line(raw);
        let line = if rule.trim { cleaned.trim_start() } else { cleaned.as_ref() };

        for (counter, n) in rule.counters.iter().zip(counts.iter_mut()) {
            count(counter, line, n);
        }

        let mut in_a_section = false;
        if let Some(s) = in_section {
            in_a_section = true;
            if rule.sections[s].1.is_match(line) {
                in_section = None;
            }
        } else if let Some(s) = rule.sections.iter().position(|(start, _)| start.is_match(line)) {
            in_section = Some(s);
            in_a_section = true;
        }
        let keep = rule.keep.is_match(line);
        if !keep && rule.skip.is_match(line) {
            continue;
        }
        let must = keep || in_a_section || common_failure.is_match(line);

        let mut text = match rule.rewrites.iter().find(|r| r.pattern.is_match(line)) {
            Some(r) => r.pattern.replace(line, r.with.as_str()).into_owned(),
            None => line.to_owned(),
        };
        if rule.squeeze_spaces {
            text = squeeze_spaces(&text);
        }
        if let Cow::Owned(cut) = truncate_chars(&text, LINE_MAX_CHARS) {
            text = cut;
        }
        push(&mut kept, rule, text, must);
    }
    while kept.last().is_some_and(|k| k.text.is_empty()) {
        kept.pop();
    }

    let mut out = String::new();
    let header = header(rule, &counts, exit_code);
    if !header.is_empty() {
        out.push_str(&header);
    }
    let body_start = out.len();
    render(&mut out, &kept, rule.head.zip(rule.tail));
    if out.len() == body_start && exit_code.unwrap_or(0) == 0 {
        if let Some(empty) = &rule.on_empty {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(empty);
        }
    }
    out
}

fn count(counter: &super::rules::Counter, line: &str, n: &mut u64) {
    if counter.unless.as_ref().is_some_and(|u| u.is_match(line)) {
        return;
    }
    match counter.mode {
        CounterMode::Lines => *n += u64::from(counter.pattern.is_match(line)),
        CounterMode::Last | CounterMode::Sum => {
            let captured = counter.pattern.captures(line).and_then(|c| c.iter().skip(1).flatten().next());
            if let Some(v) = captured.and_then(|m| m.as_str().parse::<u64>().ok()) {
                *n = if counter.mode == CounterMode::Sum { n.saturating_add(v) } else { v };
            }
        }
    }
}

/// Add a line: blank runs become one blank (none at the start), a repeat of the previous line is
/// counted, and a run of one `last_of` pattern keeps only its last line.
fn push(kept: &mut Vec<Kept>, rule: &Rule, text: String, must: bool) {
    if text.is_empty() && kept.last().is_none_or(|k| k.text.is_empty()) {
        return;
    }
    if let Some(prev) = kept.last_mut() {
        if prev.text == text {
            prev.count += 1;
            prev.must |= must;
            return;
        }
    }
    let last_of = rule.last_of.matches(&text).iter().next();
    if let (Some(p), Some(prev)) = (last_of, kept.last_mut()) {
        if prev.last_of == Some(p) && !prev.must {
            *prev = Kept { text, must, count: 1, last_of };
            return;
        }
    }
    kept.push(Kept { text, must, count: 1, last_of });
}

/// The lines, bounded to `head` + `tail` (with every `must` line in between) when given.
fn render(out: &mut String, kept: &[Kept], bound: Option<(usize, usize)>) {
    let mut omitted = 0usize;
    let n = kept.len();
    for (i, k) in kept.iter().enumerate() {
        let shown = match bound {
            Some((head, tail)) if n > head + tail => i < head || i >= n - tail || k.must,
            _ => true,
        };
        if !shown {
            omitted += k.count;
            continue;
        }
        if omitted > 0 {
            line_break(out);
            out.push_str(&format!("… {omitted} {} omitted …", plural("line", omitted as u64)));
            omitted = 0;
        }
        line_break(out);
        out.push_str(&k.text);
        if k.count > 1 {
            out.push_str(&format!(" (×{})", k.count));
        }
    }
}

fn line_break(out: &mut String) {
    if !out.is_empty() {
        out.push('\n');
    }
}

/// `exit N | 3 failed tests, 12 passed tests` (each part only when there is something to say).
fn header(rule: &Rule, counts: &[u64], exit_code: Option<i32>) -> String {
    let counted: Vec<String> = rule
        .counters
        .iter()
        .zip(counts)
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{n} {}", plural(&c.label, *n)))
        .collect();
    let mut parts = Vec::new();
    if let Some(code) = exit_code.filter(|c| *c != 0) {
        parts.push(format!("exit {code}"));
    }
    if !counted.is_empty() {
        parts.push(counted.join(", "));
    }
    parts.join(" | ")
}

/// `label` for `n` things: the last word takes `s` (or `es`) unless `n` is 1.
pub fn plural(label: &str, n: u64) -> Cow<'_, str> {
    if n == 1 {
        Cow::Borrowed(label)
    } else if label.ends_with(['s', 'x']) || label.ends_with("ch") || label.ends_with("sh") {
        Cow::Owned(format!("{label}es"))
    } else {
        Cow::Owned(format!("{label}s"))
    }
}

/// A line as a terminal would leave it: the text after the last carriage return (progress bars
/// redraw in place), ANSI escape sequences removed, trailing whitespace trimmed.
pub fn clean_line(raw: &str) -> Cow<'_, str> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    let line = line.rsplit('\r').next().unwrap_or(line);
    let line = line.trim_end();
    if !line.contains('\x1b') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            // CSI: parameters, then one final byte in @..~.
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    Cow::Owned(out.trim_end().to_owned())
}

/// Runs of spaces and tabs inside a line (column padding) become one space; indentation stays.
fn squeeze_spaces(s: &str) -> String {
    let indent = s.len() - s.trim_start().len();
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..indent]);
    let mut gap = false;
    for c in s[indent..].chars() {
        if c == ' ' || c == '\t' {
            gap = true;
            continue;
        }
        if std::mem::take(&mut gap) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cleaned_like_a_terminal_shows_them() {
        assert_eq!(clean_line("\x1b[31merror\x1b[0m: x  "), "error: x");
        assert_eq!(clean_line("10%\r50%\rdone\r"), "done");
        assert_eq!(clean_line("\x1b]0;title\x07text"), "text");
        assert_eq!(clean_line("plain"), "plain");
    }

    #[test]
    fn padding_is_squeezed_but_indentation_kept() {
        assert_eq!(squeeze_spaces("  a    b\t\tc"), "  a b c");
    }

    #[test]
    fn labels_pluralize() {
        assert_eq!(plural("failed test", 2), "failed tests");
        assert_eq!(plural("match", 3), "matches");
        assert_eq!(plural("error", 1), "error");
    }
}
