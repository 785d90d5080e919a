//! Themes: `themes/*.toml` compiled in, partial overrides from
//! `~/.config/mm/themes/` and `./.mm/themes/`. Each UI role maps to a
//! colour; colours degrade to the 256- or 16-colour palette when the
//! terminal lacks truecolor. A broken file is an error with its line:col.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratatui::style::Color;
use serde::Deserialize;

use crate::config::{ConfigError, line_col};

/// The shipped themes, by name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// The roles a theme colours.
pub const ROLES: &[&str] = &[
    "text",
    "dim",
    "accent",
    "added",
    "removed",
    "added_span",
    "removed_span",
    "warning",
    "error",
    "selection",
    "border",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorDepth {
    TrueColor,
    Ansi256,
    Ansi16,
}

impl ColorDepth {
    /// What the terminal says it can show (`COLORTERM`, `TERM`).
    pub fn detect() -> ColorDepth {
        let colorterm = std::env::var("COLORTERM")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if colorterm.contains("truecolor") || colorterm.contains("24bit") {
            return ColorDepth::TrueColor;
        }
        let term = std::env::var("TERM").unwrap_or_default();
        if term.contains("256") {
            ColorDepth::Ansi256
        } else {
            ColorDepth::Ansi16
        }
    }
}

/// A resolved theme.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    /// A syntect theme name for code.
    pub syntax: String,
    pub text: Color,
    pub dim: Color,
    pub accent: Color,
    pub added: Color,
    pub removed: Color,
    pub added_span: Color,
    pub removed_span: Color,
    pub warning: Color,
    pub error: Color,
    pub selection: Color,
    pub border: Color,
    /// The depth colours were degraded to.
    pub depth: ColorDepth,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    inherits: Option<String>,
    syntax: Option<String>,
    #[serde(default)]
    colors: BTreeMap<String, toml::Spanned<String>>,
}

fn parse_file(path: &Path, text: &str) -> Result<ThemeFile, ConfigError> {
    let file: ThemeFile = toml::from_str(text).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        position: e.span().map(|s| line_col(text, s.start)),
        message: e.message().trim().to_string(),
    })?;
    for (role, value) in &file.colors {
        if !ROLES.contains(&role.as_str()) {
            let best = crate::config::file::closest(role, ROLES).unwrap_or("text");
            return Err(ConfigError {
                file: path.to_path_buf(),
                position: Some(line_col(text, value.span().start)),
                message: format!("unknown colour role {role:?}; the closest role is {best:?}"),
            });
        }
        if parse_color(value.get_ref()).is_none() {
            return Err(ConfigError {
                file: path.to_path_buf(),
                position: Some(line_col(text, value.span().start)),
                message: format!(
                    "{:?} is not a colour (use \"#rrggbb\", a colour name or \"default\")",
                    value.get_ref()
                ),
            });
        }
    }
    Ok(file)
}

/// `#rrggbb`, an ANSI colour name, or `default`.
pub fn parse_color(s: &str) -> Option<Color> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 {
            return None;
        }
        let v = u32::from_str_radix(hex, 16).ok()?;
        return Some(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
    }
    Some(
        match s.to_ascii_lowercase().replace(['-', '_', ' '], "").as_str() {
            "default" | "reset" => Color::Reset,
            "black" => Color::Black,
            "red" => Color::Red,
            "green" => Color::Green,
            "yellow" => Color::Yellow,
            "blue" => Color::Blue,
            "magenta" => Color::Magenta,
            "cyan" => Color::Cyan,
            "gray" | "grey" => Color::Gray,
            "darkgray" | "darkgrey" => Color::DarkGray,
            "lightred" => Color::LightRed,
            "lightgreen" => Color::LightGreen,
            "lightyellow" => Color::LightYellow,
            "lightblue" => Color::LightBlue,
            "lightmagenta" => Color::LightMagenta,
            "lightcyan" => Color::LightCyan,
            "white" => Color::White,
            _ => return None,
        },
    )
}

