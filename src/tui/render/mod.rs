//! Pure rendering helpers: wrapping, markdown, syntax colours, diffs.

pub mod diff;
pub mod highlight;
pub mod markdown;
pub mod wrap;
