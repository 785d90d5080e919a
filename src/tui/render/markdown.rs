//! Markdown to styled logical lines with pulldown-cmark: headings, lists,
//! emphasis, links, inline code, block quotes, tables, rules, and fenced
//! code highlighted by syntect. Pure: text in, lines out; wrapping is done
//! later for the width at hand.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight;
use super::wrap::{Logical, text_width};
use crate::tui::theme::Theme;

struct Builder<'t> {
    theme: &'t Theme,
    out: Vec<Logical>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Each open list: the next number, or None for bullets.
    lists: Vec<Option<u64>>,
    quote: usize,
    /// Prefix for the first line of the current item.
    item_prefix: Option<String>,
    link: Option<String>,
    code: Option<(String, String)>,
    table: Option<Table>,
}

#[derive(Default)]
struct Table {
    align: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    cell: Vec<Span<'static>>,
    row: Vec<Vec<Span<'static>>>,
    header_rows: usize,
}

impl<'t> Builder<'t> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn indent(&self) -> String {
        let depth = self.lists.len().saturating_sub(1);
        "  ".repeat(depth)
    }

    fn quote_prefix(&self) -> Vec<Span<'static>> {
        (0..self.quote)
            .map(|_| Span::styled("│ ", Style::new().fg(self.theme.dim)))
            .collect()
    }

    fn text(&mut self, t: &str) {
        let style = self.style();
        if let Some(table) = &mut self.table {
            table.cell.push(Span::styled(t.to_string(), style));
            return;
        }
        self.spans.push(Span::styled(t.to_string(), style));
    }

    /// Ends the current paragraph-like line.
    fn flush(&mut self) {
        if self.spans.is_empty() && self.item_prefix.is_none() {
            return;
        }
        let mut spans = self.quote_prefix();
        let mut hang = self.quote_prefix();
        let indent = self.indent();
        match self.item_prefix.take() {
            Some(p) => {
                spans.push(Span::raw(format!("{indent}{p}")));
                hang.push(Span::raw(" ".repeat(text_width(&indent) + text_width(&p))));
            }
            None if !self.lists.is_empty() => {
                let pad = " ".repeat(text_width(&indent) + 2);
                spans.push(Span::raw(pad.clone()));
                hang.push(Span::raw(pad));
            }
            None => {}
        }
        spans.append(&mut self.spans);
        let mut l = Logical::word(Line::from(spans));
        l.hang = hang;
        self.out.push(l);
    }

    fn blank(&mut self) {
        if self
            .out
            .last()
            .is_some_and(|l| l.line.spans.iter().all(|s| s.content.trim().is_empty()))
        {
            return;
        }
        if self.out.is_empty() {
            return;
        }
        self.out.push(Logical::word(Line::default()));
    }

    fn start(&mut self, tag: Tag<'_>) {
        let th = self.theme;
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank();
                let bold = Style::new().fg(th.accent).add_modifier(Modifier::BOLD);
                let s = if level == HeadingLevel::H1 {
                    bold.add_modifier(Modifier::UNDERLINED)
                } else {
                    bold
                };
                self.styles.push(s);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let prefix = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let p = format!("{n}. ");
                        *n += 1;
                        p
                    }
                    _ => "• ".to_string(),
                };
                self.item_prefix = Some(prefix);
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| s.fg(th.accent).add_modifier(Modifier::UNDERLINED));
            }
            Tag::Table(align) => {
                self.flush();
                self.table = Some(Table {
                    align,
                    ..Default::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {}
            Tag::TableCell => {}
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
                self.blank();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take()
                    && !url.is_empty()
                {
                    let dim = Style::new().fg(self.theme.dim);
                    self.spans.push(Span::styled(format!(" ({url})"), dim));
                }
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    t.row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.render_table(t);
                }
                self.blank();
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let gutter = Span::styled("▏ ", Style::new().fg(self.theme.border));
        let lines = if highlight::knows(lang) {
            highlight::highlight(code, lang, &self.theme.syntax, self.theme.depth)
        } else {
            let st = Style::new().fg(self.theme.text);
            code.lines()
                .map(|l| Line::from(Span::styled(l.to_string(), st)))
                .collect()
        };
        for line in lines {
            let mut spans = self.quote_prefix();
            spans.push(gutter.clone());
            spans.extend(line.spans);
            let mut l = Logical::chars(Line::from(spans));
            l.hang = vec![gutter.clone()];
            self.out.push(l);
        }
    }

    fn render_table(&mut self, t: Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width_of =
            |cell: &Vec<Span<'static>>| cell.iter().map(|s| text_width(&s.content)).sum::<usize>();
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                t.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(width_of)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let sep = Style::new().fg(self.theme.border);
        for (i, row) in t.rows.iter().enumerate() {
            let mut spans = Vec::new();
            for (c, w) in widths.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(" │ ", sep));
                }
                let cell = row.get(c).cloned().unwrap_or_default();
                let pad = w.saturating_sub(width_of(&cell));
                let (left, right) = match t.align.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                spans.push(Span::raw(" ".repeat(left)));
                for s in cell {
                    let st = if i < t.header_rows {
                        s.style.add_modifier(Modifier::BOLD)
                    } else {
                        s.style
                    };
                    spans.push(Span::styled(s.content, st));
                }
                spans.push(Span::raw(" ".repeat(right)));
            }
            self.out.push(Logical::chars(Line::from(spans)));
            if i + 1 == t.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.out.push(Logical::chars(Line::from(Span::styled(
                    rule.join("─┼─"),
                    sep,
                ))));
            }
        }
    }
}

