//! Output bounds (SPEC §8): display lines, transcript/list/read/preview/fallback/thinking limits,
//! path display (relative to the run's cwd), sensitive-path detection and token estimates.
//!
//! All lengths are counted in chars (Unicode scalar values); nothing here ever cuts inside a code
//! point. A cut line ends with `…`, which counts towards its limit.

use std::borrow::Cow;
use std::io;

use serde_json::Value;
use toolstream_schemas::display::{display_body_chars, display_line_chars};
pub use toolstream_schemas::display::{display_line, truncate_chars, DISPLAY_LINE_CHARS, ELLIPSIS};

/// Max chars of a transcript text.
pub const TRANSCRIPT_MAX_CHARS: usize = 24_000;
/// Max lines of a transcript text.
pub const TRANSCRIPT_MAX_LINES: usize = 800;
/// Max items of a list (grep matches, glob files).
pub const LIST_MAX_ITEMS: usize = 200;
/// Max lines of a read card.
pub const READ_MAX_LINES: usize = 20;
/// Max lines of a collapsed card preview (the pi extension's collapsed cards show as many).
pub use toolstream_schemas::pi_contract::PREVIEW_LINES as PREVIEW_MAX_LINES;
/// Max chars (all lines, newlines included) of a collapsed card preview.
pub const PREVIEW_MAX_CHARS: usize = 4_000;
/// Max chars of one collapsed preview line (also diff preview lines).
pub const PREVIEW_LINE_CHARS: usize = 240;
/// Max `key: value` lines of the unknown-tool fallback.
pub const FALLBACK_MAX_ARGS: usize = 8;
/// Array items shown per fallback arg before `+N more`.
pub const FALLBACK_ARRAY_ITEMS: usize = 3;
/// Max chars of the unknown-tool fallback result.
pub const FALLBACK_RESULT_CHARS: usize = 240;
/// Max lines of the unknown-tool fallback result.
pub const FALLBACK_RESULT_LINES: usize = 6;
/// Max lines of a shell call's output in what pi's model reads (pi's own bash tool: the last
/// lines are kept, where failures and summaries are).
pub const SHELL_MAX_LINES: usize = 2_000;
/// Max bytes of a shell call's output in what pi's model reads (pi's bash: 50 KiB).
pub const SHELL_MAX_BYTES: usize = 50 * 1024;
/// Lines of a long shell output's collapsed preview shown before the `… (N lines)` line.
pub const SHELL_PREVIEW_HEAD: usize = 3;
/// Lines of a long shell output's collapsed preview shown after the `… (N lines)` line.
pub const SHELL_PREVIEW_TAIL: usize = PREVIEW_MAX_LINES - SHELL_PREVIEW_HEAD - 1;
/// Max chars of the thinking trace per message.
pub const THINKING_MAX_CHARS: usize = 50_000;
/// Appended (on its own line) to a cut thinking trace.
pub const THINKING_TRUNCATED_MARKER: &str = "[Cursor activity trace truncated]";

/// Bytes of compact JSON rendered for a fallback value before it is cut (display lines are
/// bounded to 240 chars anyway; this only avoids serialising huge values).
const FALLBACK_VALUE_BYTES: usize = 1_024;

// ------------------------------------------------------------------------------------------------
// Lines.

/// Number of lines in `s` (as [`str::lines`] counts them: a final line ending adds no line).
pub fn count_lines(s: &str) -> usize {
    if s.is_empty() {
        return 0;
    }
    let newlines = s.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!s.ends_with('\n'))
}

/// Ends `s` with `…` within `max_chars` chars (it marks that something was left out).
fn end_with_ellipsis(mut s: String, max_chars: usize) -> String {
    if max_chars == 0 || s.ends_with(ELLIPSIS) {
        return s;
    }
    if s.chars().count() >= max_chars {
        let keep = s.char_indices().nth(max_chars - 1).map_or(s.len(), |(i, _)| i);
        s.truncate(keep);
    }
    let trimmed = s.trim_end().len();
    s.truncate(trimmed);
    s.push(ELLIPSIS);
    s
}

/// One preview line: display body text (SPEC §8: escape sequences removed, tabs → 3 spaces,
/// other control characters, bidi controls and U+2028/U+2029 → space), indentation kept; cut to
/// `max_chars` chars with `…`. Returns the line and its char count.
fn preview_line_counted(line: &str, max_chars: usize) -> (String, usize) {
    if shown_as_is(line, max_chars) {
        return (line.to_owned(), line.len());
    }
    collect_bounded(display_body_chars(line), max_chars)
}

