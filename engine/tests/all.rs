//! The integration tests of the pipeline crate (the decoders' fuzz regressions): one test binary.

mod suite;
