//! What a server on the user's machine needs so that a web page the user visits, or another local
//! user, cannot drive it (the rules ollama and Jupyter follow; docs/openai-server.md):
//! the request [`guard`] (Host, Origin, CORS preflights, JSON bodies) shared by `serve openai` and
//! the pi tool bridge, the browser-origin allow-list ([`origin`]), the loopback and DNS-rebinding
//! checks ([`host`]), and random tokens from the OS ([`random_hex`]).

pub mod guard;
pub mod host;
pub mod origin;

use std::io;

pub use guard::{Guard, Refusal};
pub use host::is_loopback;
pub use origin::AllowedOrigins;

/// `bytes` random bytes from the OS as lowercase hex (twice as many characters).
pub fn random_hex(bytes: usize) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| io::Error::other(format!("no OS randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
