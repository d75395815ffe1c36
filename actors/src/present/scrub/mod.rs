//! Secret scrubbing (SPEC §8): the [`Scrubber`] applies every redaction rule to what toolstream
//! writes — card args and results, the prompt, lifecycle labels, shell progress, incomplete
//! reasons, errors, diagnostics and traces — except the assistant's own text and thinking, from
//! which only the secrets the engine knows exactly are removed ([`Scrubber::scrub_known`], and
//! [`SecretStream`] for text that arrives in deltas).
//!
//! The rules run in this order:
//! 1. the secrets the engine knows exactly (configured API keys, a run's bridge token) →
//!    `[redacted]` ([`known`]);
//! 2. PEM private-key blocks → `[redacted private key]`; 3. token formats (AWS, GitHub, GitLab,
//!    model providers, Slack, Stripe, Google, npm, JWTs) → `[redacted]`; 4. URL and scp-style
//!    userinfo, `Bearer`/`Basic` credentials, cookies, `curl -u` passwords; 5. assignments,
//!    fields and flags whose name says secret; 6. bridge endpoint URLs/paths →
//!    `[redacted-bridge-endpoint]`.
//!
//! Rules 2–6 are data, `secrets.toml` ([`rules`]): patterns, or the hand-written [`scanners`] for
//! what a pattern cannot say well, each woken only by its keywords, which one Aho-Corasick pass
//! finds — text with no keyword (the common case) costs that one pass and comes back borrowed.
//! Scrubbing is idempotent: text that is already redacted is left alone.

mod known;
pub mod rules;
mod scanners;
mod text;

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Once};

use regex::Regex;
use serde_json::Value;

use known::KnownSecrets;
pub use known::SecretStream;
use rules::{Action, Candidates, FieldNames, RuleSet, Scanner};
use text::{find_ci, is_marker, starts_with_marker, Rewriter};

/// Replacement for a redacted secret.
pub const REDACTED: &str = "[redacted]";
/// Replacement for a redacted PEM private-key block.
pub const REDACTED_PRIVATE_KEY: &str = "[redacted private key]";
/// Replacement for a redacted bridge endpoint URL/path.
pub const REDACTED_BRIDGE_ENDPOINT: &str = "[redacted-bridge-endpoint]";
/// The path marker of the pi tool bridge endpoint (SPEC §7), redacted by default.
pub use toolstream_schemas::pi_contract::BRIDGE_PATH_PREFIX as DEFAULT_BRIDGE_MARKER;

/// Redacts secrets from what toolstream writes. Cheap to clone; `Default` knows no secret and
/// has the default bridge marker.
#[derive(Clone)]
pub struct Scrubber {
    known: Option<Arc<KnownSecrets>>,
    bridge_markers: Vec<String>,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secrets themselves.
        f.debug_struct("Scrubber")
            .field("known_secrets", &self.known.as_ref().map_or(0, |k| k.secrets().len()))
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
    /// A scrubber that knows `api_key` (the Cursor API key; trimmed, empty means none) with the
    /// default bridge marker.
    pub fn new(api_key: Option<String>) -> Self {
        let scrubber = Self { known: None, bridge_markers: vec![DEFAULT_BRIDGE_MARKER.to_owned()] };
        match api_key {
            Some(key) => scrubber.with_known_secret(key),
            None => scrubber,
        }
    }

