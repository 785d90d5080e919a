//! The tools' schemas as the model sees them, and the check of a call's
//! arguments against its schema.

use super::*;

pub(crate) fn string(desc: &str) -> Value {
    json!({"type": "string", "description": desc})
}

pub(crate) fn integer(desc: &str) -> Value {
    json!({"type": "integer", "description": desc})
}

pub(crate) fn object(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

/// The tool schemas offered to the model.
pub fn specs(set: ToolSet) -> Vec<ToolSpec> {
    let mut v = Vec::new();
    if set.edit {
        v.extend([
        ToolSpec {
            name: ToolName::ReadFile.as_str().into(),
            description: "Read a text file; returns numbered lines. A file must be read before you edit or overwrite it.".into(),
            parameters: object(
                json!({
                    "path": string("Path relative to the workspace"),
                    "offset": integer("First line, 1-based"),
                    "limit": integer("Number of lines (default 500)"),
                }),
                &["path"],
            ),
        },
        ToolSpec {
            name: ToolName::ListDir.as_str().into(),
            description: "List a folder (default: the workspace root). Folders end with /.".into(),
            parameters: object(json!({"path": string("Folder path")}), &[]),
        },
        ToolSpec {
            name: ToolName::Glob.as_str().into(),
            description: "Find files whose path matches a glob pattern. A pattern without / matches file names at any depth.".into(),
            parameters: object(
                json!({"pattern": string("Glob pattern"), "path": string("Folder to search in")}),
                &["pattern"],
            ),
        },
        ToolSpec {
            name: ToolName::Grep.as_str().into(),
            description: "Search file contents with a regular expression; returns path:line: text.".into(),
            parameters: object(
                json!({
                    "pattern": string("Regular expression"),
                    "path": string("File or folder (default: the workspace)"),
                    "glob": string("Only files matching this glob"),
                }),
                &["pattern"],
            ),
        },
        ]);
    }
    if set.edit && set.write {
        v.push(ToolSpec {
            name: ToolName::WriteFile.as_str().into(),
            description: "Create a file, or replace the whole content of a file you have read. Creates parent folders.".into(),
            parameters: object(
                json!({"path": string("Path relative to the workspace"), "content": string("The complete file content")}),
                &["path", "content"],
            ),
        });
        v.push(ToolSpec {
            name: ToolName::EditFile.as_str().into(),
            description: "Replace one block of text in a file you have read. old_string must occur exactly once (copy it from the file, with enough lines to be unique), unless replace_all is true.".into(),
            parameters: object(
                json!({
                    "path": string("Path relative to the workspace"),
                    "old_string": string("Exact text to replace"),
                    "replacement": string("The new text that takes its place"),
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence"},
                }),
                &["path", "old_string", "replacement"],
            ),
        });
    }
    if set.edit && set.lsp {
        v.extend(nav::specs());
    }
    if set.bash {
        v.push(ToolSpec {
            name: ToolName::Bash.as_str().into(),
            description: "Run a shell command in the workspace with sh -c; stdin is closed and long output is cut. Read-only commands run at once; others may need the user's approval.".into(),
            parameters: object(
                json!({"command": string("The command line"), "timeout": integer("Seconds before it is killed (at most the user's limit)")}),
                &["command"],
            ),
        });
    }
    v
}

/// Checks a call's arguments against its schema: a JSON object, every
/// required argument present (a missing argument is never taken as empty),
/// the declared types. Numbers sent as strings are accepted for integers.
pub fn validate(spec: &ToolSpec, arguments: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("the arguments are not valid JSON ({e})"))?;
    let Value::Object(mut args) = value else {
        return Err("the arguments must be a JSON object".into());
    };
    for name in spec.required() {
        match args.get(name) {
            None | Some(Value::Null) => {
                return Err(format!("missing required argument `{name}`"));
            }
            Some(_) => {}
        }
    }
    let props = spec
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (name, schema) in &props {
        let Some(v) = args.get(name).cloned() else {
            continue;
        };
        if v.is_null() {
            args.remove(name);
            continue;
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") if !v.is_string() => {
                return Err(format!("argument `{name}` must be a string"));
            }
            Some("integer") => {
                let n = match &v {
                    Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
                    Value::String(s) => s.trim().parse::<u64>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) => {
                        args.insert(name.clone(), json!(n));
                    }
                    None => return Err(format!("argument `{name}` must be a whole number")),
                }
            }
            _ => {}
        }
    }
    for key in args.keys() {
        if !props.contains_key(key) {
            return Err(format!(
                "unknown argument `{key}`; this tool takes: {}",
                props.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(args)
}