/// Collects at most `max_chars` chars; when more follow, the last kept char becomes `…`.
fn collect_bounded(chars: impl Iterator<Item = char>, max_chars: usize) -> (String, usize) {
    let mut out = String::with_capacity(chars.size_hint().0.min(max_chars));
    let mut count = 0usize;
    let mut last_start = 0usize;
    for c in chars {
        if count == max_chars {
            if max_chars > 0 {
                out.truncate(last_start);
                out.push(ELLIPSIS);
            }
            return (out, count);
        }
        last_start = out.len();
        out.push(c);
        count += 1;
    }
    (out, count)
}

/// One preview line (tabs → 3 spaces, control characters → space, cut to `max_chars` with `…`).
pub fn preview_line(line: &str, max_chars: usize) -> String {
    preview_line_counted(line, max_chars).0
}

/// [`preview_line`] of an owned line, kept without a copy when it needs no change.
pub fn preview_line_owned(line: String, max_chars: usize) -> String {
    if shown_as_is(&line, max_chars) {
        line
    } else {
        preview_line(&line, max_chars)
    }
}

/// Printable ASCII that fits (most lines) is shown as it is.
fn shown_as_is(line: &str, max_chars: usize) -> bool {
    line.len() <= max_chars && line.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Lines of `s` with their byte span (content only, without the line ending).
fn line_spans(s: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    s.split_inclusive('\n').map(move |piece| {
        let start = offset;
        offset += piece.len();
        let content = piece.strip_suffix('\n').map_or(piece, |p| p.strip_suffix('\r').unwrap_or(p));
        (start, content)
    })
}

// ------------------------------------------------------------------------------------------------
// Transcript, list, read and thinking bounds.

/// Bounds a transcript text to 24,000 chars / 800 lines; when cut, a final line
/// `... (N more lines truncated)` follows (N = lines not shown). A line crossing the char budget
/// is shown cut with `…`; it counts as shown.
pub fn bound_transcript(s: &str) -> Cow<'_, str> {
    bound_text(s, TRANSCRIPT_MAX_LINES, TRANSCRIPT_MAX_CHARS)
}

fn bound_text(s: &str, max_lines: usize, max_chars: usize) -> Cow<'_, str> {
    let total_lines = count_lines(s);
    if total_lines <= max_lines && (s.len() <= max_chars || s.chars().count() <= max_chars) {
        return Cow::Borrowed(s);
    }
    let mut shown = 0usize;
    let mut used = 0usize;
    let mut kept_end = 0usize;
    let mut partial: Option<String> = None;
    for (start, line) in line_spans(s) {
        let sep = usize::from(shown > 0);
        // Not even the separator fits: an empty line would still push the text over the budget.
        if shown == max_lines || used + sep > max_chars {
            break;
        }
        let room = max_chars - (used + sep);
        let cut = truncate_chars(line, room);
        if let Cow::Borrowed(_) = cut {
            used += sep + line.chars().count();
            kept_end = start + line.len();
            shown += 1;
            continue;
        }
        if room > 0 {
            partial = Some(cut.into_owned());
            shown += 1;
        }
        break;
    }
    let hidden = total_lines - shown;
    let mut out = String::with_capacity(kept_end + 64);
    out.push_str(&s[..kept_end]);
    if let Some(p) = partial {
        if shown > 1 {
            out.push('\n');
        }
        out.push_str(&p);
    }
    if hidden > 0 {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("... ({hidden} more lines truncated)"));
    }
    Cow::Owned(out)
}

/// A shell call's output as pi's own bash tool bounds it (SPEC §8): its last 2,000 lines, and
/// at most their last 50 KiB, whole lines only (a last line longer than that keeps its end); when
/// cut, a blank line and pi's note `[Showing lines X-Y of N]` (` (50.0KB limit)` when the bytes
/// bound cut it; `[Showing last S of line N (line is T)]` for a cut last line) follow.
pub fn bound_shell_output(s: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = {
        let mut l: Vec<&str> = if s.is_empty() { Vec::new() } else { s.split('\n').collect() };
        if s.ends_with('\n') {
            l.pop();
        }
        l
    };
    let total = lines.len();
    if total <= SHELL_MAX_LINES && s.len() <= SHELL_MAX_BYTES {
        return Cow::Borrowed(s);
    }
    // Whole lines from the end, while they fit.
    let (mut kept, mut bytes, mut by_bytes) = (0usize, 0usize, false);
    for line in lines.iter().rev() {
        if kept == SHELL_MAX_LINES {
            break;
        }
        let need = line.len() + usize::from(kept > 0);
        if bytes + need > SHELL_MAX_BYTES {
            by_bytes = true;
            break;
        }
        bytes += need;
        kept += 1;
    }
    if kept == 0 {
        // The last line alone is longer than the bound: its end.
        let last = lines.last().copied().unwrap_or_default();
        let mut from = last.len() - SHELL_MAX_BYTES;
        while !last.is_char_boundary(from) {
            from += 1;
        }
        let tail = &last[from..];
        return Cow::Owned(format!(
            "{tail}\n\n[Showing last {} of line {total} (line is {})]",
            format_size(tail.len()),
            format_size(last.len())
        ));
    }
    let first = total - kept + 1;
    let limit = if by_bytes { format!(" ({} limit)", format_size(SHELL_MAX_BYTES)) } else { String::new() };
    Cow::Owned(format!("{}\n\n[Showing lines {first}-{total} of {total}{limit}]", lines[total - kept..].join("\n")))
}

