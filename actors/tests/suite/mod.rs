//! The actors' integration tests, one module per subject (each was its own test binary).

mod compact;
mod fuzz_regressions;
mod properties;
mod scrub_fixtures;
mod support;
mod worked_examples;
