//! The schemas' integration tests, one module per subject (each was its own test binary).

mod fuzz_regressions;
mod sdk_models;
mod tool_models_fixtures;