/// A size as pi writes it: `512B`, `50.0KB`, `1.5MB`.
fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// At most 200 items, plus `... (N more files truncated)` when items were left out.
pub fn bound_list<T>(items: &[T]) -> (&[T], Option<String>) {
    if items.len() <= LIST_MAX_ITEMS {
        return (items, None);
    }
    let hidden = items.len() - LIST_MAX_ITEMS;
    (&items[..LIST_MAX_ITEMS], Some(format!("... ({hidden} more files truncated)")))
}

/// A read card's content: 20 lines, then a blank line and
/// `[N more lines in file. Use offset=K to continue.]`, where K is the 1-based number of the first
/// line not shown (`start_line` is the file line number of the content's first line; 0 counts as 1).
pub fn bound_read(content: &str, start_line: u64) -> Cow<'_, str> {
    let total = count_lines(content);
    if total <= READ_MAX_LINES {
        return Cow::Borrowed(content);
    }
    let end = line_spans(content).nth(READ_MAX_LINES - 1).map_or(content.len(), |(start, line)| start + line.len());
    let remaining = total - READ_MAX_LINES;
    let next = start_line.max(1).saturating_add(READ_MAX_LINES as u64);
    Cow::Owned(format!("{}\n\n[{remaining} more lines in file. Use offset={next} to continue.]", &content[..end]))
}

/// The thinking trace of one message: 50,000 chars, then `\n[Cursor activity trace truncated]\n`.
pub fn bound_thinking(s: &str) -> Cow<'_, str> {
    if s.len() <= THINKING_MAX_CHARS {
        return Cow::Borrowed(s);
    }
    match s.char_indices().nth(THINKING_MAX_CHARS) {
        None => Cow::Borrowed(s),
        Some((end, _)) => Cow::Owned(format!("{}\n{THINKING_TRUNCATED_MARKER}\n", &s[..end])),
    }
}

// ------------------------------------------------------------------------------------------------
// Card previews.

/// A bounded card body: the lines to show and how many lines of the text were left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preview {
    pub lines: Vec<String>,
    pub hidden_lines: usize,
}

/// A card body preview. Collapsed: at most 8 lines and 4,000 chars (newlines included), each line
/// at most 240 chars (cut with `…`). Expanded: the transcript bound (800 lines / 24,000 chars) and
/// no per-line cut. Both expand tabs to 3 spaces and turn control characters into spaces, keeping
/// the line structure; trailing line endings are ignored. A line crossing the char budget is shown
/// cut with `…`.
pub fn preview(text: &str, expanded: bool) -> Preview {
    let text = text.trim_end_matches(['\n', '\r']);
    let (max_lines, max_chars, line_cap) = if expanded {
        (TRANSCRIPT_MAX_LINES, TRANSCRIPT_MAX_CHARS, usize::MAX)
    } else {
        (PREVIEW_MAX_LINES, PREVIEW_MAX_CHARS, PREVIEW_LINE_CHARS)
    };
    let total = count_lines(text);
    let mut lines = Vec::new();
    let mut used = 0usize;
    for (_, raw) in line_spans(text) {
        if lines.len() == max_lines {
            break;
        }
        let sep = usize::from(!lines.is_empty());
        let room = max_chars.saturating_sub(used + sep);
        if room == 0 {
            break;
        }
        let (line, n) = preview_line_counted(raw, line_cap.min(room));
        used += sep + n;
        lines.push(line);
    }
    Preview { hidden_lines: total - lines.len(), lines }
}

/// A shell body's collapsed preview (SPEC §8): as [`preview`] when it has at most 8 lines; a
/// longer one shows its first 3 and its last 4 lines with `… (N lines)` between (N: the lines
/// left out), since the end of a command's output is where its failures and summary are.
pub fn shell_preview(text: &str) -> Preview {
    let text = text.trim_end_matches(['\n', '\r']);
    let total = count_lines(text);
    if total <= PREVIEW_MAX_LINES {
        return preview(text, false);
    }
    let hidden = total - SHELL_PREVIEW_HEAD - SHELL_PREVIEW_TAIL;
    let spans: Vec<&str> = line_spans(text).map(|(_, l)| l).collect();
    let line = |l: &str| preview_line(l, PREVIEW_LINE_CHARS);
    let mut lines: Vec<String> = spans[..SHELL_PREVIEW_HEAD].iter().map(|l| line(l)).collect();
    lines.push(format!("{ELLIPSIS} ({hidden} lines)"));
    lines.extend(spans[spans.len() - SHELL_PREVIEW_TAIL..].iter().map(|l| line(l)));
    Preview { lines, hidden_lines: 0 }
}

