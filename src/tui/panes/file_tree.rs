//! The file tree: the workspace, gitignore-aware, folders read when first
//! opened; the files the session changed are marked (A/M/D) with counts on
//! their folders; typing filters by name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::protocol::{AgentEvent, ChangeKind};
use crate::tui::component::Handled;
use crate::tui::keymap::TreeAction;
use crate::tui::theme::Theme;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Relative path, `/`-separated.
    pub path: String,
    pub dir: bool,
}

/// A visible row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub path: String,
    pub name: String,
    pub depth: usize,
    pub dir: bool,
}

pub struct FileTree {
    root: PathBuf,
    children: BTreeMap<String, Vec<Entry>>,
    pub expanded: BTreeSet<String>,
    pub selected: usize,
    pub filter: String,
    /// A filter was started (vim's `/`): letters are text even before
    /// the first one is typed.
    pub filtering: bool,
    pub marks: BTreeMap<String, ChangeKind>,
    /// Language-server errors and warnings per file.
    pub diags: BTreeMap<String, (u32, u32)>,
    all_files: Option<Vec<String>>,
    scroll: std::cell::Cell<usize>,
}

/// Files listed when filtering, at most.
const MAX_INDEXED: usize = 20_000;

fn list_dir(root: &std::path::Path, rel: &str) -> Vec<Entry> {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let mut out: Vec<Entry> = crate::paths::walk(&dir)
        .max_depth(Some(1))
        .build()
        .flatten()
        .filter(|e| e.depth() == 1 && e.file_name() != ".git" && e.file_name() != ".mm")
        .filter(|e| !(e.file_type().is_some_and(|t| t.is_dir()) && ignores_itself(e.path())))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            Entry {
                path: if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                },
                dir: e.file_type().is_some_and(|t| t.is_dir()),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (!a.dir)
            .cmp(&!b.dir)
            .then_with(|| natural_cmp(&a.path, &b.path))
    });
    out
}

/// A folder whose own `.gitignore` ignores everything in it (`*`): what
/// pytest, mypy and ruff leave behind. git does not show it; neither does
/// the tree.
fn ignores_itself(dir: &std::path::Path) -> bool {
    crate::paths::read_regular(&dir.join(".gitignore"), 4096)
        .map(|b| String::from_utf8_lossy(&b).lines().any(|l| l.trim() == "*"))
        .unwrap_or(false)
}

/// Names in the order people count: `f_2` before `f_10`, case ignored.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    let (mut x, mut y) = (a.as_str(), b.as_str());
    loop {
        let (Some(cx), Some(cy)) = (x.chars().next(), y.chars().next()) else {
            return x.len().cmp(&y.len());
        };
        if cx.is_ascii_digit() && cy.is_ascii_digit() {
            let nx = x.find(|c: char| !c.is_ascii_digit()).unwrap_or(x.len());
            let ny = y.find(|c: char| !c.is_ascii_digit()).unwrap_or(y.len());
            let (dx, dy) = (
                x[..nx].trim_start_matches('0'),
                y[..ny].trim_start_matches('0'),
            );
            let by_value = dx.len().cmp(&dy.len()).then_with(|| dx.cmp(dy));
            if by_value != Ordering::Equal {
                return by_value;
            }
            (x, y) = (&x[nx..], &y[ny..]);
        } else {
            if cx != cy {
                return cx.cmp(&cy);
            }
            (x, y) = (&x[cx.len_utf8()..], &y[cy.len_utf8()..]);
        }
    }
}

/// Every file in the workspace, for filtering.
pub fn index(root: &std::path::Path) -> Vec<String> {
    crate::paths::walk(root)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(MAX_INDEXED)
        .filter_map(|e| {
            e.path()
                .strip_prefix(root)
                .ok()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
        })
        .collect()
}

impl FileTree {
    /// Reads the top folder now; others are read when first opened, in the
    /// event handlers, so drawing never touches the disk.
    pub fn new(root: PathBuf) -> Self {
        let mut t = Self {
            root,
            children: BTreeMap::new(),
            expanded: BTreeSet::new(),
            selected: 0,
            filter: String::new(),
            filtering: false,
            marks: BTreeMap::new(),
            diags: BTreeMap::new(),
            all_files: None,
            scroll: std::cell::Cell::new(0),
        };
        t.load("");
        t
    }

    fn load(&mut self, rel: &str) {
        let list = list_dir(&self.root, rel);
        self.children.insert(rel.to_string(), list);
    }

