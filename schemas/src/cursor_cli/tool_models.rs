//! Typed args/result models for the 18 Cursor CLI tool kinds (SPEC §4).
