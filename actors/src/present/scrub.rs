//! Secret scrubbing (SPEC §8): the [`Scrubber`] owns every redaction rule applied to card
//! args/results, lifecycle labels, shell progress, incomplete reasons, errors and traces.
//!
//! Rules run in this order, each as a hand-written scanner (no regex):
//! 1. the configured API key (exact) → `[redacted]`;
//! 2. URL userinfo `scheme://user:pass@host` → `scheme://[redacted]@host` (any non-empty userinfo:
//!    tokens are often sent as the user part alone, as in `https://<token>@github.com`);
//! 3. scp-style `user:pass@host:` → `[redacted]@host:`;
//! 4. `Bearer <token>` (case-insensitive) → `Bearer [redacted]`;
//! 5. `cookie:` / `set-cookie:` (case-insensitive, also `=`) → the rest of the line (or the quoted
//!    value) becomes `[redacted]`;
//! 6. field-style secrets `authorization|api_key|api-key|apikey|token|session|session_id|session-id|
//!    sessionid` (case-insensitive, whole word; `_`/`-`/camel-case humps count as word starts, so
//!    `GITHUB_TOKEN=` and `accessToken:` match, `tokens:` and `token_count=` don't) followed by `:`/`=`
//!    (or a `--token value` flag) → the value becomes `[redacted]`, quotes kept; an
//!    `Authorization: Basic xyz` style value keeps its scheme word;
//! 7. bridge endpoint URLs/paths (containing a configured marker, default
//!    `/cursor-pi-tool-bridge/`) → `[redacted-bridge-endpoint]` for the whole URL/path token.
//!
//! Scrubbing is idempotent: text that is already `[redacted]` is left alone. The common case (no
//! rule can match) is a single cheap scan that returns the input borrowed.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

/// Replacement for a redacted secret.
pub const REDACTED: &str = "[redacted]";
/// Replacement for a redacted bridge endpoint URL/path.
pub const REDACTED_BRIDGE_ENDPOINT: &str = "[redacted-bridge-endpoint]";
/// The path marker of the pi tool bridge endpoint (SPEC §7), redacted by default.
pub const DEFAULT_BRIDGE_MARKER: &str = "/cursor-pi-tool-bridge/";

/// Whether `b` is exactly one of the replacement markers (an already redacted value).
fn is_marker(b: &[u8]) -> bool {
    b == REDACTED.as_bytes() || b == REDACTED_BRIDGE_ENDPOINT.as_bytes()
}

/// Whether `b` starts with one of the replacement markers.
fn starts_with_marker(b: &[u8]) -> bool {
    b.starts_with(REDACTED.as_bytes()) || b.starts_with(REDACTED_BRIDGE_ENDPOINT.as_bytes())
}

/// Field names whose `:`/`=` value is a secret, lower case, longest alternatives first.
const FIELD_NAMES: &[&[u8]] = &[
    b"authorization",
    b"api_key",
    b"api-key",
    b"apikey",
    b"session_id",
    b"session-id",
    b"sessionid",
    b"session",
    b"token",
];

/// Authorization scheme words: `Authorization: Basic xyz` keeps `Basic` and redacts `xyz`.
const AUTH_SCHEMES: &[&[u8]] = &[b"bearer", b"basic", b"digest", b"token", b"negotiate", b"ntlm"];

/// Unquoted values that are never secrets (`"session": null`).
const NON_SECRET_VALUES: &[&[u8]] = &[b"null", b"true", b"false", b"undefined", b"none"];

