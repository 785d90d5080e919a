//! Places the app opens: a definition or the references a language
//! server found, a file read off the UI task, the places a job found.

use super::*;

impl App {
    /// Definitions or references came: one definition opens, several
    /// become a list.
    pub(in crate::tui) fn locations(
        &mut self,
        kind: NavKind,
        query: &str,
        items: Vec<crate::protocol::LocItem>,
        error: Option<String>,
    ) {
        self.status.flash = None;
        let name = match kind {
            NavKind::Definition => "definition",
            NavKind::References => "references",
        };
        if let Some(e) = error {
            self.flash(format!("{name}: {e}"));
        } else if items.is_empty() {
            self.flash(format!("no {name} found for {query}"));
        } else if kind == NavKind::Definition && items.len() == 1 {
            let it = &items[0];
            let (path, line, col) = (it.path.clone(), it.line, it.col);
            self.open_place(&path, line, col);
        } else {
            let places = items
                .into_iter()
                .map(|i| Place {
                    path: i.path,
                    line: i.line,
                    col: i.col,
                    text: i.text,
                    level: None,
                })
                .collect();
            self.overlays.push(Overlay::Places(PlaceList::new(
                format!("{name} of {query}"),
                places,
            )));
        }
    }

    /// A background job finished.
    pub fn on_job(&mut self, done: JobDone) {
        self.dirty = true;
        match done {
            JobDone::Changed { dirs } => {
                // Read again a moment later: a burst (a checkout, a build)
                // is read once.
                self.tree_stale.extend(dirs);
                self.tree_stale_at.get_or_insert_with(Instant::now);
            }
            JobDone::File { path, text } => {
                for o in &mut self.overlays {
                    if let Overlay::Viewer(v) = o
                        && v.path == path
                        && v.loading
                    {
                        v.set_text(text.clone());
                    }
                }
            }
            JobDone::Current {
                call_id,
                path,
                text,
            } => self.diff.current_text(&call_id, &path, text),
            JobDone::Sessions { list } => {
                let current = self.status.info.session.clone();
                let items = list
                    .into_iter()
                    .map(|s| Place {
                        text: format!(
                            "{:>4} messages  {}{}",
                            s.messages,
                            s.label().chars().take(80).collect::<String>(),
                            if s.id == current { "  (this one)" } else { "" }
                        ),
                        path: s.id,
                        line: 0,
                        col: 0,
                        level: None,
                    })
                    .collect();
                let mut picker = PlaceList::new("sessions".into(), items);
                picker.kind = ListKind::Sessions;
                self.overlays.push(Overlay::Places(picker));
            }
            JobDone::Index { files, generation } => {
                if self.jobs.is_current(generation) {
                    self.tree.set_index(files.clone());
                    self.composer.set_files(files);
                }
            }
        }
    }

    /// Opens a file in the viewer at a 1-based place, over what is open
    /// ("back" returns to it). The file is read off the UI task.
    pub(in crate::tui) fn open_place(&mut self, path: &str, line: u32, col: u32) {
        self.ops.send(Op::OpenFile {
            path: path.to_string(),
        });
        let mut v = Viewer::loading(path, line as usize, col as usize);
        v.diags = self.diags.get(path).cloned().unwrap_or_default();
        self.jobs.read_file(path);
        self.overlays.push(Overlay::Viewer(v));
    }
}
