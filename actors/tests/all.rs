//! The integration tests of the actors (worked examples, properties, compaction): one test binary.

mod suite;
