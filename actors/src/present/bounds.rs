//! bounds
