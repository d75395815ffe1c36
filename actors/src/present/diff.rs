//! diff