/// The nearest colour the terminal can show.
pub fn degrade(c: Color, depth: ColorDepth) -> Color {
    let Color::Rgb(r, g, b) = c else { return c };
    match depth {
        ColorDepth::TrueColor => c,
        ColorDepth::Ansi256 => Color::Indexed(rgb_to_256(r, g, b)),
        ColorDepth::Ansi16 => rgb_to_16(r, g, b),
    }
}

fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let steps = [0u8, 95, 135, 175, 215, 255];
    let cube_rgb = (steps[lr as usize], steps[lg as usize], steps[lb as usize]);
    let avg = (r as u16 + g as u16 + b as u16) / 3;
    let gray_idx = if avg > 238 {
        23
    } else {
        avg.saturating_sub(3) / 10
    } as u8;
    let gray_v = 8 + 10 * gray_idx as u16;
    let dist = |a: (u8, u8, u8)| {
        let d = |x: u8, y: u8| (x as i32 - y as i32).pow(2);
        d(a.0, r) + d(a.1, g) + d(a.2, b)
    };
    let gray_rgb = (gray_v as u8, gray_v as u8, gray_v as u8);
    if dist(gray_rgb) < dist(cube_rgb) {
        232 + gray_idx
    } else {
        cube
    }
}

fn rgb_to_16(r: u8, g: u8, b: u8) -> Color {
    const TABLE: &[(Color, (u8, u8, u8))] = &[
        (Color::Black, (0, 0, 0)),
        (Color::Red, (205, 0, 0)),
        (Color::Green, (0, 205, 0)),
        (Color::Yellow, (205, 205, 0)),
        (Color::Blue, (0, 0, 238)),
        (Color::Magenta, (205, 0, 205)),
        (Color::Cyan, (0, 205, 205)),
        (Color::Gray, (229, 229, 229)),
        (Color::DarkGray, (127, 127, 127)),
        (Color::LightRed, (255, 0, 0)),
        (Color::LightGreen, (0, 255, 0)),
        (Color::LightYellow, (255, 255, 0)),
        (Color::LightBlue, (92, 92, 255)),
        (Color::LightMagenta, (255, 0, 255)),
        (Color::LightCyan, (0, 255, 255)),
        (Color::White, (255, 255, 255)),
    ];
    TABLE
        .iter()
        .min_by_key(|(_, (tr, tg, tb))| {
            let d = |x: u8, y: u8| (x as i32 - y as i32).pow(2);
            d(*tr, r) + d(*tg, g) + d(*tb, b)
        })
        .map(|(c, _)| *c)
        .unwrap_or(Color::Reset)
}

/// Directories searched for user themes, lowest first.
fn user_dirs(root: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(dir) = crate::config::user_config_dir() {
        v.push(dir.join("themes"));
    }
    v.push(root.join(".mm").join("themes"));
    v
}

