//! The pi tool bridge's MCP endpoint (SPEC §7): a Streamable HTTP MCP server on the official Rust
//! MCP SDK (`rmcp`), on `127.0.0.1:<ephemeral>` at `/cursor-pi-tool-bridge/<token>/mcp`, one route
//! per run. `tools/list` and `tools/call` go through the bridge queue actor
//! (`toolstream_actors::bridge`); a call becomes a [`BridgeEvent::Call`] for pi's side, whose
//! result ([`BridgeServer::pi_result`]) answers the MCP call. `toolstream bridge` serves it over
//! stdio; `pi-provider` and `serve openai` open one route per Cursor run (`crate::tool_bridge`).

mod diagnostics;
mod front;
mod handler;
mod hub;
mod routes;
mod server;
mod sessions;
pub mod settings;

pub use diagnostics::{Diagnostics, STDERR_PREFIX};
pub use handler::{CallOutcome, INITIALIZE_SERVER_NAME};
pub use hub::BridgeEvent;
pub use routes::{route_path, token_of, PATH_PREFIX, PATH_SUFFIX};
pub use server::{BridgeError, BridgeServer, BridgeServerOptions, RunRoute};
pub use sessions::SessionLimits;
pub use settings::BridgeSettings;
