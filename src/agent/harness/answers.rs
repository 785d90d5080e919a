//! Reading an answer against the facts: claims of passing tests or working
//! code, talk about tools, non-answers, numbers and sums the evidence does
//! not hold.

use super::*;

/// The answer says tests ran or pass ("the tests now pass", "all tests
/// passed"), to be checked against what actually ran.
pub fn claims_tests_pass(text: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(r"(?i)(?-u:\b)(tests?|test suite)(?-u:\b)(?-u:[^.\n]){0,40}(?-u:\b)(now )?(pass|passes|passed|passing|succeed|succeeds|succeeded|are green)(?-u:\b)|(?-u:\b)(ran|run|running) the tests(?-u:\b)").ok()
    });
    holds_any(text, &["test"]) && RE.as_ref().is_some_and(|r| r.is_match(text.as_bytes()))
}

/// The answer says the change works: tests or checks pass, "it
/// works", "correctly handles". Checked against the checks mm ran from
/// the request, which may say otherwise.
pub fn claims_it_works(text: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(r"(?i)(?-u:\b)(checks?|examples?|assertions?|cases?)(?-u:\b)(?-u:[^.\n]){0,40}(?-u:\b)(now )?(pass|passes|passed|passing|succeed|succeeds|succeeded|hold)(?-u:\b)|(?-u:\b)(it|this|they|function|code|implementation|change|fix)(?-u:\b)(?-u:[^.\n]){0,30}(?-u:\b)(now )?(works|worked|passes|passed)(?-u:\b)|(?-u:\b)(works|working) (correctly|as expected|as described|as specified)(?-u:\b)|(?-u:\b)correctly (handles|implements|returns|computes|produces)(?-u:\b)").ok()
    });
    claims_tests_pass(text) || RE.as_ref().is_some_and(|r| r.is_match(text.as_bytes()))
}

/// An answer that reports the tool calls instead of answering: "the
/// read_file tool was called with…", "I called list_dir".
pub fn talks_about_tools(text: &str, tools: &[&str]) -> bool {
    let lower = text.to_lowercase();
    if lower.trim().is_empty() {
        return false;
    }
    let names_a_tool = tools.iter().any(|t| lower.contains(t));
    if !names_a_tool {
        return false;
    }
    static CALLED: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)(?-u:\b)(was|were|is|has been) (called|invoked|executed)(?-u:\b)|(?-u:\b)(tool|function) call(?-u:\b)|(?-u:\b)the (tool|function) (returned|was)(?-u:\b)|(?-u:\b)called (the )?\w+ (tool|function)(?-u:\b)").ok()
    });
    let about_calls = CALLED.as_ref().is_some_and(|r| r.is_match(&lower));
    about_calls || (lower.len() < 400 && lower.contains("(") && lower.contains("path"))
}

/// An answer that reports the work as done instead of giving what a
/// question asked for: "The task is done.", "I have completed the task."
pub fn non_answer(text: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)^[^A-Za-z0-9_]*(the )?(task|request|job|work)( is| has been| was)? (done|complete|completed|finished)[^A-Za-z0-9_]*$|^[^A-Za-z0-9_]*(i have|i've|i) (completed|finished|done) (the|this|your) (task|request)[^A-Za-z0-9_]*$|^[^A-Za-z0-9_]*(done|completed|finished)[^A-Za-z0-9_]*$").ok()
    });
    holds_any(text, &["done", "complet", "finished"])
        && RE.as_ref().is_some_and(|r| r.is_match(text.trim()))
}

