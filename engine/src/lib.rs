//! toolstream: ingest Cursor agent event streams and deliver them, ordered, deduplicated,
//! scrubbed and bounded, to pluggable sinks. This crate holds the sources, decoding, pipeline
//! wiring and the CLI; the binary is `toolstream`.

pub mod bench;
pub mod bridge_server;
pub mod cli;
pub mod clock;
pub mod config;
pub mod conversation;
pub mod cursor_db;
pub mod cursor_hooks;
pub mod cursor_models;
pub mod cursor_transcripts;
pub mod decode;
pub mod local_http;
pub mod openai_server;
pub mod pi_provider;
pub mod pipeline;
pub mod sequencer;
pub mod shard;
pub mod sinks;
pub mod source;
pub mod state_dir;
pub mod stderr;