/// Redacts secrets from display text. Cheap to clone; `Default` has no API key and the default
/// bridge marker.
#[derive(Clone)]
pub struct Scrubber {
    api_key: Option<String>,
    bridge_markers: Vec<String>,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key itself.
        f.debug_struct("Scrubber")
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("bridge_markers", &self.bridge_markers)
            .finish()
    }
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Scrubber {
    /// A scrubber for `api_key` (trimmed; empty means none) with the default bridge marker.
    pub fn new(api_key: Option<String>) -> Self {
        let api_key = api_key.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty());
        Self { api_key, bridge_markers: vec![DEFAULT_BRIDGE_MARKER.to_owned()] }
    }

    /// Replaces the bridge endpoint markers (matched case-insensitively; empty ones are dropped).
    #[must_use]
    pub fn with_bridge_markers<I, S>(mut self, markers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.bridge_markers = markers.into_iter().map(Into::into).filter(|m| !m.is_empty()).collect();
        self
    }

    /// Whether an API key is configured.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// The configured bridge endpoint markers.
    pub fn bridge_markers(&self) -> &[String] {
        &self.bridge_markers
    }

    /// Scrubs `s`; borrowed when nothing was redacted.
    pub fn scrub<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if !self.may_match(s) {
            return Cow::Borrowed(s);
        }
        self.apply_rules(s)
    }

    /// Every rule, in order, without the pre-scan.
    fn apply_rules<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut cur = Cow::Borrowed(s);
        if let Some(key) = &self.api_key {
            apply(&mut cur, |t| scrub_api_key(t, key));
        }
        apply(&mut cur, scrub_url_userinfo);
        apply(&mut cur, scrub_scp_userinfo);
        apply(&mut cur, scrub_bearer);
        apply(&mut cur, scrub_cookie);
        apply(&mut cur, scrub_fields);
        if !self.bridge_markers.is_empty() {
            apply(&mut cur, |t| scrub_bridge(t, &self.bridge_markers));
        }
        cur
    }

    /// Scrubs every string in `v` recursively; object keys are kept. Additionally, a non-empty
    /// string value under a secret-named key (`token`, `apiKey`, `accessToken`, `cookie`, …)
    /// becomes `[redacted]` unless it already is redacted (`[redacted]`, `Bearer [redacted]`).
    pub fn scrub_json(&self, v: &mut Value) {
        match v {
            Value::String(s) => self.scrub_string_in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_json(item)),
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    match item {
                        Value::String(s) => {
                            self.scrub_string_in_place(s);
                            if !s.is_empty() && !is_redacted_value(s) && is_secret_key(key) {
                                *s = REDACTED.to_owned();
                            }
                        }
                        Value::Null => {}
                        // Whatever sits under a secret key goes, whatever its shape.
                        other if is_secret_key(key) => *other = Value::String(REDACTED.to_owned()),
                        other => self.scrub_json(other),
                    }
                }
                // Header lists: `{"name": "Authorization", "value": "…"}`.
                let names_a_secret = ["name", "key", "header"].iter().any(|k| {
                    map.get(*k).and_then(Value::as_str).is_some_and(|n| {
                        is_secret_key(n) || n.eq_ignore_ascii_case("cookie") || n.eq_ignore_ascii_case("set-cookie")
                    })
                });
                if names_a_secret {
                    if let Some(v) = map.get_mut("value").filter(|v| !v.is_null()) {
                        *v = Value::String(REDACTED.to_owned());
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn scrub_string_in_place(&self, s: &mut String) {
        if let Cow::Owned(scrubbed) = self.scrub(s) {
            *s = scrubbed;
        }
    }

    /// Cheap pre-scan: false only when no rule can possibly match.
    fn may_match(&self, s: &str) -> bool {
        if let Some(key) = &self.api_key {
            if s.contains(key.as_str()) {
                return true;
            }
        }
        let b = s.as_bytes();
        if self.bridge_markers.iter().any(|m| find_ci(b, m.as_bytes(), 0).is_some()) {
            return true;
        }
        has_builtin_trigger(b)
    }
}

fn apply<'a>(cur: &mut Cow<'a, str>, rule: impl FnOnce(&str) -> Option<String>) {
    if let Some(next) = rule(cur) {
        *cur = Cow::Owned(next);
    }
}

/// Whether any keyword/character a built-in rule needs occurs in `b`. The userinfo rules need an
/// `@` right after a userinfo byte: the first `@` of every run the URL or scp rule rewrites follows
/// a byte of the authority or userinfo, never whitespace or another `@` (so a diff's `@@` hunk
/// header does not set off every rule).
fn has_builtin_trigger(b: &[u8]) -> bool {
    (0..b.len()).any(|i| {
        let rest = &b[i..];
        match b[i] {
            b'@' => i > 0 && !b[i - 1].is_ascii_whitespace() && b[i - 1] != b'@',
            b'a' | b'A' => starts_with_ci(rest, b"authorization") || api_key_len(rest).is_some(),
            b'b' | b'B' => starts_with_ci(rest, b"bearer"),
            b'c' | b'C' => starts_with_ci(rest, b"cookie"),
            b's' | b'S' => starts_with_ci(rest, b"session"),
            b't' | b'T' => starts_with_ci(rest, b"token"),
            _ => false,
        }
    })
}

/// Length of an `api_key|api-key|apikey` spelling at the start of `b` (case-insensitive).
fn api_key_len(b: &[u8]) -> Option<usize> {
    if !starts_with_ci(b, b"api") {
        return None;
    }
    let sep = usize::from(matches!(b.get(3), Some(b'_' | b'-')));
    starts_with_ci(&b[3 + sep..], b"key").then_some(6 + sep)
}

// ------------------------------------------------------------------------------------------------
// Byte helpers. Every index produced below sits next to an ASCII byte or at an end of the string,
// so it is always a char boundary.

fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

/// First ASCII-case-insensitive occurrence of `needle` in `hay` at or after `from`.
fn find_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let last_start = hay.len().checked_sub(needle.len())?;
    let window = hay.get(from..=last_start)?;
    // Candidates by the first byte in either case (vectorised), then a full comparison.
    memchr::memchr2_iter(first.to_ascii_lowercase(), first.to_ascii_uppercase(), window)
        .map(|i| from + i)
        .find(|&i| starts_with_ci(&hay[i..], needle))
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_quote(b: u8) -> bool {
    b == b'"' || b == b'\''
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    i
}

/// Whether a word may start at `i`: the previous byte is not an ASCII letter/digit, or `i` starts a
/// camel-case hump (`accessToken`).
fn word_start(b: &[u8], i: usize) -> bool {
    match i.checked_sub(1).map(|p| b[p]) {
        None => true,
        Some(prev) if !prev.is_ascii_alphanumeric() => true,
        Some(prev) => (prev.is_ascii_lowercase() || prev.is_ascii_digit()) && b[i].is_ascii_uppercase(),
    }
}