    /// Also removes `secret` (trimmed; empty is ignored) wherever it occurs, the assistant's own
    /// text included: another configured key, a run's bridge token.
    #[must_use]
    pub fn with_known_secret(mut self, secret: impl Into<String>) -> Self {
        let secret = secret.into().trim().to_owned();
        if secret.is_empty() {
            return self;
        }
        let mut secrets = self.known.as_ref().map(|k| k.secrets().to_vec()).unwrap_or_default();
        if !secrets.contains(&secret) {
            secrets.push(secret);
            self.known = KnownSecrets::new(secrets).map(Arc::new);
        }
        self
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

    /// How many secrets the scrubber knows exactly.
    pub fn known_secrets(&self) -> usize {
        self.known.as_ref().map_or(0, |k| k.secrets().len())
    }

    /// The configured bridge endpoint markers.
    pub fn bridge_markers(&self) -> &[String] {
        &self.bridge_markers
    }

    /// Scrubs `s` with every rule; borrowed when nothing was redacted.
    pub fn scrub<'a>(&self, s: &'a str) -> Cow<'a, str> {
        self.run_rules(s, true)
    }

    /// Every rule in order; with `prefilter`, only those whose keywords (or markers) occur.
    fn run_rules<'a>(&self, s: &'a str, prefilter: bool) -> Cow<'a, str> {
        let mut cur = self.scrub_known(s);
        let Some(rules) = builtin_rules() else {
            // Fail closed: without its rules the scrubber lets nothing through.
            return if s.is_empty() { cur } else { Cow::Owned(REDACTED.to_owned()) };
        };
        let candidates = if prefilter { rules.candidates(&cur) } else { Candidates::ALL };
        let bridge = !self.bridge_markers.is_empty()
            && (!prefilter || self.bridge_markers.iter().any(|m| find_ci(cur.as_bytes(), m.as_bytes(), 0).is_some()));
        if candidates.is_empty() && !bridge {
            return cur;
        }
        for (i, rule) in rules.rules.iter().enumerate() {
            match &rule.action {
                Action::Scanner(Scanner::BridgeEndpoint) => {
                    if bridge {
                        apply(&mut cur, |t| scanners::bridge_endpoint(t, &self.bridge_markers));
                    }
                }
                _ if !candidates.contains(i) => {}
                Action::Pattern { pattern, replace } => match pattern.regex() {
                    Some(regex) => apply(&mut cur, |t| replace_matches(t, regex, replace)),
                    // Fail closed, as without the rules at all (a checked load rules this out).
                    None => return Cow::Owned(REDACTED.to_owned()),
                },
                Action::Scanner(scanner) => apply(&mut cur, |t| run_scanner(*scanner, t, &rules.fields)),
            }
        }
        cur
    }

    /// `text` scrubbed as the continuation of `before` (the last bytes of an output that arrives
    /// in chunks): a redaction that starts in `before` and runs on into `text` — a private key
    /// streamed over several chunks — takes the part of `text` it covers, shown as its marker.
    pub fn scrub_after<'a>(&self, before: &str, text: &'a str) -> Cow<'a, str> {
        let alone = self.scrub(text);
        if before.is_empty() {
            return alone;
        }
        let joined = format!("{before}{text}");
        let (head, whole) = (self.scrub(before), self.scrub(&joined));
        match whole.strip_prefix(head.as_ref()) {
            // No redaction crosses from `before` into `text`.
            Some(rest) if rest == alone => alone,
            Some(rest) => Cow::Owned(rest.to_owned()),
            None => {
                // One does: `text` starts where the two scrubbings part, inside its marker.
                let mut at = head.bytes().zip(whole.bytes()).take_while(|(a, b)| a == b).count();
                while !whole.is_char_boundary(at) {
                    at -= 1;
                }
                // Parted inside a marker (`[redacted` then ` private key]`): the whole marker.
                let start = whole[..at]
                    .rfind('[')
                    .filter(|&open| text::MARKERS.iter().any(|m| whole[open..].starts_with(m) && open + m.len() > at))
                    .unwrap_or(at);
                Cow::Owned(whole[start..].to_owned())
            }
        }
    }

    /// Only rule 1, the secrets known exactly: for the assistant's own text and thinking.
    pub fn scrub_known<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match self.known.as_ref().and_then(|k| k.scrub(s)) {
            Some(scrubbed) => Cow::Owned(scrubbed),
            None => Cow::Borrowed(s),
        }
    }

    /// Rule 1 for text that arrives in pieces (streamed assistant text or thinking): a secret
    /// split across pieces is removed too. Without known secrets the stream passes pieces
    /// through untouched.
    pub fn stream(&self) -> SecretStream {
        SecretStream::new(self.known.clone())
    }

    /// Scrubs every string in `v` recursively; object keys are kept. Additionally, a non-empty
    /// value under a key whose name says secret (`token`, `apiKey`, `DB_PASSWORD`, `cookie`, …)
    /// becomes `[redacted]`, whatever its shape, unless it already is redacted (`[redacted]`,
    /// `Bearer [redacted]`).
    pub fn scrub_json(&self, v: &mut Value) {
        match v {
            Value::String(s) => self.scrub_string_in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_json(item)),
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    self.scrub_member(key, item);
                }
                // Header lists: `{"name": "Authorization", "value": "…"}`.
                let names_a_secret =
                    HEADER_NAME_KEYS.iter().any(|k| map.get(*k).and_then(Value::as_str).is_some_and(is_secret_key));
                if names_a_secret {
                    if let Some(v) = map.get_mut("value").filter(|v| !v.is_null()) {
                        *v = Value::String(REDACTED.to_owned());
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// What [`Scrubber::scrub_json`] makes of field `key` of an object (a copy), without
    /// scrubbing the rest of it: for readers of a few fields of a large object. `get` reads a
    /// field of that object.
    pub fn scrub_field<'v>(&self, get: &dyn Fn(&str) -> Option<Cow<'v, Value>>, key: &str) -> Option<Value> {
        let item = get(key)?;
        let names_a_secret = || {
            HEADER_NAME_KEYS
                .iter()
                .any(|k| self.scrub_field(get, k).as_ref().and_then(Value::as_str).is_some_and(is_secret_key))
        };
        if key == "value" && !item.is_null() && names_a_secret() {
            return Some(Value::String(REDACTED.to_owned()));
        }
        Some(match item.as_ref() {
            Value::String(s) => Value::String(self.scrub_string_under(key, s).into_owned()),
            _ => {
                let mut v = item.into_owned();
                self.scrub_member(key, &mut v);
                v
            }
        })
    }

    /// A member of an object, under `key`: its strings scrubbed, all of it redacted under a key
    /// that names a secret.
    fn scrub_member(&self, key: &str, item: &mut Value) {
        match item {
            Value::String(s) => {
                if let Cow::Owned(scrubbed) = self.scrub_string_under(key, s) {
                    *s = scrubbed;
                }
            }
            Value::Null => {}
            // Whatever sits under a secret key goes, whatever its shape.
            other if is_secret_key(key) => *other = Value::String(REDACTED.to_owned()),
            other => self.scrub_json(other),
        }
    }

    /// A string member of an object, under `key`.
    fn scrub_string_under<'s>(&self, key: &str, s: &'s str) -> Cow<'s, str> {
        let scrubbed = self.scrub(s);
        if !scrubbed.is_empty() && !is_redacted_value(&scrubbed) && is_secret_key(key) {
            Cow::Owned(REDACTED.to_owned())
        } else {
            scrubbed
        }
    }

    fn scrub_string_in_place(&self, s: &mut String) {
        if let Cow::Owned(scrubbed) = self.scrub(s) {
            *s = scrubbed;
        }
    }
}

