//! A reply that repeats one block or echoes the request: cut while it
//! streams.

/// Watches a reply as it streams for a runaway: the same block of text
/// over and over, a long run of whitespace (a small model inside a
/// tool call writes thousands of tokens of them, minutes on a CPU), or
/// the user's message handed back word for word (hundreds of tokens, a
/// minute and more on a CPU, and nothing in it the model can use).
#[derive(Default)]
pub struct RunawayWatch {
    pub(super) text: String,
    pub(super) checked: usize,
    /// The opening of the message a reply must not repeat, its
    /// whitespace folded; empty when the message is too short to tell.
    pub(super) echo: String,
    /// The reply's text (not its tool calls), whitespace folded, while
    /// it could still be an echo.
    pub(super) said: Option<String>,
}

/// How much of a message a reply must repeat, in order, to be an echo.
pub(super) const ECHO_CHARS: usize = 120;

/// What a runaway was, for the notice and the model.
pub const REPEATING: &str = "the same text over and over";
pub const ECHOING: &str = "the request handed back word for word";

pub(super) fn fold_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl RunawayWatch {
    /// A watch that also stops a reply opening with `message`'s first
    /// words, when it has enough of them to tell.
    pub fn against(message: &str) -> Self {
        let folded = fold_space(message);
        let echo = if folded.chars().count() >= ECHO_CHARS {
            folded.chars().take(ECHO_CHARS).collect()
        } else {
            String::new()
        };
        Self {
            said: (!echo.is_empty()).then(String::new),
            echo,
            ..Self::default()
        }
    }

    /// Adds streamed text (`content`: the reply's words, not a tool
    /// call's arguments); what the runaway is, once the reply has run away.
    pub fn push(&mut self, delta: &str, content: bool) -> Option<&'static str> {
        if content && let Some(said) = self.said.as_mut() {
            said.push_str(delta);
            let folded = fold_space(said);
            if folded.chars().count() >= self.echo.chars().count() {
                if folded.starts_with(&self.echo) {
                    return Some(ECHOING);
                }
                self.said = None;
            } else if !self.echo.starts_with(folded.as_str()) && !folded.is_empty() {
                self.said = None;
            }
        }
        self.text.push_str(delta);
        if self.text.len() < self.checked + 256 {
            return None;
        }
        self.checked = self.text.len();
        runaway(&self.text).then_some(REPEATING)
    }
}

/// The end of `text` repeats one block (16 to 1,000 bytes) at least six
/// times in a row, or is 400 bytes of whitespace.
pub fn runaway(text: &str) -> bool {
    let b = text.as_bytes();
    let n = b.len();
    if n >= 400 && b[n - 400..].iter().all(u8::is_ascii_whitespace) {
        return true;
    }
    const TIMES: usize = 6;
    (16..=1000).any(|len| {
        n >= len * TIMES && {
            let last = &b[n - len..];
            (2..=TIMES).all(|k| &b[n - k * len..n - (k - 1) * len] == last)
        }
    })
}
