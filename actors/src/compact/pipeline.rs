//! The line pipeline a rule drives, in one pass over the output (linear in its size): clean each
//! line (ANSI escapes, carriage-return progress, trailing blanks), count, keep failures and
//! sections, drop skipped lines, rewrite, collapse repeats and progress runs, collapse runs of
//! same-shape lines (rules that ask), then bound to head + tail while keeping every failure line
//! in between, and put the exit code and counts on top.

use std::borrow::Cow;

use regex::RegexSet;

use super::rules::{CounterMode, Rule};
use super::shape::shape;
use toolstream_schemas::display::truncate_chars;

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
    /// Its shape, when the rule collapses similar lines.
    shape: Option<u64>,
    /// It stands for a run of similar lines (`count` of them).
    similar: bool,
}

/// The rule's reduction of `output` (already through the rule's code reducer, if any), headed by
/// `exit N` (when `show_exit` and N is not 0) and the rule's counts.
///
/// Precedence per line: the rule's `keep` beats its `skip`, which beats the common failure
/// patterns (so a passing test named `parses_error` is still dropped).
pub fn run(rule: &Rule, common_failure: &RegexSet, output: &str, exit_code: Option<i32>, show_exit: bool) -> String {
    if rule.verbatim {
        let mut out = header(rule, &[], exit_code.filter(|_| show_exit));
        if !output.is_empty() {
            line_break(&mut out);
            // As it is, but no line beyond the longest line kept (a minified file, a blob).
            for (i, line) in output.strip_suffix('\n').unwrap_or(output).split('\n').enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(&truncate_chars(line, LINE_MAX_CHARS));
            }
        }
        return out;
    }
    let mut counts = vec![Count::default(); rule.counters.len()];
    let mut kept: Vec<Kept> = Vec::new();
    let mut in_section: Option<usize> = None;
    let mut in_skip_block: Option<usize> = None;

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
        if in_skip_block.is_some_and(|b| rule.skip_blocks[b].1.is_match(line)) {
            in_skip_block = None;
        }
        if in_skip_block.is_none() {
            in_skip_block = rule.skip_blocks.iter().position(|(start, _)| start.is_match(line));
        }
        let keep = rule.keep.is_match(line);
        if !keep && (in_skip_block.is_some() || rule.skip.is_match(line)) {
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
    if let Some(min_run) = rule.similar_min_run {
        kept = collapse_similar(kept, min_run);
    }

    let mut out = String::new();
    let counts: Vec<u64> = counts.iter().map(Count::value).collect();
    let header = header(rule, &counts, exit_code.filter(|_| show_exit));
    if !header.is_empty() {
        out.push_str(&header);
    }
    let body_start = out.len();
    render(&mut out, &kept, rule.head.zip(rule.tail), rule.group_by_folder);
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

/// A counter's state.
#[derive(Clone, Copy, Debug, Default)]
struct Count {
    value: u64,
    /// Its pattern matched at least once.
    matched: bool,
    /// Lines matching its `fallback`.
    fallback: u64,
}

impl Count {
    /// The count: the pattern's, or the fallback's when the pattern never matched.
    fn value(&self) -> u64 {
        if self.matched {
            self.value
        } else {
            self.fallback
        }
    }
}

fn count(counter: &super::rules::Counter, line: &str, n: &mut Count) {
    if counter.unless.as_ref().is_some_and(|u| u.is_match(line)) {
        return;
    }
    if counter.fallback.as_ref().is_some_and(|f| f.is_match(line)) {
        n.fallback += 1;
    }
    match counter.mode {
        CounterMode::Lines if counter.pattern.is_match(line) => {
            n.value += 1;
            n.matched = true;
        }
        CounterMode::Lines => {}
        CounterMode::Last | CounterMode::Sum => {
            let captured = counter.pattern.captures(line).and_then(|c| c.iter().skip(1).flatten().next());
            if let Some(v) = captured.and_then(|m| m.as_str().parse::<u64>().ok()) {
                n.value = if counter.mode == CounterMode::Sum { n.value.saturating_add(v) } else { v };
                n.matched = true;
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
    let shape = rule.similar_min_run.and_then(|_| shape(&text));
    if let (Some(p), Some(prev)) = (last_of, kept.last_mut()) {
        if prev.last_of == Some(p) && !prev.must {
            *prev = Kept { text, must, count: 1, last_of, shape, similar: false };
            return;
        }
    }
    kept.push(Kept { text, must, count: 1, last_of, shape, similar: false });
}

/// Runs of at least `min_run` lines of one shape (none of them a failure line, none without a
/// shape — blank, or data — not the first line, which stays as it is) become their last line —
/// the state they ended in — standing for all of them.
fn collapse_similar(kept: Vec<Kept>, min_run: usize) -> Vec<Kept> {
    let mut out: Vec<Kept> = Vec::with_capacity(kept.len());
    let mut run_start = 0;
    for k in kept {
        let joins = |prev: &Kept| !k.must && !prev.must && k.shape.is_some() && prev.shape == k.shape && run_start > 0;
        if !out.last().is_some_and(joins) {
            close_run(&mut out, run_start, min_run);
            run_start = out.len();
        }
        out.push(k);
    }
    close_run(&mut out, run_start, min_run);
    out
}

/// Collapse `out[start..]` into one line when it is long enough.
fn close_run(out: &mut Vec<Kept>, start: usize, min_run: usize) {
    if out.len() - start < min_run {
        return;
    }
    let count = out[start..].iter().map(|k| k.count).sum();
    if let Some(mut last) = out.pop() {
        out.truncate(start);
        last.count = count;
        last.similar = true;
        out.push(last);
    }
}

/// The lines, bounded to `head` + `tail` (with every `must` line in between) when given, and
/// grouped by folder when asked.
fn render(out: &mut String, kept: &[Kept], bound: Option<(usize, usize)>, group: bool) {
    let mut lines = Vec::new();
    let mut omitted = Omitted::default();
    let n = kept.len();
    for (i, k) in kept.iter().enumerate() {
        let shown = match bound {
            Some((head, tail)) if n > head + tail => i < head || i >= n - tail || k.must,
            _ => true,
        };
        if !shown {
            omitted.entries += 1;
            omitted.lines += k.count;
            omitted.one = Some(k);
            continue;
        }
        omitted.flush(&mut lines);
        lines.push(shown_text(k));
    }
    omitted.flush(&mut lines);
    if group {
        lines = group_by_folder(lines);
    }
    for line in lines {
        line_break(out);
        out.push_str(&line);
    }
}

/// A kept line as shown, with its count.
fn shown_text(k: &Kept) -> String {
    let mut line = k.text.clone();
    if k.similar {
        line.push_str(&format!(" (×{} similar)", k.count));
    } else if k.count > 1 {
        line.push_str(&format!(" (×{})", k.count));
    }
    line
}

/// A run of kept lines the bound leaves out.
#[derive(Default)]
struct Omitted<'a> {
    entries: usize,
    lines: usize,
    /// The last of them.
    one: Option<&'a Kept>,
}

impl Omitted<'_> {
    /// Write the run as `… N lines omitted …` — or as the line itself when it is the only one
    /// (no longer than the marker) — and start a new one.
    fn flush(&mut self, lines: &mut Vec<String>) {
        match (self.entries, self.one) {
            (0, _) | (_, None) => {}
            (1, Some(one)) => lines.push(shown_text(one)),
            (_, Some(_)) => lines.push(format!("… {} {} omitted …", self.lines, plural("line", self.lines as u64))),
        }
        *self = Omitted::default();
    }
}

/// The fewest lines in one folder listed under it.
const GROUP_MIN: usize = 3;

/// The folder a line's first word lies in (`a/b/` of `a/b/c.rs 12`) and the rest of the line.
fn folder_of(line: &str) -> Option<(&str, &str)> {
    let word_end = line.find(char::is_whitespace).unwrap_or(line.len());
    let slash = line[..word_end].rfind('/')?;
    let (folder, rest) = line.split_at(slash + 1);
    (slash > 0 && slash + 1 < word_end).then_some((folder, rest))
}

/// Runs of at least [`GROUP_MIN`] lines whose first word is a path in one folder become the
/// folder on a line of its own, then each line without it, indented (when that is shorter).
fn group_by_folder(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let Some((folder, _)) = folder_of(&lines[i]) else {
            out.push(lines[i].clone());
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < lines.len() && folder_of(&lines[j]).is_some_and(|(f, _)| f == folder) {
            j += 1;
        }
        // Each line saves the folder and pays two spaces; the folder's own line pays it once.
        let k = j - i;
        if k >= GROUP_MIN && folder.len() * (k - 1) > 2 * k + 1 {
            out.push(folder.to_owned());
            out.extend(lines[i..j].iter().map(|l| format!("  {}", &l[folder.len()..])));
        } else {
            out.extend(lines[i..j].iter().cloned());
        }
        i = j;
    }
    out
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
    fn runs_of_similar_lines_collapse_into_their_last() {
        let line = |text: &str, must: bool| Kept {
            text: text.to_owned(),
            must,
            count: 1,
            last_of: None,
            shape: shape(text),
            similar: false,
        };
        let kept = vec![
            line("step 0", false),
            line("step 1", false),
            line("step 2", false),
            line("step 3", false),
            line("error at step 4", true),
            line("step 5", false),
            line("step 6", false),
            line("done", false),
        ];
        let out = collapse_similar(kept, 3);
        let shown: Vec<(&str, usize, bool)> = out.iter().map(|k| (k.text.as_str(), k.count, k.similar)).collect();
        assert_eq!(
            shown,
            [
                ("step 0", 1, false),
                ("step 3", 3, true),
                ("error at step 4", 1, false),
                ("step 5", 1, false),
                ("step 6", 1, false),
                ("done", 1, false)
            ]
        );
    }

    #[test]
    fn lines_in_one_folder_are_listed_under_it() {
        let lines: Vec<String> = [
            "/r/wt/a 1 [a]",
            "/r/wt/b 2 [b]",
            "/r/wt/c 3 [c]",
            "/r/main 0 [main]",
            "x/y",
            "x/z",
            "x/w",
            "plain",
            "/top",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            group_by_folder(lines),
            ["/r/wt/", "  a 1 [a]", "  b 2 [b]", "  c 3 [c]", "/r/main 0 [main]", "x/y", "x/z", "x/w", "plain", "/top"],
            "`x/` is too short to be worth a line"
        );
    }

    #[test]
    fn labels_pluralize() {
        assert_eq!(plural("failed test", 2), "failed tests");
        assert_eq!(plural("match", 3), "matches");
        assert_eq!(plural("error", 1), "error");
    }
}
