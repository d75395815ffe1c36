//! What hosts Cursor runs and serves clients, on top of the pipeline (`toolstream-engine`): the
//! `cursor-agent` runner and its MCP home, the pi tool bridge (its MCP server and the per-run
//! handle), conversation flattening, the guard of the local HTTP servers, and the two front ends,
//! `pi_provider` and `openai_server`. The front ends are siblings: they share what both need
//! (the runner, the tool bridge, the paused-run policy) through the modules here and import
//! nothing from each other.

pub mod bridge_server;
pub mod conversation;
pub mod cursor_agent;
pub mod cursor_models;
pub mod local_http;
pub mod mcp_home;
pub mod openai_server;
pub mod paused_run;
pub mod pi_provider;
pub mod tool_bridge;