    fn kids(&self, rel: &str) -> &[Entry] {
        self.children.get(rel).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The rows shown now.
    pub fn rows(&self) -> Vec<Row> {
        if !self.filter.is_empty() {
            let needle = self.filter.to_lowercase();
            return self
                .all_files
                .iter()
                .flatten()
                .filter(|p| p.to_lowercase().contains(&needle))
                .take(500)
                .map(|p| Row {
                    path: p.clone(),
                    name: p.clone(),
                    depth: 0,
                    dir: false,
                })
                .collect();
        }
        let mut out = Vec::new();
        self.push_rows("", 0, &mut out);
        out
    }

    fn push_rows(&self, dir: &str, depth: usize, out: &mut Vec<Row>) {
        for e in self.kids(dir) {
            let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
            let open = e.dir && self.expanded.contains(&e.path);
            out.push(Row {
                path: e.path.clone(),
                name,
                depth,
                dir: e.dir,
            });
            if open && depth < 32 {
                self.push_rows(&e.path, depth + 1, out);
            }
        }
    }

    fn expand(&mut self, path: &str) {
        if !self.children.contains_key(path) {
            self.load(path);
        }
        self.expanded.insert(path.to_string());
    }

    pub fn move_by(&mut self, delta: isize) {
        let n = self.rows().len();
        if n == 0 {
            return;
        }
        self.selected = (self.selected as isize + delta).clamp(0, n as isize - 1) as usize;
    }

    pub fn selected_row(&self) -> Option<Row> {
        let rows = self.rows();
        rows.get(self.selected.min(rows.len().saturating_sub(1)))
            .cloned()
    }

    /// A filter that names no file but starts with a command's name
    /// (`keymap default`, typed after the vim keymap's `/`): the command
    /// line it was likely meant as.
    pub fn command_typed(&self) -> Option<String> {
        if !self.typing() || !self.rows().is_empty() {
            return None;
        }
        let word = self.filter.split_whitespace().next()?;
        crate::slash::Slash::named(word)?;
        Some(format!("/{}", self.filter.trim()))
    }

    /// Enter: a folder opens or closes; a file is returned to be viewed.
    pub fn open(&mut self) -> Option<String> {
        let row = self.selected_row()?;
        if row.dir {
            if !self.expanded.remove(&row.path) {
                self.expand(&row.path);
            }
            None
        } else {
            Some(row.path)
        }
    }

    pub fn set_expanded(&mut self, open: bool) {
        if let Some(row) = self.selected_row()
            && row.dir
        {
            if open {
                self.expand(&row.path);
            } else {
                self.expanded.remove(&row.path);
            }
        }
    }

    /// Filtering needs the workspace's file list, which a job walks.
    pub fn needs_index(&self) -> bool {
        !self.filter.is_empty() && self.all_files.is_none()
    }

    /// The workspace's file list arrived.
    pub fn set_index(&mut self, files: Vec<String>) {
        self.all_files = Some(files);
    }

    pub fn type_char(&mut self, c: char) {
        self.filter.push(c);
        self.selected = 0;
    }

    pub fn backspace(&mut self) {
        self.filter.pop();
        self.selected = 0;
    }

    pub fn clear_filter(&mut self) {
        self.filter.clear();
        self.filtering = false;
        self.selected = 0;
    }

    /// Whether a printable key is text for the filter rather than a
    /// binding: once a filter is started or typed.
    pub fn typing(&self) -> bool {
        self.filtering || !self.filter.is_empty()
    }

    /// A file changed: mark it and re-read its folder.
    pub fn mark(&mut self, path: &str, kind: ChangeKind) {
        let kind = match self.marks.get(path) {
            Some(ChangeKind::Created) if kind == ChangeKind::Modified => ChangeKind::Created,
            _ => kind,
        };
        self.marks.insert(path.to_string(), kind);
        if let Some(all) = &mut self.all_files
            && !all.iter().any(|p| p == path)
        {
            all.push(path.to_string());
        }
        // Folders on the way are read again (the file, or a folder on the
        // way, may be new) and opened so the change is in sight.
        let dirs: Vec<&str> = path.split('/').collect();
        let mut acc = String::new();
        self.load("");
        for part in &dirs[..dirs.len().saturating_sub(1)] {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            let dir = acc.clone();
            self.load(&dir);
            self.expanded.insert(dir);
        }
    }

    /// Takes its part of an agent event: what the session touched and
    /// what the language servers report.
    pub fn on_event(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::FileChanged { change, .. } => self.mark(&change.path, change.kind),
            AgentEvent::Diagnostics {
                path,
                errors,
                warnings,
                items,
            } => {
                if items.is_empty() {
                    self.diags.remove(path);
                } else {
                    self.diags.insert(path.clone(), (*errors, *warnings));
                }
            }
            _ => {}
        }
    }

    /// Errors and warnings over the workspace.
    pub fn diag_totals(&self) -> (u32, u32) {
        self.diags
            .values()
            .fold((0, 0), |(e, w), (de, dw)| (e + de, w + dw))
    }

