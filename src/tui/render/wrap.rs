//! Wrapping styled lines to a width: words stay whole when they fit,
//! code is cut at the width. Widths are display columns (wide characters
//! count two).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// How a logical line may be broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// At spaces; a word longer than the width is cut.
    Word,
    /// Anywhere (code, diffs).
    Char,
}

/// A logical line before wrapping, with the indent its continuation lines get.
#[derive(Clone, Debug)]
pub struct Logical {
    pub line: Line<'static>,
    pub wrap: Wrap,
    /// Spans put in front of every continuation line (a list's indent, a
    /// quote bar).
    pub hang: Vec<Span<'static>>,
}

impl Logical {
    pub fn word(line: Line<'static>) -> Self {
        Self {
            line,
            wrap: Wrap::Word,
            hang: Vec::new(),
        }
    }

    pub fn chars(line: Line<'static>) -> Self {
        Self {
            line,
            wrap: Wrap::Char,
            hang: Vec::new(),
        }
    }
}

fn char_width(c: char) -> usize {
    if c == '\t' { 4 } else { c.width().unwrap_or(0) }
}

pub fn text_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Styled characters of a line, tabs expanded.
fn chars_of(line: &Line<'static>) -> Vec<(char, Style)> {
    let mut out = Vec::new();
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for c in span.content.chars() {
            if c == '\t' {
                out.extend(std::iter::repeat_n((' ', style), 4));
            } else if c != '\n' && c != '\r' {
                out.push((c, style));
            }
        }
    }
    out
}

/// Rebuilds spans from styled characters, merging runs of one style.
fn to_line(chars: &[(char, Style)], prefix: &[Span<'static>]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = prefix.to_vec();
    let mut cur = String::new();
    let mut cur_style: Option<Style> = None;
    for (c, s) in chars {
        if cur_style != Some(*s) {
            if let Some(st) = cur_style {
                spans.push(Span::styled(std::mem::take(&mut cur), st));
            }
            cur_style = Some(*s);
        }
        cur.push(*c);
    }
    if let Some(st) = cur_style {
        spans.push(Span::styled(cur, st));
    }
    Line::from(spans)
}

/// Wraps one logical line to `width` columns.
pub fn wrap(l: &Logical, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let chars = chars_of(&l.line);
    let hang_width: usize = l.hang.iter().map(|s| text_width(&s.content)).sum();
    let total: usize = chars.iter().map(|(c, _)| char_width(*c)).sum();
    if total <= width {
        return vec![to_line(&chars, &[])];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut first = true;
    while start < chars.len() {
        let avail = if first {
            width
        } else {
            width.saturating_sub(hang_width).max(1)
        };
        // Longest prefix from `start` that fits.
        let mut used = 0;
        let mut end = start;
        while end < chars.len() {
            let w = char_width(chars[end].0);
            if used + w > avail {
                break;
            }
            used += w;
            end += 1;
        }
        if end == start {
            end = start + 1; // a character wider than the width
        }
        let mut cut = end;
        if l.wrap == Wrap::Word && end < chars.len() {
            // Break after the last space, if there is one on this line.
            if let Some(sp) = chars[start..end].iter().rposition(|(c, _)| *c == ' ')
                && sp > 0
            {
                cut = start + sp + 1;
            }
        }
        let mut piece = &chars[start..cut];
        if l.wrap == Wrap::Word {
            while let Some(((' ', _), rest)) = piece.split_last() {
                piece = rest;
            }
        }
        let prefix: &[Span<'static>] = if first { &[] } else { &l.hang };
        out.push(to_line(piece, prefix));
        start = cut;
        if l.wrap == Wrap::Word {
            while start < chars.len() && chars[start].0 == ' ' {
                start += 1;
            }
        }
        first = false;
    }
    out
}

/// Wraps many logical lines.
pub fn wrap_all(lines: &[Logical], width: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap(l, width)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn words_stay_whole() {
        let l = Logical::word(Line::from("the quick brown fox jumps"));
        assert_eq!(
            texts(&wrap(&l, 10)),
            vec!["the quick", "brown fox", "jumps"]
        );
    }

    #[test]
    fn long_words_and_code_are_cut() {
        let l = Logical::word(Line::from("abcdefghijkl"));
        assert_eq!(texts(&wrap(&l, 5)), vec!["abcde", "fghij", "kl"]);
        let c = Logical::chars(Line::from("let x = 1; let y = 2;"));
        assert_eq!(texts(&wrap(&c, 10)), vec!["let x = 1;", " let y = 2", ";"]);
    }

    #[test]
    fn styles_survive_and_continuation_lines_hang() {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let red = Style::new().fg(Color::Red);
        let mut l = Logical::word(Line::from(vec![
            Span::styled("bold words ", bold),
            Span::styled("red words here", red),
        ]));
        l.hang = vec![Span::raw("  ")];
        let out = wrap(&l, 12);
        assert_eq!(texts(&out), vec!["bold words", "  red words", "  here"]);
        assert_eq!(out[0].spans[0].style, bold);
        assert_eq!(out[1].spans[1].style, red);
    }

    #[test]
    fn wide_characters_count_twice() {
        let l = Logical::chars(Line::from("日本語のテキスト"));
        let out = wrap(&l, 6);
        assert_eq!(texts(&out), vec!["日本語", "のテキ", "スト"]);
    }
}
