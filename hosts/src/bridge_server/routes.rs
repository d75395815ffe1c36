//! The route registry: one `/cursor-pi-tool-bridge/<token>/mcp` path per run, the token a random
//! capability independent of the run id; what a request path and peer address get (SPEC §7:
//! non-loopback peer → 403, unknown path or wrong token → 404, disposed run → 410).

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::net::IpAddr;

use crate::local_http::{is_loopback, random_hex};

pub use toolstream_schemas::pi_contract::BRIDGE_PATH_PREFIX as PATH_PREFIX;
pub const PATH_SUFFIX: &str = "/mcp";

/// How many disposed tokens keep answering 410 (older ones answer 404).
pub const DISPOSED_MEMORY: usize = 4096;

/// The path of a token's route.
pub fn route_path(token: &str) -> String {
    format!("{PATH_PREFIX}{token}{PATH_SUFFIX}")
}

/// The token of a route path, if the path has the route's shape.
pub fn token_of(path: &str) -> Option<&str> {
    let token = path.strip_prefix(PATH_PREFIX)?.strip_suffix(PATH_SUFFIX)?;
    (!token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(token)
}

/// A fresh token: 128 random bits as 32 hex digits (from the OS).
pub fn new_token() -> io::Result<String> {
    random_hex(16)
}

/// What a request gets before it reaches MCP.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<T> {
    /// The run's live route.
    Live(T),
    /// 410: the run was disposed.
    Gone,
    /// 404: no such path or token.
    NotFound,
    /// 403: the peer is not a loopback address.
    Forbidden,
}

/// Live routes by token, and the recently disposed tokens.
#[derive(Debug)]
pub struct Routes<T> {
    live: HashMap<String, T>,
    disposed: HashSet<String>,
    disposed_order: VecDeque<String>,
}

impl<T> Default for Routes<T> {
    fn default() -> Self {
        Routes { live: HashMap::new(), disposed: HashSet::new(), disposed_order: VecDeque::new() }
    }
}

impl<T: Clone> Routes<T> {
    pub fn insert(&mut self, token: String, route: T) {
        self.live.insert(token, route);
    }

    /// Remove a live route; its token answers 410 from now on.
    pub fn dispose(&mut self, token: &str) -> Option<T> {
        let route = self.live.remove(token)?;
        if self.disposed.insert(token.to_owned()) {
            self.disposed_order.push_back(token.to_owned());
            while self.disposed_order.len() > DISPOSED_MEMORY {
                if let Some(old) = self.disposed_order.pop_front() {
                    self.disposed.remove(&old);
                }
            }
        }
        Some(route)
    }

    #[cfg(test)]
    fn live_count(&self) -> usize {
        self.live.len()
    }

    /// What a request from `peer` for `path` gets.
    pub fn lookup(&self, peer: IpAddr, path: &str) -> Lookup<T> {
        if !is_loopback(peer) {
            return Lookup::Forbidden;
        }
        let Some(token) = token_of(path) else { return Lookup::NotFound };
        if let Some(route) = self.live.get(token) {
            Lookup::Live(route.clone())
        } else if self.disposed.contains(token) {
            Lookup::Gone
        } else {
            Lookup::NotFound
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LO: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn tokens_are_random_hex() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(token_of(&route_path(&a)), Some(a.as_str()));
    }

    #[test]
    fn paths_and_peers() {
        let mut r = Routes::default();
        r.insert("abc".to_owned(), 1);
        assert_eq!(r.lookup(LO, "/cursor-pi-tool-bridge/abc/mcp"), Lookup::Live(1));
        assert_eq!(r.lookup("::1".parse().unwrap(), "/cursor-pi-tool-bridge/abc/mcp"), Lookup::Live(1));
        assert_eq!(r.lookup("::ffff:127.0.0.1".parse().unwrap(), "/cursor-pi-tool-bridge/abc/mcp"), Lookup::Live(1));
        for path in [
            "/cursor-pi-tool-bridge/abd/mcp",
            "/cursor-pi-tool-bridge/abc/mcpx",
            "/cursor-pi-tool-bridge/abc",
            "/cursor-pi-tool-bridge//mcp",
            "/cursor-pi-tool-bridge/a/b/mcp",
            "/mcp",
            "/",
        ] {
            assert_eq!(r.lookup(LO, path), Lookup::NotFound, "{path}");
        }
        for peer in ["192.0.2.2", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1"] {
            assert_eq!(r.lookup(peer.parse().unwrap(), "/cursor-pi-tool-bridge/abc/mcp"), Lookup::Forbidden, "{peer}");
        }
    }

    #[test]
    fn disposed_routes_are_gone_then_forgotten() {
        let mut r = Routes::default();
        r.insert("abc".to_owned(), 1);
        assert_eq!(r.dispose("abc"), Some(1));
        assert_eq!(r.dispose("abc"), None);
        assert_eq!(r.lookup(LO, "/cursor-pi-tool-bridge/abc/mcp"), Lookup::Gone);
        for n in 0..DISPOSED_MEMORY {
            let t = format!("t{n}");
            r.insert(t.clone(), 0);
            r.dispose(&t);
        }
        assert_eq!(r.lookup(LO, "/cursor-pi-tool-bridge/abc/mcp"), Lookup::NotFound);
        assert_eq!(r.live_count(), 0);
    }
}
