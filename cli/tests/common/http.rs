//! A raw HTTP/1.1 client for the local servers' tests: requests a browser (or an attacker) would
//! send, byte for byte, with any `Host`, `Origin` or `Content-Type`, and the answer as it came.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An answer: status, headers (names lowercase) and body (chunked bodies decoded).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// `method path` to `addr` with `headers` (a `Host: 127.0.0.1` unless given, `Content-Length` when
/// there is a body, `Connection: close`), reading the answer to its end.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut s = send(addr, method, path, headers, body);
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            // A reset after a complete answer (the server did not read a large body) ends it too.
            Err(_) if !raw.is_empty() => break,
            Err(e) => panic!("reading the answer to {method} {path}: {e}"),
        }
    }
    parse(&raw).unwrap_or_else(|| panic!("not an HTTP answer: {}", String::from_utf8_lossy(&raw)))
}

/// Send a request and return the open connection (for answers that stay open: SSE streams).
pub fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str("Host: 127.0.0.1\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) and close before taking a large body: what it said still counts.
    let _ = s.write_all(body);
    s
}

/// A POST of `size` bytes with `Expect: 100-continue`, as curl sends a large body: the body goes
/// out only when the server asks for it (`100 Continue`); the final answer.
pub fn post_large(addr: SocketAddr, path: &str, headers: &[(&str, &str)], size: usize) -> Answer {
    let len = size.to_string();
    let mut all = headers.to_vec();
    all.extend([("Content-Length", len.as_str()), ("Expect", "100-continue")]);
    let mut s = send(addr, "POST", path, &all, b"");
    let mut raw = head_bytes(&mut s);
    if raw.starts_with(b"HTTP/1.1 100") {
        raw.clear();
        let _ = s.write_all(&vec![b' '; size]);
    }
    let _ = s.read_to_end(&mut raw);
    parse(&raw).unwrap_or_else(|| panic!("not an HTTP answer: {}", String::from_utf8_lossy(&raw)))
}

/// Read an open answer's status line and headers (not its body).
pub fn read_head(s: &mut TcpStream) -> Answer {
    let raw = head_bytes(s);
    parse(&raw).unwrap_or_else(|| panic!("not an HTTP head: {}", String::from_utf8_lossy(&raw)))
}

/// The bytes up to the end of the head (`\r\n\r\n`), read one by one so none of the body is taken.
fn head_bytes(s: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => raw.push(byte[0]),
            _ => break,
        }
    }
    raw
}

fn parse(raw: &[u8]) -> Option<Answer> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    }
    Some(Answer { status, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        let end = (start + size).min(b.len());
        out.extend_from_slice(&b[start..end]);
        b = b.get(end + 2..).unwrap_or_default();
    }
    out
}
