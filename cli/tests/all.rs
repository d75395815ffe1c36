//! The integration tests of toolstream (the binary, the engine and the hosts, driven from outside):
//! one test binary, so the workspace links them once. `common` holds the shared helpers.

mod common;
mod suite;