/// Spans of existing `[redacted]` / `[redacted-bridge-endpoint]` markers.
fn marker_spans(s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for marker in [REDACTED, REDACTED_BRIDGE_ENDPOINT] {
        let mut from = 0;
        while let Some(rel) = s[from..].find(marker) {
            let start = from + rel;
            spans.push((start, start + marker.len()));
            from = start + marker.len();
        }
    }
    spans
}

fn overlaps(spans: &[(usize, usize)], start: usize, end: usize) -> bool {
    spans.iter().any(|&(a, b)| start < b && a < end)
}

/// Builds the output of one rule lazily: `None` until the first replacement.
struct Rewriter<'s> {
    src: &'s str,
    out: Option<String>,
    copied: usize,
}

impl<'s> Rewriter<'s> {
    fn new(src: &'s str) -> Self {
        Self { src, out: None, copied: 0 }
    }

    /// Replaces `src[start..end]` (`start >= ` the end of the previous replacement).
    fn replace(&mut self, start: usize, end: usize, with: &str) {
        let out = self.out.get_or_insert_with(|| String::with_capacity(self.src.len() + 16));
        out.push_str(&self.src[self.copied..start]);
        out.push_str(with);
        self.copied = end;
    }

    fn finish(self) -> Option<String> {
        let mut out = self.out?;
        out.push_str(&self.src[self.copied..]);
        Some(out)
    }
}

// ------------------------------------------------------------------------------------------------
// Rule 1: the API key.

fn scrub_api_key(s: &str, key: &str) -> Option<String> {
    if !s.contains(key) {
        return None;
    }
    // Occurrences overlapping an existing marker are left alone, which keeps scrubbing idempotent
    // even for keys that share text with `[redacted]`.
    let markers = marker_spans(s);
    let mut rw = Rewriter::new(s);
    let mut from = 0;
    while let Some(rel) = s[from..].find(key) {
        let start = from + rel;
        let end = start + key.len();
        if overlaps(&markers, start, end) {
            from = start + s[start..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        rw.replace(start, end, REDACTED);
        from = end;
    }
    rw.finish()
}

// ------------------------------------------------------------------------------------------------
// Rule 2: URL userinfo.

fn is_scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')
}

fn ends_authority(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'/' | b'?' | b'#' | b'\\' | b'"' | b'\'' | b'<' | b'>' | b'`')
}

fn scrub_url_userinfo(s: &str) -> Option<String> {
    if !s.contains("://") || !s.contains('@') {
        return None;
    }
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut from = 0;
    while let Some(rel) = s[from..].find("://") {
        let sep = from + rel;
        let auth_start = sep + 3;
        // The authority also ends at an existing `[redacted…]` marker: a replacement may have
        // removed the character that ended it, and a second pass must decide as the first did.
        let mut auth_end = auth_start;
        while auth_end < b.len() && !ends_authority(b[auth_end]) && !starts_with_marker(&b[auth_end..]) {
            auth_end += 1;
        }
        let has_scheme = sep > 0 && is_scheme_byte(b[sep - 1]);
        if has_scheme {
            if let Some(at) = b[auth_start..auth_end].iter().rposition(|&c| c == b'@') {
                let at = auth_start + at;
                if at > auth_start {
                    rw.replace(auth_start, at, REDACTED);
                }
            }
        }
        // Not `auth_end`: an authority ending in `:` may be followed by `//` (another `://`).
        from = auth_start;
    }
    rw.finish()
}

// ------------------------------------------------------------------------------------------------
// Rule 3: scp-style `user:pass@host:`.

/// Bytes that end an scp-style userinfo when scanning backwards from `@`. A superset of the
/// field-value terminators, so a later rule's replacement never changes what this rule sees.
fn ends_scp_userinfo(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b'"' | b'\''
                | b'`'
                | b'/'
                | b'\\'
                | b'@'
                | b'='
                | b'('
                | b')'
                | b'{'
                | b'}'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b','
                | b';'
                | b'&'
                | b'|'
        )
}

fn is_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')
}

fn scrub_scp_userinfo(s: &str) -> Option<String> {
    if !s.contains('@') {
        return None;
    }
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut last_end = 0;
    for at in (0..b.len()).filter(|&i| b[i] == b'@') {
        let mut start = at;
        while start > last_end && !ends_scp_userinfo(b[start - 1]) {
            start -= 1;
        }
        let userinfo = &b[start..at];
        let Some(colon) = userinfo.iter().position(|&c| c == b':') else {
            continue;
        };
        if colon == 0 || colon + 1 == userinfo.len() {
            continue;
        }
        let mut host_end = at + 1;
        while host_end < b.len() && is_host_byte(b[host_end]) {
            host_end += 1;
        }
        if host_end == at + 1 || b.get(host_end) != Some(&b':') {
            continue;
        }
        rw.replace(start, at, REDACTED);
        last_end = at;
    }
    rw.finish()
}

// ------------------------------------------------------------------------------------------------
// Rule 4: `Bearer <token>`.

fn is_token68_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