/// Numbers of two or more digits an answer gives that appear nowhere in
/// `evidence` (what the turn read): a small model answering a question
/// about the code invents ports and limits it never saw.
pub fn ungrounded_numbers(answer: &str, evidence: &str) -> Vec<String> {
    static NUM: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"[0-9]{2,}(?:\.[0-9]+)?").ok());
    let two_digits = answer
        .as_bytes()
        .windows(2)
        .any(|w| w.iter().all(u8::is_ascii_digit));
    if !two_digits {
        return Vec::new();
    }
    let Some(re) = NUM.as_ref() else {
        return Vec::new();
    };
    // A result the answer computes and shows, correctly, is grounded in
    // the numbers it was computed from.
    let computed: Vec<f64> = arithmetic(answer)
        .into_iter()
        .filter(|(_, claimed, value)| (claimed - value).abs() <= 1e-6 * value.abs().max(1.0))
        .map(|(_, claimed, _)| claimed)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(answer) {
        if m.as_str()
            .parse::<f64>()
            .is_ok_and(|n| computed.contains(&n))
        {
            continue;
        }
        let glued = answer[..m.start()]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if glued {
            continue;
        }
        let n = m.as_str();
        let whole = n.split('.').next().unwrap_or(n);
        let seen = regex(&format!(r"\b{}\b", regex::escape(whole)))
            .map(|r| r.is_match(evidence))
            .unwrap_or(true);
        if !seen && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// The arithmetic an answer shows (`200 - 200 * 0.15 = 180`): each
/// expression, the result it claims, and the right result. A small
/// model reads the code correctly and then gets the sum wrong.
pub fn arithmetic(answer: &str) -> Vec<(String, f64, f64)> {
    static EQ: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(
            r"([0-9(][0-9. \t()+\-*/×÷]*[0-9)])[ \t]*=[ \t]*(-?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?)",
        )
        .ok()
    });
    if !answer.contains('=') {
        return Vec::new();
    }
    let Some(re) = EQ.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in re.captures_iter(answer) {
        let (Some(expr), Some(claim)) = (c.get(1), c.get(2)) else {
            continue;
        };
        let expr = expr.as_str().trim();
        let glued = answer[..c.get(0).map_or(0, |m| m.start())]
            .chars()
            .next_back()
            .is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.');
        let operators = expr
            .char_indices()
            .filter(|&(i, ch)| matches!(ch, '+' | '*' | '/' | '×' | '÷') || (ch == '-' && i > 0))
            .count();
        if glued || operators == 0 {
            continue;
        }
        let (Some(value), Ok(claimed)) = (
            Calc::new(expr).eval(),
            claim.as_str().replace(',', "").parse::<f64>(),
        ) else {
            continue;
        };
        out.push((expr.to_string(), claimed, value));
    }
    out
}

/// The wrong sums among an answer's arithmetic, as "`expr` is X, not Y".
pub fn wrong_arithmetic(answer: &str) -> Vec<String> {
    arithmetic(answer)
        .into_iter()
        .filter(|(_, claimed, value)| (claimed - value).abs() > 1e-6 * value.abs().max(1.0))
        .map(|(expr, claimed, value)| {
            format!("{expr} is {}, not {}", number(value), number(claimed))
        })
        .collect()
}

/// A number as a person writes it: no `.0`, at most six decimals.
pub(super) fn number(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// A calculator for the four operations and parentheses.
pub(super) struct Calc {
    pub(super) chars: Vec<char>,
    pub(super) at: usize,
}

impl Calc {
    pub(super) fn new(expr: &str) -> Self {
        Calc {
            chars: expr.chars().filter(|c| !c.is_whitespace()).collect(),
            at: 0,
        }
    }

    pub(super) fn eval(mut self) -> Option<f64> {
        let v = self.sum()?;
        (self.at == self.chars.len() && v.is_finite()).then_some(v)
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    pub(super) fn sum(&mut self) -> Option<f64> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Some(v)
    }

    pub(super) fn product(&mut self) -> Option<f64> {
        let mut v = self.factor()?;
        while let Some(op @ ('*' | '/' | '×' | '÷')) = self.peek() {
            self.at += 1;
            let r = self.factor()?;
            v = if matches!(op, '*' | '×') {
                v * r
            } else {
                v / r
            };
        }
        Some(v)
    }

    pub(super) fn factor(&mut self) -> Option<f64> {
        match self.peek()? {
            '-' => {
                self.at += 1;
                Some(-self.factor()?)
            }
            '(' => {
                self.at += 1;
                let v = self.sum()?;
                (self.peek()? == ')').then(|| self.at += 1)?;
                Some(v)
            }
            _ => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                    self.at += 1;
                }
                self.chars[start..self.at]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .ok()
            }
        }
    }
}

