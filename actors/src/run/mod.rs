//! Run coordination.
