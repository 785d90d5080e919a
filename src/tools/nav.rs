//! The language-server tools: where a symbol is defined, where it is
//! used, what it is, and which symbols match a name — short text with
//! paths and line numbers, a neighbourhood of the code instead of a map of
//! the whole repository a small model's window cannot hold.

use crate::toolname::ToolName;
use serde_json::{Map, Value, json};

use super::{ToolEnv, ToolOutput, arg_str, arg_u64, integer, object, string};
use crate::llm::ToolSpec;
use crate::lsp::text;
use crate::protocol::NavKind;

/// Results listed at most.
const MAX_LOCATIONS: usize = 30;
const MAX_SYMBOLS: usize = 40;
const MAX_HOVER: usize = 1500;

fn place() -> Value {
    json!({
        "path": string("File"),
        "symbol": string("Name as written in the file"),
        "line": integer("1-based line"),
        "col": integer("1-based column"),
    })
}

pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: ToolName::LspDefinition.as_str().into(),
            description: "Find where a symbol is defined (language server). Give path and symbol, or path, line and col.".into(),
            parameters: object(place(), &["path"]),
        },
        ToolSpec {
            name: ToolName::LspReferences.as_str().into(),
            description: "Find every use of a symbol (language server). Arguments as lsp_definition.".into(),
            parameters: object(place(), &["path"]),
        },
        ToolSpec {
            name: ToolName::LspHover.as_str().into(),
            description: "Type and docs of a symbol (language server). Arguments as lsp_definition.".into(),
            parameters: object(place(), &["path"]),
        },
        ToolSpec {
            name: ToolName::LspWorkspaceSymbols.as_str().into(),
            description: "Find symbols by name in the workspace (language server).".into(),
            parameters: object(
                json!({"query": string("Name or part of it"), "path": string("A file of that language")}),
                &["query"],
            ),
        },
    ]
}

pub async fn run(env: &ToolEnv, name: &str, args: &Map<String, Value>) -> ToolOutput {
    let Some(lsp) = env.lsp.clone() else {
        return ToolOutput::error("no language server is available in this session");
    };
    let resolve = |key: &str| -> Result<Option<crate::paths::Resolved>, String> {
        match arg_str(args, key) {
            Some(p) => env.sandbox.check_read(p).map(Some).map_err(String::from),
            None => Ok(None),
        }
    };
    if name == ToolName::LspWorkspaceSymbols {
        let query = arg_str(args, crate::toolname::arg::QUERY).unwrap_or_default();
        let hint = match resolve("path") {
            Ok(r) => r.map(|r| r.abs),
            Err(e) => return ToolOutput::refused(e),
        };
        return match lsp.workspace_symbols(query, hint.as_deref()).await {
            Ok(found) if found.is_empty() => ToolOutput::ok(format!("no symbol matches {query:?}")),
            Ok(found) => {
                let mut out = String::new();
                for (name, kind, loc) in found.iter().take(MAX_SYMBOLS) {
                    if let Some((p, l, c, _)) = text::location_line(lsp.root(), loc) {
                        out.push_str(&format!("{name} ({}) {p}:{l}:{c}\n", kind_name(*kind)));
                    }
                }
                if found.len() > MAX_SYMBOLS {
                    out.push_str(&format!("… and {} more\n", found.len() - MAX_SYMBOLS));
                }
                ToolOutput::ok(out)
            }
            Err(e) => ToolOutput::error(e),
        };
    }
    let r = match resolve("path") {
        Ok(Some(r)) => r,
        Ok(None) => return ToolOutput::error("missing required argument `path`"),
        Err(e) => return ToolOutput::refused(e),
    };
    let symbol = arg_str(args, "symbol").filter(|s| !s.trim().is_empty());
    let line = arg_u64(args, "line").map(|n| n as usize);
    let col = arg_u64(args, "col").map(|n| n as usize);
    let what = match symbol {
        Some(s) => format!("`{s}`"),
        None => format!("{}:{}:{}", r.rel, line.unwrap_or(0), col.unwrap_or(0)),
    };
    match ToolName::parse(name) {
        Some(ToolName::LspHover) => match lsp.hover(&r.abs, symbol, line, col).await {
            Ok(t) if t.trim().is_empty() => {
                ToolOutput::ok(format!("the server knows nothing about {what}"))
            }
            Ok(t) => {
                let cut = t.trim().chars().count() > MAX_HOVER;
                let mut t: String = t.trim().chars().take(MAX_HOVER).collect();
                if cut {
                    t.push('…');
                }
                ToolOutput::ok(t)
            }
            Err(e) => ToolOutput::error(e),
        },
        _ => {
            let defs = name == ToolName::LspDefinition;
            let kind = if defs {
                NavKind::Definition
            } else {
                NavKind::References
            };
            match lsp.locations(kind, &r.abs, symbol, line, col).await {
                Ok(locs) if locs.is_empty() => ToolOutput::ok(format!(
                    "no {} found for {what}",
                    if defs { "definition" } else { "references" }
                )),
                Ok(locs) => ToolOutput::ok(text::locations(lsp.root(), &locs, MAX_LOCATIONS)),
                Err(e) => ToolOutput::error(e),
            }
        }
    }
}

fn kind_name(k: lsp_types::SymbolKind) -> &'static str {
    use lsp_types::SymbolKind as K;
    match k {
        K::FILE => "file",
        K::MODULE | K::NAMESPACE | K::PACKAGE => "module",
        K::CLASS | K::STRUCT => "class",
        K::METHOD => "method",
        K::PROPERTY | K::FIELD => "field",
        K::CONSTRUCTOR => "constructor",
        K::ENUM => "enum",
        K::INTERFACE => "interface",
        K::FUNCTION => "function",
        K::VARIABLE => "variable",
        K::CONSTANT => "constant",
        K::ENUM_MEMBER => "enum member",
        K::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    }
}
