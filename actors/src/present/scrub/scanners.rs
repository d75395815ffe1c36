//! The hand-written scanners of the rules a pattern cannot say well (SPEC §8 rules 4–6): URL and
//! scp-style userinfo, `Bearer`/`Basic` credentials, cookie headers, fields whose name says
//! secret (with the quoting rules of `.env`, shell, YAML, JSON and TOML) and bridge endpoints.
//! Each takes the text and returns the rewritten text, or `None` when it changed nothing.

use super::rules::FieldNames;
use super::text::{
    find_ci, is_blank, is_marker, is_quote, marker_spans, overlaps, skip_blanks, starts_with_ci, starts_with_marker,
    Rewriter,
};
use super::{REDACTED, REDACTED_BRIDGE_ENDPOINT};

// ------------------------------------------------------------------------------------------------
// URL userinfo.

fn is_scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')
}

fn ends_authority(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'/' | b'?' | b'#' | b'\\' | b'"' | b'\'' | b'<' | b'>' | b'`')
}

pub(super) fn url_userinfo(s: &str) -> Option<String> {
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
// scp-style `user:pass@host:`.

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

pub(super) fn scp_userinfo(s: &str) -> Option<String> {
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
// `Bearer <token>` and `Basic <base64 of user:pass>`.

fn is_token68_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

pub(super) fn auth_scheme(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut from = 0;
    while from < b.len() {
        let bearer = find_ci(b, b"bearer", from);
        let basic = find_ci(b, b"basic", from);
        let (i, word_len, is_basic) = match (bearer, basic) {
            (Some(x), Some(y)) if y < x => (y, 5, true),
            (Some(x), _) => (x, 6, false),
            (None, Some(y)) => (y, 5, true),
            (None, None) => break,
        };
        from = i + word_len;
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
        let token = &b[tok_start..tok_end];
        let credentials = if is_basic { is_basic_credentials(token) } else { !is_word(token) };
        if !token.is_empty() && credentials {
            rw.replace(tok_start, tok_end, REDACTED);
            from = tok_end;
        }
    }
    rw.finish()
}

/// Whether `token` is a word of prose (`bearer auth.`, `Bearer Authentication`, `BEARER`) rather
/// than a credential, which has digits, mixed case or symbols.
fn is_word(token: &[u8]) -> bool {
    let w = token.strip_suffix(b".").unwrap_or(token);
    !w.is_empty()
        && (w.iter().all(u8::is_ascii_uppercase)
            || (w[0].is_ascii_alphabetic() && w[1..].iter().all(u8::is_ascii_lowercase)))
}

/// Whether `token` is the base64 of `user:password` (printable, with a colon): what follows
/// `Basic` in an Authorization header, as opposed to the English word's next word.
fn is_basic_credentials(token: &[u8]) -> bool {
    let data = token.strip_suffix(b"==").or_else(|| token.strip_suffix(b"=")).unwrap_or(token);
    if data.len() < 4 || data.len() % 4 == 1 {
        return false;
    }
    let (mut acc, mut bits, mut colon) = (0u32, 0u32, false);
    for &c in data {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return false,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let byte = (acc >> bits) & 0xff;
            if !(0x20..0x7f).contains(&byte) {
                return false;
            }
            colon |= byte == u32::from(b':');
        }
    }
    colon
}

// ------------------------------------------------------------------------------------------------
// Shared by the cookie and field scanners: `name` `"`? blanks (`:`|`=`) blanks.

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
// Cookies.

pub(super) fn cookie(s: &str) -> Option<String> {
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
// Fields whose name says secret.

/// Authorization scheme words: `Authorization: Basic xyz` keeps `Basic` and redacts `xyz`.
pub(super) const AUTH_SCHEMES: &[&[u8]] = &[b"bearer", b"basic", b"digest", b"token", b"negotiate", b"ntlm"];

/// The longest prefix a field's key is read with.
const KEY_MAX: usize = 128;

/// Whether `c` may be part of a field's key (`AWS_SECRET_ACCESS_KEY`, `x-api-key`,
/// `spring.datasource.password`, `--db-password`).
fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

pub(super) fn secret_fields(s: &str, names: &FieldNames) -> Option<String> {
    let b = s.as_bytes();
    let mut rw = Rewriter::new(s);
    let mut done = 0;
    // Matches come in the order they end; names overlap (`secret`, `client_secret`).
    for m in names.automaton.find_overlapping_iter(s) {
        if m.start() < done {
            continue;
        }
        if let Some((start, end)) = field_value_span(b, m.start(), m.end(), names) {
            rw.replace(start, end, REDACTED);
            done = end;
        }
    }
    rw.finish()
}

/// The secret value of a field whose key ends with the name at `name_start..name_end`.
fn field_value_span(b: &[u8], name_start: usize, name_end: usize, names: &FieldNames) -> Option<(usize, usize)> {
    // Keys are short: looking further back would make a long run of names quadratic.
    let floor = name_start.saturating_sub(KEY_MAX);
    let mut key_start = name_start;
    while key_start > floor && is_key_byte(b[key_start - 1]) {
        key_start -= 1;
    }
    let before = key_start.checked_sub(1).map(|p| b[p]);
    if before == Some(b'/') {
        // A path (`/etc/passwd:1:root`), not a field.
        return None;
    }
    let key = &b[key_start..name_end];
    let dashes = key.iter().take_while(|&&c| c == b'-').count();
    let bare = &key[dashes..];
    if names.allow.iter().any(|a| bare.eq_ignore_ascii_case(a.as_bytes())) {
        return None;
    }
    let value_start = match parse_separator(b, name_end) {
        Some(v) => v,
        None if dashes > 0 && before.is_none_or(|c| c.is_ascii_whitespace() || is_quote(c)) => {
            flag_value_start(b, name_end, before.filter(|&c| is_quote(c)))?
        }
        None => return None,
    };
    let name = &b[name_start..name_end];
    field_value(b, value_start, name, names)
}

/// `--password value`, also quoted as an argument list writes it (`"--password", "value"`): where
/// the value starts, if it is not another flag.
fn flag_value_start(b: &[u8], name_end: usize, quote: Option<u8>) -> Option<usize> {
    let mut i = name_end;
    if let Some(q) = quote {
        if b.get(i) != Some(&q) {
            return None;
        }
        i += 1;
        if b.get(i) == Some(&b',') {
            i += 1;
        }
    }
    if !b.get(i).is_some_and(|&c| is_blank(c)) {
        return None;
    }
    let v = skip_blanks(b, i);
    let first = match opening_quote(b, v) {
        Some((_, _, content)) => b.get(content),
        None => b.get(v),
    };
    first.is_some_and(|&c| c != b'-').then_some(v)
}

/// The span to redact for a value starting at `start`, or `None` when there is nothing secret:
/// nothing, an existing marker, or code rather than a literal (`null`, `{…}`, `${TOKEN}`,
/// `Session::new()`, `Option<String>`, `process.env.DB_PASSWORD`).
fn field_value(b: &[u8], start: usize, name: &[u8], names: &FieldNames) -> Option<(usize, usize)> {
    // `closed`: the value ends at its closing quote; an unclosed quote's value ends as an unquoted
    // one does.
    let (content, end, quoted, closed) = match opening_quote(b, start) {
        Some((q, escaped, content)) => match closing_quote(b, content, q, escaped) {
            Some(close) => (content, close, true, true),
            None => (content, unquoted_end(b, content), true, false),
        },
        None => (start, unquoted_end(b, start), false, false),
    };
    let value = &b[content..end];
    if value.is_empty() || starts_with_marker(value) || is_reference(value) || is_placeholder(value) {
        return None;
    }
    if !quoted && is_code(value, b.get(end).copied(), name, names) {
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
        let cred_end = if closed { end } else { unquoted_end(b, cred) };
        let cred_value = b.get(cred..cred_end).unwrap_or_default();
        if cred_value.is_empty() || starts_with_marker(cred_value) || is_reference(cred_value) {
            return None;
        }
        return Some((cred, cred_end));
    }
    Some((content, end))
}

/// The last identifier of a path of identifiers joined by `.`, `::` or `->` (`self.token`,
/// `Config::TOKEN`, `opts->password`); `None` when `value` is not such a path.
fn last_path_segment(value: &[u8]) -> Option<&[u8]> {
    let mut seg_start = 0;
    let mut i = 0;
    while i < value.len() {
        let c = value[i];
        let sep = match (c, value.get(i + 1)) {
            (b'.', _) => 1,
            (b':', Some(b':')) | (b'-', Some(b'>')) => 2,
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => 0,
            _ => return None,
        };
        if sep > 0 {
            if i == seg_start || value[seg_start].is_ascii_digit() {
                return None;
            }
            seg_start = i + sep;
        }
        i += sep.max(1);
    }
    let last = &value[seg_start..];
    (!last.is_empty() && !last[0].is_ascii_digit()).then_some(last)
}

/// A placeholder where a secret goes: a format string's (`token: %w`, `password=%s`,
/// `secret: {}`), documentation's (`<your-token>`, `lsv2_pt_...`) or a masked one (`****`).
fn is_placeholder(value: &[u8]) -> bool {
    match value {
        [b'%', rest @ ..] => {
            // A verb, then nothing that continues a word (`%s`, `%-8v`, `%s\n`).
            let flags = rest.iter().take_while(|c| c.is_ascii_digit() || b"-+# .*".contains(c)).count();
            rest.get(flags).is_some_and(u8::is_ascii_alphabetic)
                && !rest.get(flags + 1).is_some_and(u8::is_ascii_alphanumeric)
        }
        [b'{', .., b'}'] | [b'<', .., b'>'] => true,
        _ => value.ends_with(b"...") || value.ends_with("…".as_bytes()) || value.iter().all(|&c| c == b'*'),
    }
}

/// A shell or template variable (`$TOKEN`, `${TOKEN}`, `$(pass show x)`): where the secret comes
/// from, not the secret.
fn is_reference(value: &[u8]) -> bool {
    value[0] == b'$' && value.get(1).is_some_and(|&c| c == b'{' || c == b'(' || c == b'_' || c.is_ascii_alphabetic())
}

/// Whether an unquoted value is code: a structure, a word of the allow list (`null`, `true`,
/// `await`, `string`), a call, index or generic type (`Session::new()`, `tokens[i]`,
/// `Option<String>`), or an identifier naming where the secret is rather than what it is: the
/// field's own name (`password=password`, `api_key = API_KEY`, `session: Session`), an
/// identifier whose last word says secret (`DB_PASSWORD`, `githubToken`), a path to one
/// (`self.token`, `process.env.DB_PASSWORD`).
fn is_code(value: &[u8], next: Option<u8>, name: &[u8], names: &FieldNames) -> bool {
    if matches!(value[0], b'{' | b'[') || matches!(next, Some(b'(' | b'<')) || value.contains(&b'[') {
        return true;
    }
    if names.allow_values.iter().any(|w| value.eq_ignore_ascii_case(w.as_bytes())) {
        return true;
    }
    let Some(last) = last_path_segment(value) else { return false };
    let letters =
        |s: &[u8]| -> Vec<u8> { s.iter().filter(|c| c.is_ascii_alphanumeric()).map(u8::to_ascii_lowercase).collect() };
    if last.len() == value.len() && letters(last) == letters(name) {
        return true;
    }
    names.names.iter().any(|n| {
        let n = n.as_bytes();
        let Some(at) = last.len().checked_sub(n.len()) else { return false };
        let word_start = at > 0
            && (last[at - 1] == b'_'
                || ((last[at - 1].is_ascii_lowercase() || last[at - 1].is_ascii_digit())
                    && last[at].is_ascii_uppercase()));
        last[at..].eq_ignore_ascii_case(n) && (word_start || (at == 0 && last.len() < value.len()))
    })
}

// ------------------------------------------------------------------------------------------------
// Bridge endpoints.

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

pub(super) fn bridge_endpoint(s: &str, markers: &[String]) -> Option<String> {
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