/// Renders markdown to logical lines (not yet wrapped).
pub fn render(text: &str, theme: &Theme) -> Vec<Logical> {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    let mut b = Builder {
        theme,
        out: Vec::new(),
        spans: Vec::new(),
        styles: vec![Style::new().fg(theme.text)],
        lists: Vec::new(),
        quote: 0,
        item_prefix: None,
        link: None,
        code: None,
        table: None,
    };
    for ev in Parser::new_ext(text, opts) {
        match ev {
            Event::Start(tag) => b.start(tag),
            Event::End(tag) => b.end(tag),
            Event::Text(t) => {
                if let Some((_, code)) = &mut b.code {
                    code.push_str(&t);
                } else {
                    b.text(&t);
                }
            }
            Event::Code(t) => {
                let st = Style::new().fg(theme.accent).bg(theme.selection);
                if let Some(table) = &mut b.table {
                    table.cell.push(Span::styled(t.to_string(), st));
                } else {
                    b.spans.push(Span::styled(t.to_string(), st));
                }
            }
            Event::SoftBreak => b.text(" "),
            Event::HardBreak => b.flush(),
            Event::Rule => {
                b.flush();
                b.out.push(Logical::chars(Line::from(Span::styled(
                    "─".repeat(40),
                    Style::new().fg(theme.border),
                ))));
            }
            Event::TaskListMarker(done) => b.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(t) | Event::InlineHtml(t) => b.text(&t),
            _ => {}
        }
    }
    b.flush();
    while b
        .out
        .last()
        .is_some_and(|l| l.line.spans.iter().all(|s| s.content.trim().is_empty()))
    {
        b.out.pop();
    }
    b.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::{ColorDepth, load};

    fn plain(text: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let theme = load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        render(text, &theme)
            .iter()
            .map(|l| l.line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn blocks_render_as_a_reader_expects() {
        let out = plain(
            "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n  1. nested\n\n> quoted\n\n---\n",
        );
        assert_eq!(
            out,
            vec![
                "Title",
                "",
                "Some text and code.",
                "",
                "• one",
                "• two",
                "  1. nested",
                "",
                "│ quoted",
                "",
                "────────────────────────────────────────",
            ]
        );
    }

    #[test]
    fn code_blocks_keep_their_lines_and_tables_align() {
        let out = plain(
            "```rust\nfn main() {\n    go();\n}\n```\n\n| a | bb |\n|---|---:|\n| ccc | d |\n",
        );
        assert_eq!(out[0], "▏ fn main() {");
        assert_eq!(out[1], "▏     go();");
        assert!(out.contains(&"a   │ bb".to_string()), "{out:?}");
        assert!(out.contains(&"ccc │  d".to_string()), "{out:?}");
    }

    #[test]
    fn links_show_their_target() {
        let out = plain("see [the docs](https://example.org)");
        assert_eq!(out, vec!["see the docs (https://example.org)"]);
    }
}
