//! toolstream-schemas: the wire formats toolstream reads (Cursor CLI `stream-json`, `@cursor/sdk`
//! recordings) and the canonical event model and tool registry the rest of the code shares.
//! Serde models only: no I/O, no runtime.

pub mod arg_fields;
pub mod by_arc;
pub mod cursor_bubble;
pub mod cursor_cli;
pub mod cursor_exec;
pub mod cursor_hooks;
pub mod cursor_sdk;
pub mod cursor_transcript;
pub mod diag_fields;
pub mod display;
pub mod event;
pub mod ids;
pub mod iso_time;
mod json_text;
pub mod models;
pub mod num;
pub mod openai;
pub mod pi_contract;
pub mod result_status;
pub mod tools;

pub use diag_fields::DiagFields;
pub use event::*;
pub use num::Int;
pub use tools::{PiCard, Tool, ToolKind, ToolSpec, REGISTRY};