    /// A key when the tree has the focus: an action, or a character that
    /// filters.
    pub fn handle_key(&mut self, action: Option<TreeAction>, typed: Option<char>) -> Handled {
        match action {
            Some(TreeAction::Up) => self.move_by(-1),
            Some(TreeAction::Down) => self.move_by(1),
            Some(TreeAction::Open) => {
                if let Some(line) = self.command_typed() {
                    self.clear_filter();
                    return Handled::Command(line);
                }
                if let Some(path) = self.open() {
                    return Handled::Open {
                        path,
                        line: 1,
                        col: 1,
                    };
                }
            }
            Some(TreeAction::Expand) => self.set_expanded(true),
            Some(TreeAction::Collapse) => self.set_expanded(false),
            Some(TreeAction::StartFilter) => self.filtering = true,
            Some(TreeAction::ClearFilter) => self.clear_filter(),
            Some(TreeAction::DeleteFilter) => self.backspace(),
            None => match typed {
                // `/` with no filter typed starts a command in the composer
                // (unless a keymap binds it to start the filter).
                Some('/') if !self.typing() => return Handled::Ignored,
                Some(c) => self.type_char(c),
                None => return Handled::Ignored,
            },
        }
        Handled::Consumed
    }

    /// Reads these folders again, those the tree has read (something
    /// outside mm changed them); true when one was.
    pub fn reload(&mut self, dirs: &BTreeSet<String>) -> bool {
        let mut any = false;
        for d in dirs {
            if !self.children.contains_key(d) {
                continue;
            }
            any = true;
            if d.is_empty() || self.root.join(d).is_dir() {
                self.load(d);
            } else {
                self.children.remove(d);
                self.expanded.remove(d);
            }
        }
        if any {
            self.all_files = None;
            let n = self.rows().len();
            if self.selected >= n {
                self.selected = n.saturating_sub(1);
            }
        }
        any
    }

    /// Reads every folder read so far again (a rewind changed the tree).
    pub fn refresh(&mut self) {
        let dirs: Vec<String> = self.children.keys().cloned().collect();
        for d in dirs {
            if d.is_empty() || self.root.join(&d).is_dir() {
                self.load(&d);
            } else {
                self.children.remove(&d);
                self.expanded.remove(&d);
            }
        }
        self.all_files = None;
    }

    /// Errors and warnings of a file, or summed over a folder.
    pub fn diag_counts(&self, path: &str, dir: bool) -> (u32, u32) {
        if !dir {
            return self.diags.get(path).copied().unwrap_or_default();
        }
        let prefix = format!("{path}/");
        self.diags
            .iter()
            .filter(|(p, _)| p.starts_with(&prefix))
            .fold((0, 0), |(e, w), (_, (de, dw))| (e + de, w + dw))
    }

    fn changed_under(&self, dir: &str) -> usize {
        let prefix = format!("{dir}/");
        self.marks.keys().filter(|p| p.starts_with(&prefix)).count()
    }

