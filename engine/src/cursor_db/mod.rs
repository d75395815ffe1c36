//! The Cursor IDE's chat database (`state.vscdb`, SPEC §1.3) as a source: opened read-only
//! without ever changing the file ([`open`]), its conversations listed ([`list`]), and each
//! conversation decoded into canonical input events, one run per user prompt ([`decode`]).
//! The events then go through the pipeline like any other source's
//! ([`crate::pipeline::Pipeline::run_events`]).

pub mod decode;
pub mod list;
pub mod open;

pub use decode::conversation_events;
pub use list::{list, Conversation};
pub use open::{CursorDb, CursorDbError};
