//! toolstream-actors: run coordination (ordering, matching, dedupe, turn split, outcome) and
//! presentation (titles, summaries, bodies, scrubbing, bounds), as pure state machines and functions.

pub mod present;
pub mod run;
