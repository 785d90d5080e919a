//! Syntax highlighting with syntect in the theme's colours. The syntax and
//! theme sets load once (a few ms); the cost is compiling a grammar's
//! regexes on its first use, so `warm_up` runs once on a background thread
//! when the TUI starts.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SyntectTheme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use crate::tui::theme::{ColorDepth, degrade};

struct Sets {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

fn sets() -> &'static Sets {
    static SETS: OnceLock<Sets> = OnceLock::new();
    SETS.get_or_init(|| Sets {
        // bat's syntaxes: TypeScript, TOML, Dockerfile and more syntect lacks.
        syntaxes: two_face::syntax::extra_newlines(),
        themes: ThemeSet::load_defaults(),
    })
}

/// Loads the sets and compiles a few common grammars off the UI thread.
pub fn warm_up() {
    std::thread::spawn(|| {
        let s = sets();
        for ext in ["rs", "py", "js", "sh"] {
            if let Some(syn) = s.syntaxes.find_syntax_by_extension(ext)
                && let Some(theme) = s.themes.themes.values().next()
            {
                let mut h = HighlightLines::new(syn, theme);
                let _ = h.highlight_line("fn main() { let x = \"a\"; }\n", &s.syntaxes);
            }
        }
    });
}

fn syntax_for(hint: &str) -> Option<&'static SyntaxReference> {
    let s = sets();
    let hint = hint.trim().to_ascii_lowercase();
    if hint.is_empty() {
        return None;
    }
    let ext = hint.rsplit('.').next().unwrap_or(&hint);
    s.syntaxes
        .find_syntax_by_token(&hint)
        .or_else(|| s.syntaxes.find_syntax_by_extension(ext))
        .or_else(|| match ext {
            "ts" | "tsx" | "jsx" | "mjs" => s.syntaxes.find_syntax_by_extension("js"),
            "toml" | "ini" => s.syntaxes.find_syntax_by_extension("yaml"),
            "zsh" | "bash" => s.syntaxes.find_syntax_by_extension("sh"),
            _ => None,
        })
}

fn theme(name: &str) -> &'static SyntectTheme {
    let s = sets();
    s.themes
        .themes
        .get(name)
        .or_else(|| s.themes.themes.get("base16-ocean.dark"))
        .or_else(|| s.themes.themes.values().next())
        .unwrap_or_else(|| unreachable_theme())
}

/// syntect always ships its default themes; this is never reached, but a
/// missing theme must not panic the UI.
fn unreachable_theme() -> &'static SyntectTheme {
    static EMPTY: OnceLock<SyntectTheme> = OnceLock::new();
    EMPTY.get_or_init(SyntectTheme::default)
}

/// Highlights `code` as the language named by `hint` (a fence's info
/// string or a file name). Unknown languages come back unstyled.
pub fn highlight(
    code: &str,
    hint: &str,
    theme_name: &str,
    depth: ColorDepth,
) -> Vec<Line<'static>> {
    let plain = || code.lines().map(|l| Line::from(l.to_string())).collect();
    let Some(syntax) = syntax_for(hint) else {
        return plain();
    };
    let s = sets();
    let mut h = HighlightLines::new(syntax, theme(theme_name));
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ranges) = h.highlight_line(line, &s.syntaxes) else {
            return plain();
        };
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']).to_string();
                let fg = degrade(
                    Color::Rgb(style.foreground.r, style.foreground.g, style.foreground.b),
                    depth,
                );
                let mut st = Style::new().fg(fg);
                if style.font_style.contains(FontStyle::BOLD) {
                    st = st.add_modifier(Modifier::BOLD);
                }
                if style.font_style.contains(FontStyle::ITALIC) {
                    st = st.add_modifier(Modifier::ITALIC);
                }
                Span::styled(text, st)
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        out.push(Line::from(spans));
    }
    out
}

/// True when the hint names a language syntect knows.
pub fn knows(hint: &str) -> bool {
    syntax_for(hint).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_and_toml_have_their_own_grammars() {
        for (hint, name) in [
            ("a.ts", "TypeScript"),
            ("Cargo.toml", "TOML"),
            ("Dockerfile", "Dockerfile"),
        ] {
            let syn = syntax_for(hint).unwrap_or_else(|| panic!("no syntax for {hint}"));
            assert_eq!(syn.name, name, "{hint}");
        }
        let lines = highlight(
            "const x: number = 1;\n",
            "ts",
            "base16-ocean.dark",
            ColorDepth::TrueColor,
        );
        assert!(lines[0].spans.len() > 2, "{lines:?}");
    }

    #[test]
    fn known_languages_get_colours_and_unknown_stay_plain() {
        let lines = highlight(
            "fn main() {}\n",
            "rust",
            "base16-ocean.dark",
            ColorDepth::TrueColor,
        );
        assert_eq!(lines.len(), 1);
        assert!(lines[0].spans.len() > 1);
        assert!(matches!(lines[0].spans[0].style.fg, Some(Color::Rgb(..))));
        let plain = highlight(
            "just text\n",
            "nosuchlang",
            "base16-ocean.dark",
            ColorDepth::TrueColor,
        );
        assert_eq!(plain[0].spans.len(), 1);
        assert!(knows("main.py") && knows("sh") && !knows(""));
    }
}
