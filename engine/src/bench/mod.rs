//! Benchmarking support: the recorded-corpus generator, and the measurements `toolstream bench`
//! takes side by side on the same bytes.

pub mod corpus;
pub mod measure;
