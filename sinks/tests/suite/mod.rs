//! The sinks' integration tests, one module per subject (each was its own test binary).

mod cards;
mod jsonl_trace;
