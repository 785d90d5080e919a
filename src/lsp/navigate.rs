//! Navigation through the language server: a place in a file as the server
//! counts it, definitions and references, hover, workspace symbols, and the
//! items the front ends list.

use super::*;

impl Lsp {
    /// The position the model means: `line`:`col` (1-based) when both are
    /// given, else `symbol` (on `line` if given).
    pub(super) async fn position(
        &self,
        path: &Path,
        symbol: Option<&str>,
        line: Option<usize>,
        col: Option<usize>,
    ) -> Result<(Arc<Client>, TextDocumentPositionParams), String> {
        let content = crate::paths::read_checked_text(path)
            .map_err(|e| format!("cannot read {}: {e}", text::rel(&self.root, path)))?;
        let pos = match (symbol, line, col) {
            (_, Some(l), Some(c)) => text::position(&content, l, c)
                .ok_or_else(|| format!("line {l} is past the end of the file"))?,
            (Some(s), l, _) => text::find_symbol(&content, s, l).ok_or_else(|| match l {
                Some(l) => format!("`{s}` is not on line {l}"),
                None if !s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') => format!(
                    "`{s}` is not a name in the code: give `symbol` as one identifier that occurs in the file (a function, class or variable name), not an error message or a sentence. To fix an error, change the code with edit_file"
                ),
                None => format!("`{s}` does not occur in the file"),
            })?,
            _ => return Err("give `symbol`, or `line` and `col`".into()),
        };
        // Not while a preview holds proposed text; and the server gets the
        // text on disk if what it has differs (a shell command changed it).
        let _one = self.checking.lock().await;
        let (client, lang, _) = self.server_for(path).await.map_err(|e| e.to_string())?;
        client
            .ensure(path, lang, &content)
            .await
            .map_err(|e| e.to_string())?;
        let uri = client::uri(path).ok_or("not an absolute path")?;
        Ok((
            client,
            TextDocumentPositionParams {
                text_document: TextDocumentIdentifier { uri },
                position: pos,
            },
        ))
    }

    /// Where the symbol at the place is defined, or every use of it.
    pub async fn locations(
        &self,
        kind: NavKind,
        path: &Path,
        symbol: Option<&str>,
        line: Option<usize>,
        col: Option<usize>,
    ) -> Result<Vec<Location>, String> {
        let (client, pos) = self.position(path, symbol, line, col).await?;
        match kind {
            NavKind::Definition => client.definition(pos, REQUEST_TIMEOUT).await,
            NavKind::References => client.references(pos, REQUEST_TIMEOUT).await,
        }
        .map_err(|e| e.to_string())
    }

    pub async fn hover(
        &self,
        path: &Path,
        symbol: Option<&str>,
        line: Option<usize>,
        col: Option<usize>,
    ) -> Result<String, String> {
        let (client, pos) = self.position(path, symbol, line, col).await?;
        let h = client
            .hover(pos, REQUEST_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        Ok(h.map(|h| hover_text(&h.contents)).unwrap_or_default())
    }

    /// Symbols matching `query` from every running server (starting the
    /// one for `hint`'s language when none runs yet).
    pub async fn workspace_symbols(
        &self,
        query: &str,
        hint: Option<&Path>,
    ) -> Result<Vec<(String, lsp_types::SymbolKind, Location)>, String> {
        if let Some(h) = hint {
            let _ = self.server_for(h).await;
        }
        let clients: Vec<Arc<Client>> = {
            let st = self.state.lock().await;
            st.slots
                .values()
                .filter_map(|s| match s {
                    Slot::Running { client, .. } if client.alive() => Some(client.clone()),
                    _ => None,
                })
                .collect()
        };
        if clients.is_empty() {
            return Err(
                "no language server is running yet: name a file with `path` to start one".into(),
            );
        }
        let mut all = Vec::new();
        let mut errors = Vec::new();
        for c in clients {
            match c.workspace_symbols(query, REQUEST_TIMEOUT).await {
                Ok(v) => all.extend(v),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if all.is_empty() && !errors.is_empty() {
            return Err(errors.join("; "));
        }
        Ok(all)
    }

    /// Locations as front-end items.
    pub fn loc_items(&self, locs: &[Location]) -> Vec<LocItem> {
        locs.iter()
            .filter_map(|l| text::location_line(&self.root, l))
            .map(|(path, line, col, text)| LocItem {
                path,
                line,
                col,
                text,
            })
            .collect()
    }
}

pub(super) fn hover_text(c: &lsp_types::HoverContents) -> String {
    use lsp_types::{HoverContents, MarkedString};
    let one = |m: &MarkedString| match m {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => l.value.clone(),
    };
    match c {
        HoverContents::Scalar(m) => one(m),
        HoverContents::Array(v) => v.iter().map(one).collect::<Vec<_>>().join("\n"),
        HoverContents::Markup(m) => m.value.clone(),
    }
}
