//! `-show last|ID`: replays a session's transcript through the printer,
//! without a model: the prompts, answers, tool lines and receipts.

use std::io::IsTerminal;

use super::printer::{PrintMode, Printer};
use crate::session::Record;

/// Prints a replay on stdout.
pub fn replay(records: &[Record]) {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut p = Printer::new(
        std::io::stdout(),
        std::io::stderr(),
        PrintMode::Replay,
        color,
    );
    for ev in crate::session::replay::events(records) {
        p.print(&ev);
    }
    p.flush();
}
