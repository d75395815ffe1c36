//! Presentation: everything that turns recorded tool activity into scrubbed, bounded, displayable
//! text — per-tool bodies, card assembly, bounds, diffs, scrubbing, ids. Pure functions only.

pub mod bodies;
pub mod bounds;
pub mod card;
pub mod diff;
pub mod display_args;
pub mod scrub;
