//! Which `Host` a local server answers (the DNS-rebinding check, as ollama does it): a loopback
//! name (`localhost`, `*.localhost`), a loopback address, or the address the server is bound to
//! (any address when it is bound to all of them, `0.0.0.0` or `::`). A page whose name an attacker
//! re-points at 127.0.0.1 sends its own name (`evil.example`), which none of these is; an IP
//! literal is what a browser sends only when it connected to that very address. The port is not
//! compared (a rebinding request carries the attacker's name whatever the port).

use std::net::IpAddr;

/// Loopback, including IPv4-mapped IPv6 loopback (`::ffff:127.0.0.1`).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// The host part of a `Host` header value (`name`, `name:port`, `[v6]`, `[v6]:port`), lowercase,
/// brackets and a trailing dot removed; `None` when malformed.
fn host_part(header: &str) -> Option<String> {
    let h = header.trim();
    let host = if let Some(v6) = h.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))) {
            return None;
        }
        host
    } else {
        match h.split_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            Some(_) => return None,
            None => h,
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Whether a server bound to `bound` answers a request whose `Host` header is `header`.
pub fn host_allowed(header: &str, bound: IpAddr) -> bool {
    let Some(host) = host_part(header) else { return false };
    match host.parse::<IpAddr>() {
        Ok(ip) => is_loopback(ip) || ip == bound || bound.is_unspecified(),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const LO: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn loopback_names_and_addresses_pass() {
        for h in [
            "127.0.0.1:18741",
            "127.0.0.1",
            "localhost",
            "LOCALHOST:1",
            "localhost.",
            "app.localhost:3000",
            "[::1]:80",
            "[::1]",
            "127.1.2.3",
        ] {
            assert!(host_allowed(h, LO), "{h}");
        }
    }

    #[test]
    fn other_names_and_malformed_hosts_are_refused() {
        for h in [
            "evil.example:18741",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "",
            ":80",
            "[::1",
            "a:b",
            "192.0.2.7:18741",
        ] {
            assert!(!host_allowed(h, LO), "{h}");
        }
    }

    #[test]
    fn the_bound_address_passes_and_all_addresses_when_bound_to_all() {
        let lan: IpAddr = "192.0.2.7".parse().unwrap();
        assert!(host_allowed("192.0.2.7:18741", lan));
        assert!(!host_allowed("192.0.2.8:18741", lan));
        assert!(!host_allowed("evil.example", lan));
        let all: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(host_allowed("192.0.2.8:18741", all));
        assert!(!host_allowed("evil.example:18741", all));
    }

    #[test]
    fn loopback_includes_mapped_v6() {
        for ip in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["192.0.2.2", "::ffff:10.0.0.1", "fe80::1"] {
            assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
        }
    }
}