// ------------------------------------------------------------------------------------------------
// Unknown-tool fallback.

/// `key: value` lines for an unknown tool's args: at most 8 args (then `+N more args`), strings
/// shown raw, other scalars as JSON, arrays as their first 3 items then `+N more`, objects as
/// compact JSON; every line is a display line (240 chars). Non-object args give one line. An
/// object's field `hidden` is left out (read in place, not copied) and not counted.
pub fn fallback_args(args: &Value, hidden: Option<&str>) -> Vec<String> {
    match args {
        Value::Null => Vec::new(),
        Value::Object(map) => {
            let shown = map.len() - usize::from(hidden.is_some_and(|h| map.contains_key(h)));
            let mut out: Vec<String> = map
                .iter()
                .filter(|(k, _)| Some(k.as_str()) != hidden)
                .take(FALLBACK_MAX_ARGS)
                .map(|(k, v)| {
                    let value = compact_value(v);
                    display_line_chars(k.chars().chain(": ".chars()).chain(value.chars()), DISPLAY_LINE_CHARS)
                })
                .collect();
            if shown > FALLBACK_MAX_ARGS {
                out.push(format!("+{} more args", shown - FALLBACK_MAX_ARGS));
            }
            out
        }
        other => vec![display_line(&compact_value(other), DISPLAY_LINE_CHARS)],
    }
}

fn compact_value(v: &Value) -> String {
    match v {
        Value::String(s) => truncate_chars(s, FALLBACK_VALUE_BYTES).into_owned(),
        Value::Array(items) if items.is_empty() => "[]".to_owned(),
        Value::Array(items) => {
            let mut parts: Vec<String> = items
                .iter()
                .take(FALLBACK_ARRAY_ITEMS)
                .map(|item| match item {
                    Value::String(s) => truncate_chars(s, FALLBACK_VALUE_BYTES / 4).into_owned(),
                    other => capped_json(other, FALLBACK_VALUE_BYTES / 4),
                })
                .collect();
            if items.len() > FALLBACK_ARRAY_ITEMS {
                parts.push(format!("+{} more", items.len() - FALLBACK_ARRAY_ITEMS));
            }
            parts.join(", ")
        }
        other => capped_json(other, FALLBACK_VALUE_BYTES),
    }
}

/// A writer that keeps at most `cap` bytes and then refuses more.
struct CappedWriter {
    buf: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = self.cap - self.buf.len();
        if room == 0 && !data.is_empty() {
            self.overflowed = true;
            return Err(io::Error::other("capped"));
        }
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Compact JSON of `v`, cut after about `cap` bytes (at a char boundary) with `…`.
fn capped_json(v: &Value, cap: usize) -> String {
    let mut w = CappedWriter { buf: Vec::new(), cap, overflowed: false };
    // An error only means the cap was hit.
    let _ = serde_json::to_writer(&mut w, v);
    let mut s = match String::from_utf8(w.buf) {
        Ok(s) => s,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    if w.overflowed {
        s.push(ELLIPSIS);
    }
    s
}

/// An unknown tool's result: at most 6 non-blank display lines and 240 chars (newlines included),
/// ending with `…` when anything was left out.
pub fn fallback_result(text: &str) -> String {
    let mut out = String::new();
    let mut used = 0usize;
    let mut shown = 0usize;
    let mut cut = false;
    for raw in text.lines() {
        let line = display_line(raw, FALLBACK_RESULT_CHARS);
        if line.is_empty() {
            continue;
        }
        if shown == FALLBACK_RESULT_LINES {
            cut = true;
            break;
        }
        let sep = usize::from(shown > 0);
        let room = FALLBACK_RESULT_CHARS.saturating_sub(used + sep);
        if room == 0 {
            cut = true;
            break;
        }
        let piece = truncate_chars(&line, room);
        cut |= line.ends_with(ELLIPSIS) || matches!(piece, Cow::Owned(_));
        if sep == 1 {
            out.push('\n');
        }
        used += sep + piece.chars().count();
        out.push_str(&piece);
        shown += 1;
        if matches!(piece, Cow::Owned(_)) {
            break;
        }
    }
    if cut {
        out = end_with_ellipsis(out, FALLBACK_RESULT_CHARS);
    }
    out
}

// ------------------------------------------------------------------------------------------------
// Paths.

fn has_drive_prefix(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'/' || b[2] == b'\\')
}

/// Windows-style paths (`C:\…`, `\\server\…`, or backslashes without any `/`) shown with `/`.
fn display_separators(p: &str) -> Cow<'_, str> {
    let windows = has_drive_prefix(p) || p.starts_with("\\\\") || (p.contains('\\') && !p.contains('/'));
    if windows && p.contains('\\') {
        Cow::Owned(p.replace('\\', "/"))
    } else {
        Cow::Borrowed(p)
    }
}