fn scrub_bearer(s: &str) -> Option<String> {
    const WORD: &[u8] = b"bearer";
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut from = 0;
    while let Some(i) = find_ci(b, WORD, from) {
        from = i + WORD.len();
        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
            continue;
        }
        let tok_start = skip_blanks(b, from);
        if tok_start == from {
            continue;
        }
        let mut tok_end = tok_start;
        while tok_end < b.len() && is_token68_byte(b[tok_end]) {
            tok_end += 1;
        }
        if tok_end > tok_start {
            rw.replace(tok_start, tok_end, REDACTED);
            from = tok_end;
        }
    }
    rw.finish()
}

// ------------------------------------------------------------------------------------------------
// Shared by rules 5 and 6: `name` `"`? blanks (`:`|`=`) blanks.

/// Parses the separator after a field name starting at `i`; returns where the value starts.
/// Accepts an optional (possibly backslash-escaped) closing quote of the name, `:`, `=`, `:=` and
/// `=>`; rejects `::` and `==` (paths and comparisons).
fn parse_separator(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'\\') && b.get(i + 1).is_some_and(|&c| is_quote(c)) {
        i += 2;
    } else if b.get(i).is_some_and(|&c| is_quote(c)) {
        i += 1;
    }
    i = skip_blanks(b, i);
    let sep = *b.get(i)?;
    if sep != b':' && sep != b'=' {
        return None;
    }
    i += 1;
    match (sep, b.get(i)) {
        (b':', Some(b':')) | (b'=', Some(b'=')) => return None,
        (b':', Some(b'=')) | (b'=', Some(b'>')) => i += 1,
        _ => {}
    }
    Some(skip_blanks(b, i))
}

/// An opening quote at `i`: `(quote byte, escaped, content start)`.
fn opening_quote(b: &[u8], i: usize) -> Option<(u8, bool, usize)> {
    match (b.get(i), b.get(i + 1)) {
        (Some(b'\\'), Some(&q)) if is_quote(q) => Some((q, true, i + 2)),
        (Some(&q), _) if is_quote(q) => Some((q, false, i + 1)),
        _ => None,
    }
}

/// The closing quote of a quoted value starting at `start`, on the same line.
fn closing_quote(b: &[u8], start: usize, quote: u8, escaped: bool) -> Option<usize> {
    let mut k = start;
    while k < b.len() && b[k] != b'\n' && b[k] != b'\r' {
        if b[k] == b'\\' {
            match b.get(k + 1) {
                Some(&c) if escaped && c == quote => return Some(k),
                Some(&c) if is_line_end(c) => return None,
                _ => k += 2,
            }
            continue;
        }
        if !escaped && b[k] == quote {
            return Some(k);
        }
        k += 1;
    }
    None
}

fn ends_unquoted_value(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b',' | b';' | b'&' | b'"' | b'\'' | b'`' | b'}' | b'(' | b')' | b'<' | b'>')
}

/// End of an unquoted value: a terminator or an escaped quote (`\"`). Backslash escapes are
/// taken as pairs, so a replacement never leaves half an escape behind.
fn unquoted_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && !ends_unquoted_value(b[i]) {
        if b[i] == b'\\' {
            match b.get(i + 1) {
                Some(&c) if is_quote(c) => break,
                Some(&c) if c.is_ascii() && !ends_unquoted_value(c) => i += 2,
                _ => i += 1,
            }
        } else {
            i += 1;
        }
    }
    i
}

fn is_line_end(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

// ------------------------------------------------------------------------------------------------
// Rule 5: cookies.

fn scrub_cookie(s: &str) -> Option<String> {
    const WORD: &[u8] = b"cookie";
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut from = 0;
    while let Some(i) = find_ci(b, WORD, from) {
        from = i + WORD.len();
        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
            continue;
        }
        let Some(value_start) = parse_separator(b, from) else {
            continue;
        };
        let (start, end) = if let Some((q, escaped, content)) = opening_quote(b, value_start) {
            match closing_quote(b, content, q, escaped) {
                Some(close) => (content, close),
                None => (content, line_end(b, content, None)),
            }
        } else {
            // A header written inside quotes (`-H 'Cookie: a=b'`) ends at that quote.
            let name_start = if i >= 4 && b[i - 4..i].eq_ignore_ascii_case(b"set-") { i - 4 } else { i };
            let wrapper = name_start.checked_sub(1).map(|p| b[p]).filter(|&c| is_quote(c));
            (value_start, line_end(b, value_start, wrapper))
        };
        if end > start && !is_marker(&b[start..end]) {
            rw.replace(start, end, REDACTED);
            from = end;
        }
    }
    rw.finish()
}

/// End of the line starting at `i`, or the first `stop` byte before it.
fn line_end(b: &[u8], mut i: usize, stop: Option<u8>) -> usize {
    while i < b.len() && !is_line_end(b[i]) && Some(b[i]) != stop {
        i += 1;
    }
    i
}

// ------------------------------------------------------------------------------------------------
// Rule 6: field-style secrets.

/// Length of a secret field name at the start of `b`, if any.
fn field_name_len(b: &[u8]) -> impl Iterator<Item = usize> + '_ {
    FIELD_NAMES.iter().filter(move |name| starts_with_ci(b, name)).map(|name| name.len())
}