    /// `hint`: how a filter starts in the keymap in use.
    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme, (focused, hint): (bool, &str)) {
        let rows = self.rows();
        let height = area.height.saturating_sub(1) as usize;
        let selected = self.selected.min(rows.len().saturating_sub(1));
        let mut scroll = self.scroll.get();
        if selected < scroll {
            scroll = selected;
        } else if height > 0 && selected >= scroll + height {
            scroll = selected + 1 - height;
        }
        self.scroll.set(scroll);
        let mut lines = Vec::new();
        let head = if !self.typing() {
            match self.marks.len() {
                0 => hint.to_string(),
                n => format!("{n} changed · {hint}"),
            }
        } else {
            format!("filter: {}▏", self.filter)
        };
        lines.push(Line::styled(head, Style::new().fg(th.dim)));
        // No file, rows are free: the command it was likely meant as.
        if let Some(line) = self.command_typed() {
            lines.push(Line::styled("no file; Enter runs", Style::new().fg(th.dim)));
            lines.push(Line::styled(line, Style::new().fg(th.accent)));
        }
        for (i, r) in rows.iter().enumerate().skip(scroll).take(height) {
            let mark = self.marks.get(&r.path);
            let (tag, colour) = match mark {
                Some(ChangeKind::Created) => ("A", th.added),
                Some(ChangeKind::Modified) => ("M", th.warning),
                Some(ChangeKind::Deleted) => ("D", th.removed),
                None => (" ", th.text),
            };
            let icon = if r.dir {
                if self.expanded.contains(&r.path) {
                    "▾ "
                } else {
                    "▸ "
                }
            } else {
                "  "
            };
            let mut st = Style::new().fg(if r.dir { th.accent } else { colour });
            if i == selected && focused {
                st = st.bg(th.selection).add_modifier(Modifier::BOLD);
            }
            let mut spans = vec![
                Span::styled(tag, Style::new().fg(colour).add_modifier(Modifier::BOLD)),
                Span::raw(" ".repeat(r.depth * 2 + 1)),
                Span::styled(format!("{icon}{}", r.name), st),
            ];
            if r.dir {
                let n = self.changed_under(&r.path);
                if n > 0 {
                    spans.push(Span::styled(format!(" {n}"), Style::new().fg(th.warning)));
                }
            }
            let (errors, warnings) = self.diag_counts(&r.path, r.dir);
            if errors > 0 {
                spans.push(Span::styled(
                    format!(" ✗{errors}"),
                    Style::new().fg(th.removed).add_modifier(Modifier::BOLD),
                ));
            }
            if warnings > 0 {
                spans.push(Span::styled(
                    format!(" ⚠{warnings}"),
                    Style::new().fg(th.warning),
                ));
            }
            lines.push(Line::from(spans));
        }
        Paragraph::new(lines).render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, FileTree) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/deep/x.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join("ignored.log"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        let t = FileTree::new(dir.path().to_path_buf());
        (dir, t)
    }

    fn names(t: &FileTree) -> Vec<String> {
        t.rows()
            .iter()
            .map(|r| format!("{}{}", "  ".repeat(r.depth), r.name))
            .collect()
    }

    #[test]
    fn folders_first_ignored_files_hidden_and_lazy() {
        let (_d, mut t) = tree();
        assert_eq!(names(&t), vec!["src", ".gitignore", "README.md"]);
        t.selected = 0;
        assert_eq!(t.open(), None);
        assert_eq!(
            names(&t),
            vec!["src", "  deep", "  main.rs", ".gitignore", "README.md"]
        );
        t.selected = 2;
        assert_eq!(t.open(), Some("src/main.rs".to_string()));
    }

    #[test]
    fn changes_are_marked_and_their_folders_opened() {
        let (d, mut t) = tree();
        std::fs::write(d.path().join("src/deep/new.rs"), "").unwrap();
        t.mark("src/deep/new.rs", ChangeKind::Created);
        t.mark("src/deep/new.rs", ChangeKind::Modified);
        assert_eq!(t.marks["src/deep/new.rs"], ChangeKind::Created);
        assert!(names(&t).contains(&"    new.rs".to_string()));
        assert_eq!(t.changed_under("src"), 1);
    }

    #[test]
    fn a_file_in_new_folders_shows_up_and_a_rewind_takes_it_away() {
        let (d, mut t) = tree();
        std::fs::create_dir_all(d.path().join("lib/inner")).unwrap();
        std::fs::write(d.path().join("lib/inner/c.txt"), "").unwrap();
        t.mark("lib/inner/c.txt", ChangeKind::Created);
        let shown = names(&t);
        assert!(shown.contains(&"lib".to_string()), "{shown:?}");
        assert!(shown.contains(&"    c.txt".to_string()), "{shown:?}");
        std::fs::remove_dir_all(d.path().join("lib")).unwrap();
        t.refresh();
        assert_eq!(names(&t), vec!["src", ".gitignore", "README.md"]);
    }

    #[test]
    fn typing_filters_by_name() {
        let (d, mut t) = tree();
        t.type_char('x');
        assert!(t.needs_index(), "filtering waits for the walk");
        t.set_index(index(d.path()));
        assert!(!t.needs_index());
        for c in ".r".chars() {
            t.type_char(c);
        }
        assert_eq!(names(&t), vec!["src/deep/x.rs"]);
        t.clear_filter();
        assert_eq!(names(&t).len(), 3);
    }

    #[test]
    fn names_sort_in_counting_order() {
        let mut v = vec!["f_100", "f_10", "F_2", "f_1", "a", "f_02x", "b10", "b9"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            vec!["a", "b9", "b10", "f_1", "F_2", "f_02x", "f_10", "f_100"]
        );
    }

    #[test]
    fn a_folder_that_ignores_itself_is_not_listed() {
        let (d, _) = tree();
        std::fs::create_dir(d.path().join(".pytest_cache")).unwrap();
        std::fs::write(
            d.path().join(".pytest_cache/.gitignore"),
            "# by pytest\n*\n",
        )
        .unwrap();
        std::fs::write(d.path().join(".pytest_cache/README.md"), "x").unwrap();
        let t = FileTree::new(d.path().to_path_buf());
        let shown = names(&t);
        assert!(!shown.iter().any(|n| n.contains("pytest")), "{shown:?}");
        assert!(shown.contains(&"src".to_string()), "{shown:?}");
    }
}
