//! Cursor CLI `stream-json` (SPEC §1.1): the line envelope and the typed per-tool payloads.

pub mod common_line;
pub mod line;
pub mod tool_models;
