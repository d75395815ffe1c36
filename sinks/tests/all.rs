//! The integration tests of the sinks: one test binary.

mod suite;
