//! Browser origins (`Origin: scheme://host[:port]`, RFC 6454) and the allow-list a user sets for
//! `serve openai` (`--allow-origin`, the `openai_allowed_origins` setting). An origin matches an
//! entry when scheme, host and port are equal, an absent port meaning the scheme's default
//! (`http` 80, `https` 443); an entry's port `*` matches any port. `null` (sandboxed frames,
//! `file:` pages, some redirects) and `*` can never be allowed: they would admit any page.

use std::fmt;

/// A parsed origin: lowercase scheme and host (IPv6 without brackets), and the port, explicit or
/// the scheme's default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// The port part of an allow-list entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PortPattern {
    Exact(Option<u16>),
    Any,
}

/// One allow-list entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pattern {
    scheme: String,
    host: String,
    port: PortPattern,
}

/// The browser origins allowed to call a server (empty: none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedOrigins {
    patterns: Vec<Pattern>,
    /// The entries as the user wrote them (trimmed), for display.
    texts: Vec<String>,
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// `scheme://host[:port]` split into its lowercase parts; the port as written (`None` when absent).
fn split(text: &str) -> Option<(String, String, Option<&str>)> {
    let (scheme, rest) = text.split_once("://")?;
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
    if !scheme_ok || rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (host, port)
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        }
    };
    if host.is_empty() || host.contains(['[', ']']) || (host.contains(':') && !rest.starts_with('[')) {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

impl Origin {
    /// An `Origin` header's value; `None` for `null` and anything malformed.
    pub fn parse(text: &str) -> Option<Origin> {
        let (scheme, host, port) = split(text.trim())?;
        let port = match port {
            Some(p) => Some(parse_port(p)?),
            None => default_port(&scheme),
        };
        Some(Origin { scheme, host, port })
    }
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, String> {
        let t = text.trim().trim_end_matches('/');
        if t.eq_ignore_ascii_case("null") {
            return Err(
                "`null` cannot be allowed: sandboxed frames and local files send it, so it would admit any page".into(),
            );
        }
        if t.contains('*') && !t.ends_with(":*") {
            return Err(format!("`{text}`: name each origin (`*` is allowed only as the port, `http://localhost:*`)"));
        }
        let bad = || format!("`{text}` is not an origin (scheme://host[:port], e.g. http://localhost:5173)");
        let (scheme, host, port) = split(t).ok_or_else(bad)?;
        let port = match port {
            Some("*") => PortPattern::Any,
            Some(p) => PortPattern::Exact(Some(parse_port(p).ok_or_else(bad)?)),
            None => PortPattern::Exact(default_port(&scheme)),
        };
        Ok(Pattern { scheme, host, port })
    }

    fn matches(&self, o: &Origin) -> bool {
        self.scheme == o.scheme
            && self.host == o.host
            && match self.port {
                PortPattern::Any => true,
                PortPattern::Exact(p) => p == o.port,
            }
    }
}

impl AllowedOrigins {
    /// No origin allowed.
    pub fn none() -> Self {
        AllowedOrigins::default()
    }

    /// Entries separated by commas or white space (`OLLAMA_ORIGINS`-style); empty text: none.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::from_entries(text.split([',', ' ', '\t', '\n']).filter(|e| !e.trim().is_empty()))
    }

    /// One entry per item.
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut out = AllowedOrigins::default();
        for e in entries {
            out.patterns.push(Pattern::parse(e)?);
            out.texts.push(e.trim().to_owned());
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The entries as written.
    pub fn entries(&self) -> &[String] {
        &self.texts
    }

    /// Whether a request's `Origin` header value is allowed (`null` and malformed values never are).
    pub fn allows(&self, header: &str) -> bool {
        Origin::parse(header).is_some_and(|o| self.patterns.iter().any(|p| p.matches(&o)))
    }
}

impl fmt::Display for AllowedOrigins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.texts.is_empty() {
            f.write_str("(none)")
        } else {
            f.write_str(&self.texts.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn origins_parse_and_normalize() {
        let o = Origin::parse("HTTP://LocalHost").unwrap();
        assert_eq!(o, Origin { scheme: "http".into(), host: "localhost".into(), port: Some(80) });
        assert_eq!(Origin::parse("https://a.example:8443").unwrap().port, Some(8443));
        assert_eq!(Origin::parse("http://[::1]:3000").unwrap().host, "::1");
        assert_eq!(Origin::parse("chrome-extension://abcdef").unwrap().port, None);
        for bad in
            ["null", "", "localhost", "http://", "http://a/b", "http://a:x", "http://::1", "http://[::1", "http://u@a"]
        {
            assert_eq!(Origin::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_list_matches_scheme_host_and_port() {
        let list = AllowedOrigins::parse("http://localhost:5173, https://app.example http://127.0.0.1:*").unwrap();
        assert_eq!(list.entries().len(), 3);
        assert!(list.allows("http://localhost:5173"));
        assert!(!list.allows("http://localhost:5174"));
        assert!(!list.allows("https://localhost:5173"));
        assert!(list.allows("https://app.example"));
        assert!(list.allows("https://app.example:443"));
        assert!(!list.allows("https://app.example:444"));
        assert!(!list.allows("http://app.example"));
        assert!(list.allows("http://127.0.0.1:9"));
        assert!(list.allows("http://127.0.0.1"));
        assert!(!list.allows("http://evil.example"));
        assert!(!list.allows("null"));
        assert!(!AllowedOrigins::none().allows("http://localhost:5173"));
        assert_eq!(list.to_string(), "http://localhost:5173,https://app.example,http://127.0.0.1:*");
        assert_eq!(AllowedOrigins::parse(" , ").unwrap(), AllowedOrigins::none());
        assert!(AllowedOrigins::parse("http://localhost:5173/").unwrap().allows("http://localhost:5173"));
    }

    #[test]
    fn null_wildcards_and_malformed_entries_are_refused() {
        for bad in ["null", "NULL", "*", "http://*.example", "localhost:5173", "http://a:99999", "http://a/path"] {
            let e = AllowedOrigins::parse(bad).unwrap_err();
            assert!(e.contains('`'), "{bad}: {e}");
        }
    }
}
