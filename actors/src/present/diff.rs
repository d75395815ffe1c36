//! Diffs (SPEC §8, §9.4): parsing the unified diffs Cursor records (with or without `---`/`+++`
//! headers and `@@` hunks) into numbered lines, the bounded diff preview and added/removed counts.

use std::fmt::Write as _;

use super::bounds::{preview_line_owned, PREVIEW_LINE_CHARS};

/// Diff preview lines shown on a collapsed card.
pub const DIFF_PREVIEW_COLLAPSED: usize = 8;
/// Diff preview lines shown on an expanded card.
pub const DIFF_PREVIEW_EXPANDED: usize = 40;

/// What a diff line does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiffLineKind {
    Added,
    Removed,
    Context,
}

/// One content line of a diff. Added lines have only `new_no`, removed lines only `old_no`,
/// context lines both (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffLineKind,
    pub old_no: Option<u64>,
    pub new_no: Option<u64>,
    pub text: String,
}

/// A hunk header `@@ -a[,b] +c[,d] @@…` (omitted counts are 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hunk {
    old_start: u64,
    old_count: u64,
    new_start: u64,
    new_count: u64,
}

fn parse_range(s: &str) -> Option<(u64, u64)> {
    match s.split_once(',') {
        Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

fn parse_hunk_header(line: &str) -> Option<Hunk> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix('+')?;
    let new = rest.split([' ', '@']).next()?;
    let (old_start, old_count) = parse_range(old)?;
    let (new_start, new_count) = parse_range(new)?;
    Some(Hunk { old_start, old_count, new_start, new_count })
}

/// Parses a unified diff. `---`/`+++` file headers, git extended headers (`diff --git`, `index`,
/// …) and `\ No newline at end of file` are dropped; `@@` hunks set the line numbers. A diff
/// without hunks (Cursor emits `-old\n+new`) is numbered from 1.
pub fn parse_unified(diff: &str) -> Vec<DiffLine> {
    let mut out = Vec::new();
    let mut old_no: u64 = 1;
    let mut new_no: u64 = 1;
    // Lines still expected in the current hunk.
    let mut old_left: u64 = 0;
    let mut new_left: u64 = 0;
    let mut seen_hunk = false;
    let mut lines = diff.lines().peekable();
    while let Some(line) = lines.next() {
        // A content line never starts with `@@`, so a hunk header always starts a hunk.
        if let Some(h) = parse_hunk_header(line) {
            old_no = h.old_start;
            new_no = h.new_start;
            old_left = h.old_count;
            new_left = h.new_count;
            seen_hunk = true;
            continue;
        }
        let in_hunk = old_left > 0 || new_left > 0;
        if !in_hunk && line.starts_with("---") && lines.peek().is_some_and(|next| next.starts_with("+++")) {
            lines.next();
            continue;
        }
        let (kind, text) = match line.as_bytes().first() {
            Some(b'+') => (DiffLineKind::Added, &line[1..]),
            Some(b'-') => (DiffLineKind::Removed, &line[1..]),
            Some(b' ') => (DiffLineKind::Context, &line[1..]),
            Some(b'\\') => continue,
            // A blank context line whose leading space was stripped.
            None if in_hunk || !seen_hunk => (DiffLineKind::Context, ""),
            None => continue,
            // Tolerate a malformed context line inside a hunk; outside, it is header noise.
            Some(_) if in_hunk => (DiffLineKind::Context, line),
            Some(_) => continue,
        };
        let (old, new) = match kind {
            DiffLineKind::Added => {
                new_left = new_left.saturating_sub(1);
                (None, Some(post_inc(&mut new_no)))
            }
            DiffLineKind::Removed => {
                old_left = old_left.saturating_sub(1);
                (Some(post_inc(&mut old_no)), None)
            }
            DiffLineKind::Context => {
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
                (Some(post_inc(&mut old_no)), Some(post_inc(&mut new_no)))
            }
        };
        out.push(DiffLine { kind, old_no: old, new_no: new, text: text.to_owned() });
    }
    out
}

fn post_inc(n: &mut u64) -> u64 {
    let v = *n;
    *n = n.saturating_add(1);
    v
}

/// One formatted diff line: `+<new no> text`, `-<old no> text`, ` <new no> text`; tabs → 3
/// spaces, control characters → space, at most 240 chars (cut with `…`).
pub fn format_diff_line(line: &DiffLine) -> String {
    let (sign, no) = match line.kind {
        DiffLineKind::Added => ('+', line.new_no),
        DiffLineKind::Removed => ('-', line.old_no),
        DiffLineKind::Context => (' ', line.new_no.or(line.old_no)),
    };
    let mut raw = String::with_capacity(line.text.len() + 8);
    raw.push(sign);
    if let Some(n) = no {
        // Writing to a String cannot fail.
        let _ = write!(raw, "{n}");
    }
    raw.push(' ');
    raw.push_str(&line.text);
    preview_line_owned(raw, PREVIEW_LINE_CHARS)
}

/// The diff preview: the first 8 (collapsed) or 40 (expanded) formatted lines, then
/// `... (N more diff lines hidden)` when lines were left out.
pub fn diff_preview(lines: &[DiffLine], expanded: bool) -> (Vec<String>, Option<String>) {
    let limit = if expanded { DIFF_PREVIEW_EXPANDED } else { DIFF_PREVIEW_COLLAPSED };
    let shown = lines.iter().take(limit).map(format_diff_line).collect();
    let hidden = lines.len().saturating_sub(limit);
    let marker = (hidden > 0).then(|| format!("... ({hidden} more diff lines hidden)"));
    (shown, marker)
}

/// `(added, removed)` line counts.
pub fn diff_stats(lines: &[DiffLine]) -> (usize, usize) {
    lines.iter().fold((0, 0), |(a, r), l| match l.kind {
        DiffLineKind::Added => (a + 1, r),
        DiffLineKind::Removed => (a, r + 1),
        DiffLineKind::Context => (a, r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use DiffLineKind::{Added, Context, Removed};

    fn dl(kind: DiffLineKind, old: Option<u64>, new: Option<u64>, text: &str) -> DiffLine {
        DiffLine { kind, old_no: old, new_no: new, text: text.to_owned() }
    }

    #[test]
    fn fixture_new_file() {
        // harness-mocks__file-tools.jsonl: writing a new file.
        let lines = parse_unified("--- /dev/null\n+++ b/<RUN>/note.txt\n@@ -1,0 +1 @@\n+hi");
        assert_eq!(lines, vec![dl(Added, None, Some(1), "hi")]);
        assert_eq!(diff_stats(&lines), (1, 0));
        assert_eq!(diff_preview(&lines, false), (vec!["+1 hi".to_owned()], None));
    }

    #[test]
    fn fixture_replace() {
        let lines = parse_unified("--- a/<RUN>/note.txt\n+++ b/<RUN>/note.txt\n@@ -1 +1 @@\n-hi\n+bye");
        assert_eq!(lines, vec![dl(Removed, Some(1), None, "hi"), dl(Added, None, Some(1), "bye")]);
        let (shown, _) = diff_preview(&lines, false);
        assert_eq!(shown, vec!["-1 hi", "+1 bye"]);
    }

    #[test]
    fn fixture_insert_with_context() {
        // agentsserver__captured-lines: `@@ -1 +1,2 @@`.
        let lines = parse_unified("--- a\n+++ b\n@@ -1 +1,2 @@\n+# greeting\n print('hello world')");
        assert_eq!(
            lines,
            vec![dl(Added, None, Some(1), "# greeting"), dl(Context, Some(1), Some(2), "print('hello world')"),]
        );
        let (shown, _) = diff_preview(&lines, false);
        assert_eq!(shown, vec!["+1 # greeting", " 2 print('hello world')"]);
    }

    #[test]
    fn headerless() {
        let lines = parse_unified("-old\n+new\n same");
        assert_eq!(
            lines,
            vec![
                dl(Removed, Some(1), None, "old"),
                dl(Added, None, Some(1), "new"),
                dl(Context, Some(2), Some(2), "same"),
            ]
        );
        // A lone `---` line is a removed `--` line, not a header.
        assert_eq!(parse_unified("--- x\n+y"), vec![dl(Removed, Some(1), None, "-- x"), dl(Added, None, Some(1), "y")]);
    }

    #[test]
    fn multi_hunk_git_diff() {
        let diff = "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n\
                    @@ -3,3 +3,3 @@ fn main\n a\n-b\n+B\n c\n\\ No newline at end of file\n\
                    @@ -20,2 +20,3 @@\n x\n+--- y\n+++ z\n";
        let lines = parse_unified(diff);
        assert_eq!(
            lines,
            vec![
                dl(Context, Some(3), Some(3), "a"),
                dl(Removed, Some(4), None, "b"),
                dl(Added, None, Some(4), "B"),
                dl(Context, Some(5), Some(5), "c"),
                dl(Context, Some(20), Some(20), "x"),
                dl(Added, None, Some(21), "--- y"),
                dl(Added, None, Some(22), "++ z"),
            ]
        );
        assert_eq!(diff_stats(&lines), (3, 1));
    }

    #[test]
    fn removed_lines_looking_like_headers_inside_hunk() {
        let lines = parse_unified("@@ -1,2 +0,0 @@\n--- a\n+++ b");
        // Counted hunk: old_left=2, new_left=0 → both lines are content.
        assert_eq!(lines[0], dl(Removed, Some(1), None, "-- a"));
        assert_eq!(lines[1], dl(Added, None, Some(0), "++ b"));
    }

    #[test]
    fn crlf_and_blank_context() {
        let lines = parse_unified("@@ -1,3 +1,3 @@\r\n a\r\n\r\n-c\r\n+C\r\n");
        assert_eq!(
            lines,
            vec![
                dl(Context, Some(1), Some(1), "a"),
                dl(Context, Some(2), Some(2), ""),
                dl(Removed, Some(3), None, "c"),
                dl(Added, None, Some(3), "C"),
            ]
        );
    }

    #[test]
    fn preview_limits_and_formatting() {
        let diff: String = (1..=50).map(|i| format!("+line\t{i}\n")).collect();
        let lines = parse_unified(&diff);
        let (shown, marker) = diff_preview(&lines, false);
        assert_eq!(shown.len(), 8);
        assert_eq!(shown[0], "+1 line   1");
        assert_eq!(marker.as_deref(), Some("... (42 more diff lines hidden)"));
        let (shown, marker) = diff_preview(&lines, true);
        assert_eq!(shown.len(), 40);
        assert_eq!(marker.as_deref(), Some("... (10 more diff lines hidden)"));
        let long = parse_unified(&format!("+{}", "é".repeat(500)));
        let (shown, _) = diff_preview(&long, false);
        assert_eq!(shown[0].chars().count(), 240);
        assert!(shown[0].ends_with('…'));
        assert_eq!(diff_preview(&[], true), (Vec::new(), None));
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_preview_is_bounded(s in "(\\PC|\n|\t){0,400}", expanded in any::<bool>()) {
            let lines = parse_unified(&s);
            let (shown, marker) = diff_preview(&lines, expanded);
            let limit = if expanded { DIFF_PREVIEW_EXPANDED } else { DIFF_PREVIEW_COLLAPSED };
            prop_assert!(shown.len() <= limit);
            prop_assert_eq!(marker.is_some(), lines.len() > limit);
            prop_assert!(shown.iter().all(|l| l.chars().count() <= PREVIEW_LINE_CHARS && !l.contains('\t')));
            let (a, r) = diff_stats(&lines);
            prop_assert!(a + r <= lines.len());
        }

        #[test]
        fn headerless_numbering(ops in prop::collection::vec(0u8..3, 0..60)) {
            let diff: String = ops.iter().enumerate().map(|(i, op)| {
                let sign = ['+', '-', ' '][usize::from(*op)];
                format!("{sign}l{i}\n")
            }).collect();
            let lines = parse_unified(&diff);
            prop_assert_eq!(lines.len(), ops.len());
            let (mut old, mut new) = (1u64, 1u64);
            for l in &lines {
                match l.kind {
                    Added => { prop_assert_eq!(l.new_no, Some(new)); new += 1; }
                    Removed => { prop_assert_eq!(l.old_no, Some(old)); old += 1; }
                    Context => {
                        prop_assert_eq!((l.old_no, l.new_no), (Some(old), Some(new)));
                        old += 1;
                        new += 1;
                    }
                }
            }
        }
    }
}