fn is_absolute(p: &str) -> bool {
    p.starts_with('/') || has_drive_prefix(p)
}

/// `p` without trailing `/` (a root, `/` or `C:/`, keeps its slash).
fn trim_trailing_slashes(p: &str) -> &str {
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        &p[..1.min(p.len())]
    } else if trimmed.len() == 2 && has_drive_prefix(p) {
        &p[..3]
    } else {
        trimmed
    }
}

/// `p` with the directory `dir` (a trimmed absolute path) removed from its start, comparing
/// case-sensitively except for a drive letter.
fn strip_dir<'p>(p: &'p str, dir: &str) -> Option<&'p str> {
    if p.len() < dir.len() || !p.is_char_boundary(dir.len()) {
        return None;
    }
    let (head, rest) = p.split_at(dir.len());
    let same = if has_drive_prefix(dir) && has_drive_prefix(head) {
        head.as_bytes()[0].eq_ignore_ascii_case(&dir.as_bytes()[0]) && head[1..] == dir[1..]
    } else {
        head == dir
    };
    if !same {
        return None;
    }
    // A root (`/`, `C:/`) ends with `/`; otherwise the match must end at a component boundary.
    (dir.ends_with('/') || rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// A path for display: an absolute path inside `cwd` is shown relative to it (`cwd` itself as
/// `.`, a trailing `/` kept); other paths are unchanged. Windows-style paths are shown with `/`.
pub fn relative_path(path: &str, cwd: Option<&str>) -> String {
    let shown = display_separators(path);
    let Some(cwd) = cwd.filter(|c| !c.is_empty()) else {
        return shown.into_owned();
    };
    let cwd = display_separators(cwd);
    if !is_absolute(&shown) || !is_absolute(&cwd) {
        return shown.into_owned();
    }
    let dir = trim_trailing_slashes(&cwd);
    let p = trim_trailing_slashes(&shown);
    let trailing_slash = p.len() < shown.len() && !p.ends_with('/');
    match strip_dir(p, dir) {
        Some(rest) => {
            let rest = rest.trim_start_matches('/');
            if rest.is_empty() {
                ".".to_owned()
            } else if trailing_slash {
                format!("{rest}/")
            } else {
                rest.to_owned()
            }
        }
        None => shown.into_owned(),
    }
}

fn is_sensitive_component(component: &str) -> bool {
    let c = component.to_ascii_lowercase();
    c == ".ssh"
        || c == "secrets"
        || c.starts_with("secrets.")
        || c.starts_with(".env")
        || c == ".npmrc"
        || c == ".netrc"
        || c == "_netrc"
        || c.contains("credentials")
        || c.starts_with("id_rsa")
        || c.starts_with("id_ed25519")
        || c.starts_with("id_ecdsa")
        || c.starts_with("id_dsa")
        || [".pem", ".key", ".p12", ".pfx"].iter().any(|ext| c.ends_with(ext))
}

/// Whether any component of `path` is sensitive (no local file preview): `.ssh`, `secrets`,
/// `.env*`, `.npmrc`, `.netrc`, `credentials`, `id_rsa`, `id_ed25519` (and other `id_*` keys),
/// `*.pem`, `*.key`, `*.p12`, `*.pfx`. Case-insensitive; `/` and `\` both separate components.
pub fn is_sensitive_path(path: &str) -> bool {
    path.split(['/', '\\']).filter(|c| !c.is_empty()).any(is_sensitive_component)
}

/// Token estimate of `text`: ceil(UTF-16 code units / 4).
pub fn estimate_tokens(text: &str) -> u64 {
    let units = if text.is_ascii() { text.len() } else { text.encode_utf16().count() };
    (units as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn shell_output_keeps_its_last_2000_lines_as_pi_does() {
        let small = "a\nb\n";
        assert!(matches!(bound_shell_output(small), Cow::Borrowed(s) if s == small));
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let b = bound_shell_output(&text);
        let (kept, note) = b.rsplit_once("\n\n").unwrap();
        assert_eq!(note, "[Showing lines 3001-5000 of 5000]");
        assert!(kept.starts_with("line 3001\n") && kept.ends_with("\nline 5000"), "{}", &kept[..20]);
        assert_eq!(count_lines(kept), 2000);
    }

    #[test]
    fn shell_output_keeps_its_last_50_kib_of_whole_lines() {
        // 1,000 lines of 99 bytes: the line bound is not reached, the byte bound is.
        let text: String = (1..=1000).map(|i| format!("{i:04} {}\n", "x".repeat(93))).collect();
        let b = bound_shell_output(&text);
        let (kept, note) = b.rsplit_once("\n\n").unwrap();
        // 517 lines of 98 bytes and 516 newlines fit 51,200 bytes; 518 do not.
        assert_eq!(note, "[Showing lines 484-1000 of 1000 (50.0KB limit)]");
        assert!(kept.len() <= SHELL_MAX_BYTES && kept.starts_with("0484 "), "{}", kept.len());
        // One line longer than the bound keeps its end, cut on a character boundary.
        let long = format!("start {}é end", "y".repeat(60_000));
        let b = bound_shell_output(&long);
        assert!(b.ends_with("é end\n\n[Showing last 50.0KB of line 1 (line is 58.6KB)]"), "{}", &b[b.len() - 80..]);
        assert!(!b.contains("start"));
    }

    #[test]
    fn a_long_shell_preview_shows_its_first_and_last_lines() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let p = shell_preview(&text);
        assert_eq!(
            p.lines,
            ["line 1", "line 2", "line 3", "… (93 lines)", "line 97", "line 98", "line 99", "line 100"]
        );
        assert_eq!(p.hidden_lines, 0);
        // Eight lines or fewer: the usual preview.
        assert_eq!(shell_preview("a\nb"), preview("a\nb", false));
    }

    #[test]
    fn transcript_within_bounds_is_borrowed() {
        let s = "line\n".repeat(800);
        assert!(matches!(bound_transcript(&s), Cow::Borrowed(_)));
        let s = "é".repeat(24_000);
        assert!(matches!(bound_transcript(&s), Cow::Borrowed(_)));
    }

    #[test]
    fn transcript_line_bound() {
        let s: String = (1..=1000).map(|i| format!("l{i}\n")).collect();
        let out = bound_transcript(&s);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 801);
        assert_eq!(lines[799], "l800");
        assert_eq!(lines[800], "... (200 more lines truncated)");
    }

    #[test]
    fn transcript_char_bound() {
        let line = "x".repeat(99);
        let s: String = (0..300).map(|_| format!("{line}\n")).collect();
        let out = bound_transcript(&s);
        let lines: Vec<&str> = out.lines().collect();
        // 240 full lines use 23,999 chars; the 241st gets no room (0 after its newline).
        assert_eq!(lines.len(), 241);
        assert_eq!(lines[240], "... (60 more lines truncated)");
        // One huge line is cut and shown.
        let huge = "y".repeat(30_000);
        let out = bound_transcript(&huge);
        assert_eq!(out.chars().count(), 24_000);
        assert!(out.ends_with('…'));
        let text = format!("a\n{huge}\nb");
        let out = bound_transcript(&text);
        assert!(out.starts_with("a\nyyy"));
        assert!(out.ends_with("…\n... (1 more lines truncated)"));
    }

    #[test]
    fn list_bound() {
        let items: Vec<String> = (0..250).map(|i| format!("f{i}")).collect();
        let (shown, marker) = bound_list(&items);
        assert_eq!(shown.len(), 200);
        assert_eq!(marker.as_deref(), Some("... (50 more files truncated)"));
        let (shown, marker) = bound_list(&items[..200]);
        assert_eq!((shown.len(), marker), (200, None));
    }

    #[test]
    fn read_bound() {
        let content: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        let out = bound_read(&content, 1);
        assert!(out.starts_with("line 1\n"));
        assert!(out.ends_with("line 20\n\n[5 more lines in file. Use offset=21 to continue.]"));
        let out = bound_read(&content, 101);
        assert!(out.ends_with("[5 more lines in file. Use offset=121 to continue.]"));
        let out = bound_read(&content, 0);
        assert!(out.ends_with("offset=21 to continue.]"));
        let short = "a\nb\n";
        assert!(matches!(bound_read(short, 1), Cow::Borrowed("a\nb\n")));
    }

    #[test]
    fn thinking_bound() {
        let s = "é".repeat(50_000);
        assert!(matches!(bound_thinking(&s), Cow::Borrowed(_)));
        let s = "é".repeat(50_001);
        let out = bound_thinking(&s);
        assert_eq!(out, format!("{}\n[Cursor activity trace truncated]\n", "é".repeat(50_000)));
    }

    #[test]
    fn preview_collapsed() {
        let text: String = (1..=12).map(|i| format!("\tline{i}\u{7}\n")).collect();
        let p = preview(&text, false);
        assert_eq!(p.lines.len(), 8);
        assert_eq!(p.lines[0], "   line1 ");
        assert_eq!(p.hidden_lines, 4);
        let long = "z".repeat(500);
        let p = preview(&long, false);
        assert_eq!(p.lines[0].chars().count(), 240);
        assert!(p.lines[0].ends_with('…'));
        assert_eq!(p.hidden_lines, 0);
        assert_eq!(preview("", false), Preview::default());
        assert_eq!(preview("a\r\nb\r\n\r\n", false).lines, vec!["a".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn preview_collapsed_char_budget() {
        // 8 lines of 600 chars: each cut to 240, 8 * 240 + 7 < 4000 → all 8 shown.
        let text = vec!["q".repeat(600); 8].join("\n");
        let p = preview(&text, false);
        assert_eq!(p.lines.len(), 8);
        let total: usize = p.lines.iter().map(|l| l.chars().count()).sum::<usize>() + 7;
        assert!(total <= PREVIEW_MAX_CHARS);
    }

    #[test]
    fn preview_expanded() {
        let text = format!("\t{}\n", "w".repeat(1000));
        let p = preview(&text, true);
        assert_eq!(p.lines.len(), 1);
        assert_eq!(p.lines[0].chars().count(), 1003);
        let many: String = (0..900).map(|i| format!("{i}\n")).collect();
        let p = preview(&many, true);
        assert_eq!((p.lines.len(), p.hidden_lines), (800, 100));
    }

    #[test]
    fn fallback_args_lines() {
        let args = json!({
            "query": "find\nthings",
            "n": 3,
            "flag": true,
            "none": null,
            "paths": ["a", "b", "c", "d", "e"],
            "empty": [],
            "obj": {"x": 1, "y": [1, 2]},
        });
        assert_eq!(
            fallback_args(&args, None),
            vec![
                "empty: []",
                "flag: true",
                "n: 3",
                "none: null",
                "obj: {\"x\":1,\"y\":[1,2]}",
                "paths: a, b, c, +2 more",
                "query: find things",
            ]
        );
        let many: serde_json::Map<String, Value> = (0..11).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let lines = fallback_args(&Value::Object(many), None);
        assert_eq!(lines.len(), 9);
        assert_eq!(lines[8], "+3 more args");
        // A hidden field is neither shown nor counted; one that is absent changes nothing.
        let mut nine: serde_json::Map<String, Value> = (0..8).map(|i| (format!("k{i:02}"), json!(i))).collect();
        nine.insert("id".into(), json!("secret-id"));
        let shown = fallback_args(&Value::Object(nine.clone()), Some("id"));
        assert_eq!(shown.len(), 8);
        assert!(shown.iter().all(|l| !l.contains("secret-id") && !l.contains("more args")));
        assert_eq!(fallback_args(&Value::Object(nine), Some("other")).last().map(String::as_str), Some("+1 more args"));
        assert!(fallback_args(&Value::Null, None).is_empty());
        assert_eq!(fallback_args(&json!("just text"), None), vec!["just text"]);
        let big = json!({"content": "x".repeat(100_000), "deep": {"s": "y".repeat(100_000)}});
        for line in fallback_args(&big, None) {
            assert_eq!(line.chars().count(), 240);
            assert!(line.ends_with('…'));
        }
    }

    #[test]
    fn fallback_result_bounds() {
        assert_eq!(fallback_result("ok"), "ok");
        assert_eq!(fallback_result("a\n\n  b  \n"), "a\nb");
        let text: String = (1..=10).map(|i| format!("r{i}\n")).collect();
        assert_eq!(fallback_result(&text), "r1\nr2\nr3\nr4\nr5\nr6…");
        let long = "m".repeat(1000);
        let out = fallback_result(&long);
        assert_eq!(out.chars().count(), 240);
        assert!(out.ends_with('…'));
        let out = fallback_result(&format!("{}\n{}", "a".repeat(200), "b".repeat(100)));
        assert_eq!(out.chars().count(), 240);
        assert!(out.ends_with('…'));
    }

    #[test]
    fn relative_paths() {
        let cwd = Some("/home/u/proj");
        assert_eq!(relative_path("/home/u/proj/src/a.rs", cwd), "src/a.rs");
        assert_eq!(relative_path("/home/u/proj", cwd), ".");
        assert_eq!(relative_path("/home/u/proj/", cwd), ".");
        assert_eq!(relative_path("/home/u/proj/src/", Some("/home/u/proj/")), "src/");
        assert_eq!(relative_path("/home/u/project/x", cwd), "/home/u/project/x");
        assert_eq!(relative_path("/etc/passwd", cwd), "/etc/passwd");
        assert_eq!(relative_path("src/a.rs", cwd), "src/a.rs");
        assert_eq!(relative_path("/home/u/proj/a", None), "/home/u/proj/a");
        assert_eq!(relative_path("/home/u/proj/a", Some("")), "/home/u/proj/a");
        assert_eq!(relative_path("/etc/x", Some("/")), "etc/x");
        assert_eq!(relative_path("/", Some("/")), ".");
        assert_eq!(relative_path("/Home/u/proj/a", cwd), "/Home/u/proj/a");
    }

    #[test]
    fn relative_windows_paths() {
        let cwd = Some(r"C:\Users\me\proj");
        assert_eq!(relative_path(r"C:\Users\me\proj\src\a.rs", cwd), "src/a.rs");
        assert_eq!(relative_path(r"c:\Users\me\proj\src\a.rs", cwd), "src/a.rs");
        assert_eq!(relative_path("C:/Users/me/proj", cwd), ".");
        assert_eq!(relative_path(r"C:\Users\me\other\x", cwd), "C:/Users/me/other/x");
        assert_eq!(relative_path(r"C:\users\me\proj\x", cwd), "C:/users/me/proj/x");
        assert_eq!(relative_path(r"D:\x", Some(r"D:\")), "x");
        assert_eq!(relative_path(r"src\a.rs", None), "src/a.rs");
    }

    #[test]
    fn sensitive_paths() {
        for p in [
            "/home/u/.ssh/config",
            ".env",
            "app/.env.local",
            "/x/secrets/db.txt",
            "~/.npmrc",
            "/home/u/.netrc",
            "/home/u/.aws/credentials",
            "id_rsa",
            "/k/id_ed25519.pub",
            "certs/server.PEM",
            "tls.key",
            "a\\b\\cert.p12",
            "c.pfx",
        ] {
            assert!(is_sensitive_path(p), "{p}");
        }
        for p in ["src/main.rs", "docs/env.md", "monkey.txt", "keys/readme.md", "/secret-santa/x"] {
            assert!(!is_sensitive_path(p), "{p}");
        }
    }

    #[test]
    fn token_estimates() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // U+1F600 is two UTF-16 units.
        assert_eq!(estimate_tokens("😀😀😀"), 2);
        assert_eq!(estimate_tokens("ééé"), 1);
    }

    proptest! {
        #[test]
        fn preview_bounded(s in "(\\PC|\t|\n|\r){0,600}", expanded in any::<bool>()) {
            let p = preview(&s, expanded);
            let total = count_lines(s.trim_end_matches(['\n', '\r']));
            prop_assert_eq!(p.lines.len() + p.hidden_lines, total);
            if !expanded {
                prop_assert!(p.lines.len() <= PREVIEW_MAX_LINES);
                let chars: usize = p.lines.iter().map(|l| l.chars().count()).sum::<usize>()
                    + p.lines.len().saturating_sub(1);
                prop_assert!(chars <= PREVIEW_MAX_CHARS);
                prop_assert!(p.lines.iter().all(|l| l.chars().count() <= PREVIEW_LINE_CHARS));
            }
            prop_assert!(p.lines.iter().all(|l| !l.contains('\t') && !l.chars().any(char::is_control)));
        }

        #[test]
        fn transcript_bounded(shape in prop::collection::vec((0usize..120, any::<bool>()), 0..1200)) {
            let lines: Vec<String> =
                shape.iter().map(|&(n, wide)| if wide { "é".repeat(n) } else { "a".repeat(n) }).collect();
            let s = lines.join("\n");
            let out = bound_transcript(&s);
            let body_lines = out.lines().count();
            prop_assert!(body_lines <= TRANSCRIPT_MAX_LINES + 1);
            // Everything before the marker line fits the char budget.
            let body = match out.rfind("\n... (") {
                Some(i) if out.ends_with("more lines truncated)") => &out[..i],
                _ => out.as_ref(),
            };
            prop_assert!(body.chars().count() <= TRANSCRIPT_MAX_CHARS);
            // What is shown is the start of the text (a cut line ends with `…`).
            prop_assert!(s.starts_with(body.strip_suffix(ELLIPSIS).unwrap_or(body)));
        }

        #[test]
        fn fallback_result_bounded(s in "(\\PC|\n){0,800}") {
            let out = fallback_result(&s);
            prop_assert!(out.chars().count() <= FALLBACK_RESULT_CHARS);
            prop_assert!(out.lines().count() <= FALLBACK_RESULT_LINES);
        }

        #[test]
        fn relative_path_inside_cwd(parts in prop::collection::vec("[a-z]{1,5}", 1..5)) {
            let rel = parts.join("/");
            prop_assert_eq!(relative_path(&format!("/w/cwd/{rel}"), Some("/w/cwd")), rel.clone());
            prop_assert_eq!(relative_path(&format!("/w/cwdx/{rel}"), Some("/w/cwd")), format!("/w/cwdx/{rel}"));
        }
    }
}
