//! toolstream-actors: the shard's stages — shell output attribution, lifecycle lines, run
//! coordination (ordering, matching, dedupe, turn split, outcome), usage accounting — and the
//! pi bridge request queue, each a pure state machine inside a thin actix actor; plus
//! presentation (titles, summaries, bodies, scrubbing, bounds) as pure functions.

pub mod bridge;
pub mod compact;
pub mod intake;
pub mod item;
pub mod lifecycle;
pub mod messages;
pub mod present;
pub mod run;
pub mod shard;
pub mod shell;
pub mod stage;
pub mod usage;
