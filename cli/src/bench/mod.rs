//! Benchmarking support: the recorded-corpus generator, the measurements `toolstream bench`
//! takes side by side on the same bytes (with an OTLP sink's stage when one is named), and the
//! progress it shows on stderr meanwhile.

pub mod corpus;
pub mod measure;
pub mod otlp;
pub mod progress;
