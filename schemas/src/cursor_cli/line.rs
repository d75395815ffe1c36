//! The stream-json line envelope.
