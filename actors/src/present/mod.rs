//! Presentation: everything that turns recorded tool activity into scrubbed, bounded, displayable
//! text. Pure functions only.

pub mod bounds;
pub mod diff;
pub mod scrub;
