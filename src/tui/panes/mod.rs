//! The panes and overlays of the TUI. Each draws from its own state.

pub mod approvals;
pub mod composer;
pub mod diff;
pub mod file_tree;
pub mod overlays;
pub mod rewind;
pub mod status;
pub mod transcript;
