//! The integration tests of the schemas (tool models on the fixtures, SDK models): one test binary.

mod suite;