pub use crate::tools::probe::AskedCall;

/// What mm's chat template for local models says after each tool result
/// (`assets/llama/qwen2.5-coder-tools.jinja`): small models copy it as
/// their answer.
pub const AFTER_TOOL_WORDS: &[&str] = &[
    "That call is done; do not repeat it.",
    "If the task needs another step, call the next tool; if it is finished, answer the user.",
];

/// An answer that is only mm's own instructions repeated back: not an
/// answer (a 1.5B model ended three turns in a row with the template's
/// words after a long read).
pub fn echoes_instruction(answer: &str) -> bool {
    let mut rest = answer.trim().to_string();
    let mut found = false;
    for w in AFTER_TOOL_WORDS {
        if rest.contains(w) {
            found = true;
            rest = rest.replace(w, "");
        }
    }
    found && rest.trim().chars().filter(|c| c.is_alphanumeric()).count() < 20
}

/// Whether an answer is the user's request sent back: it begins with the
/// request's words (its first 60 characters, spaces aside), or carries
/// mm's framing of attached files. A 1.5B model replied with the whole
/// first message, attachments and all, and it stood as the answer.
pub fn echoes_request(answer: &str, prompt: &str) -> bool {
    let squeeze = |s: &str| -> String { s.split_whitespace().collect::<Vec<_>>().join(" ") };
    let (answer, prompt) = (squeeze(answer), squeeze(prompt));
    let head: String = prompt.chars().take(60).collect();
    (head.chars().count() >= 20 && answer.starts_with(&head))
        || answer.contains("as it is now, for context; it counts as read]")
        || answer.contains("[files in the workspace]")
}

/// An answer without what a small model copied from around a tool result
/// into it: the chat template's words after each result and its tags
/// (`</tool_response>`), and the lines mm puts under a helper's answer
/// (`[the helper wrote no file]`, its session, that it ran out of
/// rounds). A 1.5B model ended a
/// review with all of them after the helper's words.
pub fn without_echo(text: &str) -> String {
    // mm's line under what a helper wrote before its rounds ran out.
    const OUT_OF_ROUNDS: &str = "ran out of rounds before it finished";
    const TAGS: &[&str] = &[
        "<tool_response>",
        "</tool_response>",
        "<tool_call>",
        "</tool_call>",
        "<|im_end|>",
        "<|im_start|>assistant",
        "<|im_start|>",
    ];
    if !AFTER_TOOL_WORDS
        .iter()
        .chain(TAGS)
        .any(|w| text.contains(w))
        && !text.contains("[the helper")
        && !text.contains(OUT_OF_ROUNDS)
    {
        return text.to_string();
    }
    let mut out = text.to_string();
    for w in AFTER_TOOL_WORDS.iter().chain(TAGS) {
        out = out.replace(w, "");
    }
    let kept: Vec<&str> = out
        .lines()
        .filter(|l| {
            let t = l.trim();
            !(t.ends_with(']')
                && (t.starts_with("[the helper wrote")
                    || t.starts_with("[agent ") && t.contains(OUT_OF_ROUNDS)
                    || crate::protocol::helper_session_in(t).is_some() && t.starts_with('[')))
        })
        .map(str::trim_end)
        .collect();
    kept.join("\n").trim().to_string()
}

/// An answer that is only mm's note under a helper's answer, repeated
/// ("The helper wrote no file.", "[the helper wrote: cart.py]"): a 1.5B
/// model answered so after every helper, whatever the helper did.
pub fn echoes_helper_note(answer: &str) -> bool {
    let t = answer
        .trim()
        .trim_matches(|c: char| c == '[' || c == ']' || c == '.' || c.is_whitespace())
        .to_lowercase();
    t.starts_with("the helper wrote") && t.lines().count() == 1 && t.len() < 160
}
