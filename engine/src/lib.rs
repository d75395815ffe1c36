//! toolstream's pipeline: the sources, decoding (including the Cursor chat database reader), the
//! clock, the shards, the sequencer, the sink runtime and the one settings table. Nothing here
//! serves a network: the hosts of Cursor runs and the servers live in `toolstream-hosts`, the
//! binary and its commands in `toolstream`.

pub mod clock;
pub mod config;
pub mod cursor_db;
pub mod cursor_hooks;
pub mod cursor_transcripts;
pub mod decode;
pub mod exit;
pub mod pipeline;
pub mod sequencer;
pub mod shard;
pub mod sinks;
pub mod source;
pub mod state_dir;
pub mod stderr;
