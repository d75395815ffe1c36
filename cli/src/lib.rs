//! The `toolstream` binary's library: the command line (`commands`) and the recorded-corpus
//! generator and measurement of `toolstream bench` (`bench`, also used by the criterion benches).

pub mod bench;
pub mod commands;
