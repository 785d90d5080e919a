//! mm: a coding agent for the terminal, built so that small local models
//! deliver real work. `launch` wires the layers together.

pub mod acp;
pub mod agent;
pub mod approval;
pub mod bus;
pub mod cli;
pub mod clipboard;
pub mod commands;
pub mod config;
pub mod console;
pub mod diff;
pub mod doctor;
pub mod eval;
pub mod git;
pub mod headless;
pub mod instructions;
pub mod launch;
pub mod llm;
pub mod lsp;
pub mod mcp;
pub mod mmdir;
pub mod notify;
pub mod paths;
pub mod patterns;
pub mod protocol;
pub mod roles;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod slash;
pub mod startup;
pub mod toolname;
pub mod tools;
pub mod tui;
pub mod untrusted;
