//! The `@cursor/sdk` recording format (SPEC §1.2).