/// Loads a theme by name: the shipped one (or the one it inherits), then
/// user files over it.
pub fn load(name: &str, root: &Path, depth: ColorDepth) -> Result<Theme, ConfigError> {
    let mut layers: Vec<ThemeFile> = Vec::new();
    let mut user: Vec<(PathBuf, String)> = Vec::new();
    for dir in user_dirs(root) {
        let path = dir.join(format!("{name}.toml"));
        if let Ok(text) = std::fs::read_to_string(&path) {
            user.push((path, text));
        }
    }
    let mut user_files = Vec::new();
    for (path, text) in &user {
        user_files.push(parse_file(path, text)?);
    }
    let base_name = user_files
        .iter()
        .rev()
        .find_map(|f| f.inherits.clone())
        .unwrap_or_else(|| name.to_string());
    let shipped = SHIPPED.iter().find(|(n, _)| *n == base_name);
    match shipped {
        Some((n, text)) => layers.push(parse_file(Path::new(&format!("themes/{n}.toml")), text)?),
        None if user_files.is_empty() => {
            let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
            return Err(ConfigError {
                file: PathBuf::from(format!("themes/{name}.toml")),
                position: None,
                message: format!(
                    "no theme named {name:?}; shipped themes: {} (or add {name}.toml under ~/.config/mm/themes/)",
                    names.join(", ")
                ),
            });
        }
        None => layers.push(parse_file(Path::new("themes/dark.toml"), SHIPPED[0].1)?),
    }
    layers.extend(user_files);
    let mut colors: BTreeMap<String, String> = BTreeMap::new();
    let mut syntax = String::from("base16-ocean.dark");
    for l in layers {
        if let Some(s) = l.syntax {
            syntax = s;
        }
        for (k, v) in l.colors {
            colors.insert(k, v.into_inner());
        }
    }
    let get = |role: &str| {
        let c = colors
            .get(role)
            .and_then(|v| parse_color(v))
            .unwrap_or(Color::Reset);
        degrade(c, depth)
    };
    Ok(Theme {
        name: name.to_string(),
        syntax,
        text: get("text"),
        dim: get("dim"),
        accent: get("accent"),
        added: get("added"),
        removed: get("removed"),
        added_span: get("added_span"),
        removed_span: get("removed_span"),
        warning: get("warning"),
        error: get("error"),
        selection: get("selection"),
        border: get("border"),
        depth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_theme_parses_and_sets_every_role() {
        for (name, text) in SHIPPED {
            let f = parse_file(Path::new(name), text).unwrap();
            for role in ROLES {
                assert!(f.colors.contains_key(*role), "{name} lacks {role}");
            }
            let dir = tempfile::tempdir().unwrap();
            let t = load(name, dir.path(), ColorDepth::TrueColor).unwrap();
            assert!(matches!(t.added, Color::Rgb(..)), "{name}");
        }
    }

    #[test]
    fn a_user_file_overrides_part_of_a_theme() {
        let dir = tempfile::tempdir().unwrap();
        let themes = dir.path().join(".mm/themes");
        std::fs::create_dir_all(&themes).unwrap();
        std::fs::write(themes.join("dark.toml"), "[colors]\nadded = \"#010203\"\n").unwrap();
        let t = load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        assert_eq!(t.added, Color::Rgb(1, 2, 3));
        assert_eq!(t.removed, Color::Rgb(0xe0, 0x7a, 0x85));
        std::fs::write(
            themes.join("mine.toml"),
            "inherits = \"light\"\n[colors]\ntext = \"red\"\n",
        )
        .unwrap();
        let t = load("mine", dir.path(), ColorDepth::TrueColor).unwrap();
        assert_eq!(t.text, Color::Red);
        assert_eq!(t.syntax, "InspiredGitHub");
    }

    #[test]
    fn a_broken_theme_names_file_line_and_col() {
        let dir = tempfile::tempdir().unwrap();
        let themes = dir.path().join(".mm/themes");
        std::fs::create_dir_all(&themes).unwrap();
        std::fs::write(themes.join("dark.toml"), "[colors]\ntext = \"#12345\"\n").unwrap();
        let e = load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert_eq!(e.position, Some((2, 8)), "{e}");
        assert!(e.to_string().contains("dark.toml:2:8"), "{e}");
        std::fs::write(themes.join("dark.toml"), "[colors]\nadd = \"#123456\"\n").unwrap();
        let e = load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert!(e.message.contains("\"added\""), "{e}");
        std::fs::write(themes.join("dark.toml"), "colors = [\n").unwrap();
        let e = load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert!(e.position.is_some(), "{e}");
        assert!(load("nope", dir.path(), ColorDepth::TrueColor).is_err());
    }

    #[test]
    fn colours_degrade_to_what_the_terminal_shows() {
        assert_eq!(
            degrade(Color::Rgb(255, 0, 0), ColorDepth::Ansi16),
            Color::LightRed
        );
        assert_eq!(
            degrade(Color::Rgb(0, 0, 0), ColorDepth::Ansi256),
            Color::Indexed(16)
        );
        assert_eq!(
            degrade(Color::Rgb(128, 128, 128), ColorDepth::Ansi256),
            Color::Indexed(244)
        );
        assert_eq!(degrade(Color::Red, ColorDepth::Ansi16), Color::Red);
    }
}
