//! Synthetic inputs generated in code, deterministically (no fixture file needed): logs shaped
//! like what test runners and compilers print — `cargo test`, jest, `go test -v`, `tsc` — with a
//! chosen number of failures, and a pytest suite to run for real, for the compaction tests and
//! bench. Each returns the text and the names of what failed, in order.

mod cargo;
mod go;
mod jest;
mod pytest;
mod tsc;

pub use cargo::{cargo_test_log, cargo_workspace_log};
pub use go::go_test_log;
pub use jest::jest_log;
pub use pytest::pytest_suite;
pub use tsc::tsc_log;