/// What of a scrubbed text whose last line is unfinished (more of it comes in the next piece) can
/// be shown now: all but the trailing run of characters tokens are made of, which the next piece
/// could complete into a secret no rule sees yet (`tok ghp_jIhK` + `tJ0R…`).
pub fn settled(text: &str) -> &str {
    text.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || "_-+/=.~%".contains(c))
}

/// The embedded rules; `None` (logged once) if they do not load, which a unit test rules out.
fn builtin_rules() -> Option<&'static RuleSet> {
    static LOGGED: Once = Once::new();
    match RuleSet::builtin() {
        Ok(rules) => Some(rules),
        Err(e) => {
            LOGGED.call_once(|| tracing::error!("the secret rules do not load ({e}): every string is redacted"));
            None
        }
    }
}

fn apply<'a>(cur: &mut Cow<'a, str>, rule: impl FnOnce(&str) -> Option<String>) {
    if let Some(next) = rule(cur) {
        *cur = Cow::Owned(next);
    }
}

fn run_scanner(scanner: Scanner, s: &str, fields: &FieldNames) -> Option<String> {
    match scanner {
        Scanner::UrlUserinfo => scanners::url_userinfo(s),
        Scanner::ScpUserinfo => scanners::scp_userinfo(s),
        Scanner::AuthScheme => scanners::auth_scheme(s),
        Scanner::Cookie => scanners::cookie(s),
        Scanner::SecretField => scanners::secret_fields(s, fields),
        // Woken by the markers, not by keywords (see `Scrubber::scrub`).
        Scanner::BridgeEndpoint => None,
    }
}

/// A pattern rule: each match (its `secret` group when it has one) → `with`, unless it is
/// already a marker.
fn replace_matches(s: &str, regex: &Regex, with: &str) -> Option<String> {
    let mut rw = Rewriter::new(s);
    if regex.captures_len() > 1 {
        for caps in regex.captures_iter(s) {
            if let Some(m) = caps.name("secret").filter(|m| !starts_with_marker(m.as_str().as_bytes())) {
                rw.replace(m.start(), m.end(), with);
            }
        }
    } else {
        for m in regex.find_iter(s) {
            rw.replace(m.start(), m.end(), with);
        }
    }
    rw.finish()
}

/// The members of an object that name what its `value` member holds (header lists:
/// `{"name": "Authorization", "value": "…"}`).
const HEADER_NAME_KEYS: [&str; 3] = ["name", "key", "header"];

/// Whether a whole string value is already redacted: a marker, or `<auth scheme> [redacted]`.
fn is_redacted_value(s: &str) -> bool {
    is_marker(s.as_bytes())
        || s.split_once(' ').is_some_and(|(scheme, rest)| {
            rest == REDACTED && scanners::AUTH_SCHEMES.iter().any(|a| scheme.as_bytes().eq_ignore_ascii_case(a))
        })
}

/// Whether an object key (or a header's name) says secret: it ends with a secret name
/// (`token`, `apiKey`, `x-api-key`, `accessToken`, `DB_PASSWORD`, `session_id`) or is a cookie
/// header, and is not one of the allowed names (`PWD`).
fn is_secret_key(key: &str) -> bool {
    let Some(fields) = builtin_rules().map(|r| &r.fields) else { return true };
    let b = key.as_bytes();
    let ends_with = |name: &[u8]| b.len() >= name.len() && b[b.len() - name.len()..].eq_ignore_ascii_case(name);
    if fields.allow.iter().any(|a| b.eq_ignore_ascii_case(a.as_bytes())) {
        return false;
    }
    fields.ends_a_name(b) || ends_with(b"cookie")
}

#[cfg(test)]
mod tests;
