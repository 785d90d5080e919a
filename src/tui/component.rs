//! What a pane or an overlay answers when it is handed a key: the app
//! turns the answer into state changes, ops and effects, so no component
//! reaches into another.

use crate::protocol::Op;

/// A component's answer to a key.
#[derive(Debug, PartialEq)]
pub enum Handled {
    /// Not this component's key: the app may offer it elsewhere.
    Ignored,
    /// Taken; nothing else to do.
    Consumed,
    /// Close this overlay (back to the one beneath, if any).
    Close,
    /// Close every overlay.
    CloseAll,
    /// Send this op to the agent.
    Send(Op),
    /// Send this op and close the overlay that asked.
    SendClose(Op),
    /// Open a file in the viewer at a 1-based place.
    Open { path: String, line: u32, col: u32 },
    /// Show a session's transcript (a helper's) in the viewer.
    OpenSession(String),
    /// Put text on the clipboard.
    Copy { what: String, text: String },
    /// Show a short message in the status bar.
    Flash(String),
    /// Open the help overlay.
    Help,
    /// Run this slash command line, as if typed in the composer.
    Command(String),
}

/// What the app asks of the terminal layer; returned as values from every
/// input and event handler, never left in flag fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    Quit,
    /// Stop the process (Ctrl-Z) with the terminal restored.
    Suspend,
    /// Ring the bell.
    Bell,
    /// Ring the bell and show a desktop notification (OSC 9 / 777).
    Notify(String),
    /// Turn mouse capture on or off.
    MouseCapture(bool),
    /// Put text on the clipboard; the app hears back through `copied`.
    Copy {
        what: String,
        text: String,
    },
}
