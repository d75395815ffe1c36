//! The pipeline's integration tests, one module per subject.

mod fuzz_regressions;
