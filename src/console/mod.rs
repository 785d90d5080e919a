//! The line front ends: the REPL, the printer shared with `-p`, and the
//! `-show` replay.

pub mod git_cmds;
pub mod printer;
pub mod repl;
pub mod show;