fn scrub_fields(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut i = 0;
    while i < b.len() {
        let c = b[i].to_ascii_lowercase();
        if matches!(c, b'a' | b's' | b't') && word_start(b, i) {
            if let Some((start, end)) = field_names_value(b, i) {
                rw.replace(start, end, REDACTED);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    rw.finish()
}

/// The secret value span of a field whose name starts at `i`.
fn field_names_value(b: &[u8], i: usize) -> Option<(usize, usize)> {
    for len in field_name_len(&b[i..]) {
        let after = i + len;
        let value_start = match parse_separator(b, after) {
            Some(v) => v,
            None if is_flag(b, i, after) => {
                let v = skip_blanks(b, after);
                if b.get(v).is_some_and(|&c| c == b'-') {
                    continue;
                }
                v
            }
            None => continue,
        };
        if let Some(span) = field_value(b, value_start) {
            return Some(span);
        }
    }
    None
}

/// `--token value`: the name is preceded by `--` at a word start and followed by a blank.
fn is_flag(b: &[u8], name_start: usize, name_end: usize) -> bool {
    name_start >= 2
        && &b[name_start - 2..name_start] == b"--"
        && (name_start == 2 || b[name_start - 3].is_ascii_whitespace())
        && b.get(name_end).is_some_and(|&c| is_blank(c))
}

/// The span to redact for a value starting at `start`, or `None` when there is nothing secret.
fn field_value(b: &[u8], start: usize) -> Option<(usize, usize)> {
    let (content, end, quoted) = match opening_quote(b, start) {
        Some((q, escaped, content)) => match closing_quote(b, content, q, escaped) {
            Some(close) => (content, close, true),
            None => (content, unquoted_end(b, content), true),
        },
        None => (start, unquoted_end(b, start), false),
    };
    let value = &b[content..end];
    if value.is_empty() || is_marker(value) {
        return None;
    }
    if !quoted && (matches!(value[0], b'{' | b'[') || NON_SECRET_VALUES.iter().any(|w| value.eq_ignore_ascii_case(w))) {
        return None;
    }
    // `Basic xyz` / `Bearer xyz`: keep the scheme word, redact the credentials.
    for scheme in AUTH_SCHEMES {
        if !starts_with_ci(value, scheme) {
            continue;
        }
        let after = content + scheme.len();
        if !b.get(after).is_some_and(|&c| is_blank(c)) {
            continue;
        }
        let cred = skip_blanks(b, after);
        let cred_end = if quoted { end } else { unquoted_end(b, cred) };
        if cred >= cred_end || is_marker(&b[cred..cred_end]) {
            return None;
        }
        return Some((cred, cred_end));
    }
    Some((content, end))
}

/// Whether a whole string value is already redacted: a marker, or `<auth scheme> [redacted]`.
fn is_redacted_value(s: &str) -> bool {
    is_marker(s.as_bytes())
        || s.split_once(' ').is_some_and(|(scheme, rest)| {
            rest == REDACTED && AUTH_SCHEMES.iter().any(|a| scheme.as_bytes().eq_ignore_ascii_case(a))
        })
}

/// Whether a JSON object key names a secret (`token`, `apiKey`, `x-api-key`, `accessToken`,
/// `session_id`, `cookie`, `Set-Cookie`, …): it ends with a secret name at a word start.
fn is_secret_key(key: &str) -> bool {
    let b = key.as_bytes();
    FIELD_NAMES.iter().copied().chain([b"cookie".as_slice()]).any(|name| {
        b.len() >= name.len() && {
            let at = b.len() - name.len();
            b[at..].eq_ignore_ascii_case(name) && word_start(b, at)
        }
    })
}

// ------------------------------------------------------------------------------------------------
// Rule 7: bridge endpoints.

/// Whether `b[j - 1]` continues a URL/path token backwards from the marker at `j`.
fn extends_endpoint_back(b: &[u8], j: usize) -> bool {
    let c = b[j - 1];
    if c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'~' | b'%' | b'+' | b'@' | b'/') {
        return true;
    }
    // `host:port` and `scheme://` only: `endpoint:/path` keeps its label, `key::80` its `::`.
    let Some(&before) = j.checked_sub(2).and_then(|p| b.get(p)) else {
        return false;
    };
    c == b':'
        && ((b.get(j).is_some_and(u8::is_ascii_digit)
            && (before.is_ascii_alphanumeric() || matches!(before, b'.' | b'-' | b'_' | b']' | b'%')))
            || (b[j..].starts_with(b"//") && is_scheme_byte(before)))
}

/// Start of a `[...]` group (IPv6 host or a `[redacted]` userinfo) that closes at `close`.
fn bracket_group_start(b: &[u8], close: usize) -> Option<usize> {
    let lo = close.saturating_sub(49);
    let open = lo + b[lo..close].iter().rposition(|&c| c == b'[')?;
    let inner = &b[open + 1..close];
    let ok = inner == b"redacted"
        || (!inner.is_empty()
            && inner.len() <= 48
            && inner.iter().all(|&c| c.is_ascii_hexdigit() || c == b':' || c == b'.'));
    ok.then_some(open)
}

/// Bytes that end a bridge endpoint token. Quotes and backslashes are never eaten, so an escaped
/// quote stays escaped for the other rules.
fn ends_endpoint_forward(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b'"' | b'\'' | b'\\' | b'`' | b'<' | b'>' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b',' | b';' | b'|'
        )
}

fn endpoint_span(b: &[u8], marker_start: usize, marker_end: usize) -> (usize, usize) {
    let mut start = marker_start;
    while start > 0 {
        if extends_endpoint_back(b, start) {
            start -= 1;
        } else if b[start - 1] == b']' {
            match bracket_group_start(b, start - 1) {
                Some(open) => start = open,
                None => break,
            }
        } else {
            break;
        }
    }
    let mut end = marker_end;
    while end < b.len() {
        if b[end..].starts_with(REDACTED.as_bytes()) {
            // `…/mcp?token=[redacted]`: one endpoint, one marker.
            end += REDACTED.len();
        } else if ends_endpoint_forward(b[end]) {
            break;
        } else {
            end += 1;
        }
    }
    (start, end)
}

fn scrub_bridge(s: &str, markers: &[String]) -> Option<String> {
    let b = s.as_bytes();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut existing: Option<Vec<(usize, usize)>> = None;
    for marker in markers {
        let m = marker.as_bytes();
        let mut from = 0;
        while let Some(i) = find_ci(b, m, from) {
            from = i + m.len();
            let existing = existing.get_or_insert_with(|| marker_spans(s));
            if overlaps(existing, i, i + m.len()) {
                continue;
            }
            spans.push(endpoint_span(b, i, i + m.len()));
        }
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    let mut rw = Rewriter::new(s);
    let mut current: Option<(usize, usize)> = None;
    for (start, end) in spans {
        match &mut current {
            Some((_, cur_end)) if start <= *cur_end => *cur_end = (*cur_end).max(end),
            _ => {
                if let Some((a, z)) = current.take() {
                    rw.replace(a, z, REDACTED_BRIDGE_ENDPOINT);
                }
                current = Some((start, end));
            }
        }
    }
    if let Some((a, z)) = current {
        rw.replace(a, z, REDACTED_BRIDGE_ENDPOINT);
    }
    rw.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_lose_values_of_any_shape_and_header_lists_their_value() {
        let sc = Scrubber::default();
        let mut v = serde_json::json!({
            "token": {"value": "abc"},
            "apiKey": ["k1", "k2"],
            "session_id": 12345,
            "headers": [{"name": "Authorization", "value": "Basic Zm9vOmJhcg=="}, {"name": "Accept", "value": "json"}],
            "cookies": [{"key": "Cookie", "value": "sid=1"}],
            "max_tokens": 5,
        });
        sc.scrub_json(&mut v);
        let s = v.to_string();
        for secret in ["abc", "k1", "12345", "Zm9vOmJhcg", "sid=1"] {
            assert!(!s.contains(secret), "{secret} survived: {s}");
        }
        assert_eq!(v["headers"][1]["value"], "json");
        assert_eq!(v["max_tokens"], 5);
    }
    use proptest::prelude::*;
    use serde_json::json;

    fn scrub(s: &str) -> String {
        Scrubber::default().scrub(s).into_owned()
    }

    #[test]
    fn clean_text_is_borrowed() {
        let s = Scrubber::new(Some("sk-secret-123".into()));
        for text in [
            "",
            "cargo test --workspace",
            "fn main() { println!(\"hello\"); }",
            "tokens: 5",
            "max_tokens=5",
            "the authorization header is missing",
        ] {
            assert!(matches!(s.scrub(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn api_key_exact() {
        let s = Scrubber::new(Some("  sk-secret-123 ".into()));
        assert_eq!(s.scrub("key sk-secret-123 and sk-secret-123!"), "key [redacted] and [redacted]!");
        assert_eq!(s.scrub("sk-secret-12"), "sk-secret-12");
        assert!(!format!("{s:?}").contains("sk-secret"));
        assert!(!Scrubber::new(Some("   ".into())).has_api_key());
    }

    #[test]
    fn api_key_inside_marker_is_stable() {
        let s = Scrubber::new(Some("redacted".into()));
        let once = s.scrub("redacted then [redacted]").into_owned();
        assert_eq!(once, "[redacted] then [redacted]");
        assert_eq!(s.scrub(&once), once);
    }

    #[test]
    fn url_userinfo() {
        assert_eq!(
            scrub("git clone https://alice:s3cret@example.com/repo.git"),
            "git clone https://[redacted]@example.com/repo.git"
        );
        assert_eq!(scrub("https://ghp_abcdef@github.com/o/r"), "https://[redacted]@github.com/o/r");
        assert_eq!(scrub("see https://example.com/@user and x@y"), "see https://example.com/@user and x@y");
        assert_eq!(scrub("redis://u:p@w@host:6379/0"), "redis://[redacted]@host:6379/0");
    }

    #[test]
    fn scp_userinfo() {
        assert_eq!(
            scrub("git clone alice:s3cret@example.com:org/repo.git"),
            "git clone [redacted]@example.com:org/repo.git"
        );
        // No password: untouched.
        assert_eq!(scrub("git clone git@github.com:org/repo.git"), "git clone git@github.com:org/repo.git");
        // Needs the trailing `host:`.
        assert_eq!(scrub("mail a:b@c.com now"), "mail a:b@c.com now");
    }

    #[test]
    fn bearer() {
        assert_eq!(
            scrub("curl -H 'Authorization: Bearer abc.def-ghi' x"),
            "curl -H 'Authorization: Bearer [redacted]' x"
        );
        assert_eq!(scrub("BEARER xyz"), "BEARER [redacted]");
        assert_eq!(scrub("Bearer ${TOKEN}"), "Bearer ${TOKEN}");
        assert_eq!(scrub("Bearers are fine"), "Bearers are fine");
    }

    #[test]
    fn cookies() {
        assert_eq!(scrub("Cookie: a=1; b=2\nnext line"), "Cookie: [redacted]\nnext line");
        assert_eq!(scrub("Set-Cookie: sid=abc; HttpOnly"), "Set-Cookie: [redacted]");
        assert_eq!(scrub(r#"{"cookie": "a=b; c=d", "x": 1}"#), r#"{"cookie": "[redacted]", "x": 1}"#);
        assert_eq!(scrub("curl -H 'Cookie: a=b' https://x"), "curl -H 'Cookie: [redacted]' https://x");
        assert_eq!(scrub("cookies: 3"), "cookies: 3");
        assert_eq!(scrub("cookie jar"), "cookie jar");
    }

    #[test]
    fn field_secrets() {
        let cases = [
            ("token=abc", "token=[redacted]"),
            ("API_KEY=abc", "API_KEY=[redacted]"),
            ("OPENAI_API_KEY=sk-abc", "OPENAI_API_KEY=[redacted]"),
            ("GITHUB_TOKEN=ghp_1 next", "GITHUB_TOKEN=[redacted] next"),
            (r#""token": "abc def""#, r#""token": "[redacted]""#),
            (r#"{\"apiKey\": \"abc\"}"#, r#"{\"apiKey\": \"[redacted]\"}"#),
            ("session_id=abc&x=1", "session_id=[redacted]&x=1"),
            ("sessionId: abc, next", "sessionId: [redacted], next"),
            ("accessToken: abc", "accessToken: [redacted]"),
            ("x-api-key: abc", "x-api-key: [redacted]"),
            ("?token=abc&page=2", "?token=[redacted]&page=2"),
            ("--token abc --verbose", "--token [redacted] --verbose"),
            ("--api-key=abc", "--api-key=[redacted]"),
            ("Authorization: Basic dXNlcg==", "Authorization: Basic [redacted]"),
            ("authorization: abc123", "authorization: [redacted]"),
            ("token := abc", "token := [redacted]"),
            ("let session = Session::new();", "let session = [redacted]();"),
            ("'session' => 'abc'", "'session' => '[redacted]'"),
        ];
        for (input, want) in cases {
            assert_eq!(scrub(input), want, "{input}");
        }
    }

    #[test]
    fn field_false_positives_untouched() {
        for text in [
            "tokens: 5",
            "max_tokens=5",
            "token_count: 3",
            "tokenizer: bpe",
            "mytoken=abc",
            "the authorization failed",
            "session ended",
            "if token == other {",
            "use session::Store;",
            r#""session": null"#,
            "token: {\"nested\": 1}",
            "fn f(token: &str)",
            "--token --verbose",
            "token=",
        ] {
            assert_eq!(scrub(text), text, "{text}");
        }
    }

    #[test]
    fn bridge_endpoints() {
        let cases = [
            (
                "MCP connect failed: http://127.0.0.1:54321/cursor-pi-tool-bridge/tok-abc/mcp",
                "MCP connect failed: [redacted-bridge-endpoint]",
            ),
            ("route not found: /cursor-pi-tool-bridge/tok/mcp", "route not found: [redacted-bridge-endpoint]"),
            (
                "fetch failed for 127.0.0.1:8080/cursor-pi-tool-bridge/tok/mcp.",
                "fetch failed for [redacted-bridge-endpoint]",
            ),
            ("url=\"http://[::1]:9/Cursor-Pi-Tool-Bridge/t/mcp\"", "url=\"[redacted-bridge-endpoint]\""),
            ("endpoint:/cursor-pi-tool-bridge/t/mcp", "endpoint:[redacted-bridge-endpoint]"),
            ("GET /cursor-pi-tool-bridge/t/mcp?token=abc ok", "GET [redacted-bridge-endpoint] ok"),
        ];
        for (input, want) in cases {
            assert_eq!(scrub(input), want, "{input}");
        }
        let custom = Scrubber::default().with_bridge_markers(["/my-bridge/"]);
        assert_eq!(
            custom.scrub("at /my-bridge/x/mcp and /cursor-pi-tool-bridge/y"),
            "at [redacted-bridge-endpoint] and /cursor-pi-tool-bridge/y"
        );
    }

    #[test]
    fn combined_rules() {
        let key = "super-secret-cursor-key-12345";
        let s = Scrubber::new(Some(key.into()));
        let text = format!("Bearer {key} api_key={key} http://127.0.0.1:1/cursor-pi-tool-bridge/bridge-token/mcp");
        let out = s.scrub(&text);
        assert_eq!(out, "Bearer [redacted] api_key=[redacted] [redacted-bridge-endpoint]");
        assert_eq!(scrub("http://u:p@127.0.0.1:1/cursor-pi-tool-bridge/t/mcp ok"), "[redacted-bridge-endpoint] ok");
        assert_eq!(scrub("Authorization: Bearer abc"), "Authorization: Bearer [redacted]");
    }

    #[test]
    fn non_ascii_text_is_safe() {
        assert_eq!(scrub("jeton é token=ünïcødé ok"), "jeton é token=[redacted] ok");
        assert_eq!(scrub("令牌token=秘密"), "令牌token=[redacted]");
        assert_eq!(scrub("é@ü:"), "é@ü:");
    }

    #[test]
    fn json_recursive() {
        let s = Scrubber::new(Some("KEY123456".into()));
        let mut v = json!({
            "command": "curl -H 'Authorization: Bearer abc' https://x",
            "token": "plain",
            "apiKey": "KEY123456",
            "tokens": 5,
            "max_tokens": "5",
            "nested": [{"url": "https://u:p@h/x"}, "KEY123456", 3, null],
            "headers": {"Authorization": "Basic xyz", "Set-Cookie": "a=b"},
            "tokenizer": "bpe",
            "session": "",
            "sessionToken": "x [redacted] y",
            "auth": {"token": "Bearer abc"}
        });
        s.scrub_json(&mut v);
        assert_eq!(
            v,
            json!({
                "command": "curl -H 'Authorization: Bearer [redacted]' https://x",
                "token": "[redacted]",
                "apiKey": "[redacted]",
                "tokens": 5,
                "max_tokens": "5",
                "nested": [{"url": "https://[redacted]@h/x"}, "[redacted]", 3, null],
                "headers": {"Authorization": "[redacted]", "Set-Cookie": "[redacted]"},
                "tokenizer": "bpe",
                "session": "",
                "sessionToken": "[redacted]",
                "auth": {"token": "Bearer [redacted]"}
            })
        );
    }

    #[test]
    fn secret_keys() {
        for k in ["token", "apiKey", "x-api-key", "accessToken", "session_id", "Set-Cookie"] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["tokens", "max_tokens", "tokenizer", "mytoken", "sessions", "cookies"] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    /// Fragments that exercise every rule and their interactions.
    fn fragment() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "token",
            "Token",
            "TOKEN",
            "session_id",
            "api_key",
            "apiKey",
            "authorization",
            "Basic",
            "Bearer",
            "bearer",
            "cookie",
            "Set-",
            "=",
            ":",
            "=>",
            "::",
            "==",
            " ",
            "\t",
            "\n",
            "\"",
            "'",
            "\\",
            "abc",
            "x9",
            "@",
            "host",
            "://",
            "http",
            "/cursor-pi-tool-bridge/",
            "/",
            "[redacted]",
            "[",
            "]",
            "--",
            ",",
            ";",
            "&",
            "{",
            "}",
            "127.0.0.1",
            ":80",
            "é",
            "令",
            "-",
            "null",
            "KEY-42xy",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn scrub_is_idempotent(parts in prop::collection::vec(fragment(), 0..24)) {
            let s = Scrubber::new(Some("KEY-42xy".into()));
            let text: String = parts.concat();
            let once = s.scrub(&text).into_owned();
            let twice = s.scrub(&once).into_owned();
            prop_assert_eq!(&twice, &once, "input {:?}", text);
            prop_assert!(!once.contains("KEY-42xy"));
        }

        #[test]
        fn scrub_never_panics(text in any::<String>()) {
            let s = Scrubber::new(Some("k".into()));
            let once = s.scrub(&text).into_owned();
            prop_assert_eq!(s.scrub(&once).into_owned(), once);
        }

        #[test]
        fn field_secret_never_survives(
            prefix in "[a-z ]{0,12}",
            name in prop::sample::select(vec![
                "token", "api_key", "API-KEY", "apiKey", "session", "sessionid", "authorization",
            ]),
            sep in prop::sample::select(vec!["=", ": ", " = ", "\": \""]),
            secret in "[A-Z0-9]{8,16}",
            suffix in "[a-z ,;]{0,12}",
        ) {
            let text = format!("{prefix} {name}{sep}{secret}{suffix}");
            let out = Scrubber::default().scrub(&text).into_owned();
            prop_assert!(!out.contains(&secret), "{} -> {}", text, out);
        }

        #[test]
        fn the_pre_scan_skips_only_text_no_rule_changes(parts in prop::collection::vec(fragment(), 0..24)) {
            let text: String = parts.concat();
            for s in [Scrubber::default(), Scrubber::new(Some("KEY-42xy".into()))] {
                prop_assert_eq!(s.scrub(&text), s.apply_rules(&text), "input {:?}", text);
            }
        }

        #[test]
        fn borrowed_iff_unchanged(text in "[a-z :=@/]{0,40}") {
            let out = Scrubber::default().scrub(&text);
            if let Cow::Owned(o) = &out {
                prop_assert_ne!(o, &text);
            }
        }
    }
}
