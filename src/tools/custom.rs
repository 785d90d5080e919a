//! Command tools: `.mm/tools/NAME.json` manifests (the Go agent's
//! `.agent/tools/`) that make a program a tool with typed arguments. The
//! arguments reach the program as `--key value` flags after its argv and
//! as one JSON object on stdin. `readOnly` tools run without asking in a
//! read-only fence; the others ask like a shell command and run with the
//! workspace writable. A manifest that does not parse stops mm with the
//! file and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm::ToolSpec;

const DEFAULT_TIMEOUT: u64 = 60;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    pub name: String,
    pub description: String,
    /// The program and its first arguments.
    pub command: Vec<String>,
    #[serde(default)]
    pub parameters: BTreeMap<String, Param>,
    #[serde(default, alias = "read_only")]
    pub read_only: bool,
    #[serde(alias = "timeout_sec")]
    pub timeout_sec: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// string, integer, number or boolean.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub required: bool,
}

/// A manifest and the file it came from.
#[derive(Clone, Debug)]
pub struct CommandTool {
    pub manifest: Manifest,
    pub file: PathBuf,
}

fn check(m: &Manifest, taken: &[&str]) -> Result<(), String> {
    let ok_name = |n: &str| {
        !n.is_empty()
            && n.len() <= 64
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !ok_name(&m.name) {
        return Err(format!(
            "name: {:?} is not a tool name (letters, digits, _ and -)",
            m.name
        ));
    }
    if taken.contains(&m.name.as_str()) {
        return Err(format!("name: {} is taken by another tool", m.name));
    }
    if m.command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err("command: give the program and its arguments as a list".into());
    }
    if m.description.trim().is_empty() {
        return Err("description: say what the tool does".into());
    }
    for (key, p) in &m.parameters {
        if !ok_name(key) {
            return Err(format!("parameters.{key}: not a parameter name"));
        }
        if !matches!(p.kind.as_str(), "string" | "integer" | "number" | "boolean") {
            return Err(format!(
                "parameters.{key}.type: {:?} (string, integer, number or boolean)",
                p.kind
            ));
        }
    }
    Ok(())
}

/// The manifests in the workspace's `.mm/tools/` and `.agent/tools/`,
/// sorted by name in each. `taken`
/// holds the names already in use (the built-in tools).
pub fn load(root: &Path, taken: &[&str]) -> Result<Vec<CommandTool>, String> {
    let mut files: Vec<PathBuf> = Vec::new();
    // Ours, then the Go agent's `.agent/tools/` where ours has no file of
    // that name.
    for dir in [".mm", ".agent"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join("tools")) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .filter(|p| !files.iter().any(|f| f.file_name() == p.file_name()))
            .collect();
        found.sort();
        files.extend(found);
    }
    let mut tools: Vec<CommandTool> = Vec::new();
    for file in files {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        if !crate::paths::resolves_inside(&file, root) {
            return Err(format!(
                "{shown}: links outside the workspace; mm does not load it"
            ));
        }
        let text = crate::paths::read_small_text(&file).map_err(|e| format!("{shown}: {e}"))?;
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| format!("{shown}:{}:{}: {e}", e.line(), e.column()))?;
        let mut names: Vec<&str> = taken.to_vec();
        names.extend(tools.iter().map(|t| t.manifest.name.as_str()));
        check(&manifest, &names).map_err(|e| format!("{shown}: {e}"))?;
        tools.push(CommandTool { manifest, file });
    }
    Ok(tools)
}

impl CommandTool {
    pub fn spec(&self) -> ToolSpec {
        let m = &self.manifest;
        let mut props = Map::new();
        let mut required = Vec::new();
        for (key, p) in &m.parameters {
            let mut schema = json!({"type": p.kind});
            if !p.description.is_empty() {
                schema["description"] = json!(p.description);
            }
            props.insert(key.clone(), schema);
            if p.required {
                required.push(key.clone());
            }
        }
        ToolSpec {
            name: m.name.clone().into(),
            description: m.description.clone().into(),
            parameters: json!({"type": "object", "properties": props, "required": required}),
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.manifest.timeout_sec.unwrap_or(DEFAULT_TIMEOUT).max(1))
    }

    /// The argv for `args`: the manifest's command, then `--key value`
    /// for each argument given (booleans: `--key` when true). Err names a
    /// missing required argument or one of the wrong type.
    pub fn argv(&self, args: &Map<String, Value>) -> Result<Vec<String>, String> {
        let m = &self.manifest;
        let mut argv = m.command.clone();
        for (key, p) in &m.parameters {
            let Some(v) = args.get(key).filter(|v| !v.is_null()) else {
                if p.required {
                    return Err(format!("{} needs the argument {key}", m.name));
                }
                continue;
            };
            let text = match (p.kind.as_str(), v) {
                ("string", Value::String(s)) => s.clone(),
                ("integer", Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                ("number", Value::Number(n)) => n.to_string(),
                ("boolean", Value::Bool(b)) => {
                    if *b {
                        argv.push(format!("--{key}"));
                    }
                    continue;
                }
                // A number sent as text, as small models do.
                ("integer" | "number", Value::String(s)) if s.trim().parse::<f64>().is_ok() => {
                    s.trim().to_string()
                }
                _ => return Err(format!("{key} must be a {}", p.kind)),
            };
            argv.push(format!("--{key}"));
            argv.push(text);
        }
        Ok(argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(json: &str) -> CommandTool {
        CommandTool {
            manifest: serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}")),
            file: PathBuf::new(),
        }
    }

    #[test]
    fn arguments_become_flags_in_order_and_types_are_checked() {
        let t = tool(
            r#"{"name": "deploy_status", "description": "Status.", "command": ["./status.sh", "-v"],
                "parameters": {"service": {"type": "string", "required": true},
                               "count": {"type": "integer"}, "all": {"type": "boolean"}},
                "readOnly": true, "timeoutSec": 5}"#,
        );
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            t.argv(&args(json!({"service": "web", "count": "3", "all": true}))),
            Ok(vec![
                "./status.sh",
                "-v",
                "--all",
                "--count",
                "3",
                "--service",
                "web"
            ]
            .into_iter()
            .map(String::from)
            .collect())
        );
        assert!(
            t.argv(&args(json!({})))
                .unwrap_err()
                .contains("needs the argument service")
        );
        assert!(
            t.argv(&args(json!({"service": 1})))
                .unwrap_err()
                .contains("must be a string")
        );
        assert_eq!(t.timeout(), Duration::from_secs(5));
        let spec = t.spec();
        assert_eq!(spec.parameters["required"], json!(["service"]));
    }

    #[test]
    fn a_bad_manifest_names_its_file_and_field() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let tools = dir.path().join(".mm/tools");
        std::fs::create_dir_all(&tools).ok();
        std::fs::write(
            tools.join("a.json"),
            r#"{"name": "a", "description": "x", "command": ["true"], "readonly": true}"#,
        )
        .ok();
        let err = load(dir.path(), &[]).unwrap_err();
        assert!(
            err.contains(".mm/tools/a.json:1:") && err.contains("readonly"),
            "{err}"
        );
        std::fs::write(
            tools.join("a.json"),
            r#"{"name": "bash", "description": "x", "command": ["true"]}"#,
        )
        .ok();
        let err = load(dir.path(), &["bash"]).unwrap_err();
        assert!(err.contains("name: bash is taken"), "{err}");
        std::fs::write(
            tools.join("a.json"),
            r#"{"name": "a", "description": "x", "command": ["true"], "parameters": {"n": {"type": "list"}}}"#,
        )
        .ok();
        let err = load(dir.path(), &[]).unwrap_err();
        assert!(err.contains("parameters.n.type"), "{err}");
    }

    #[test]
    fn the_go_agents_manifests_load_after_ours() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ours = dir.path().join(".mm/tools");
        let go = dir.path().join(".agent/tools");
        std::fs::create_dir_all(&ours).ok();
        std::fs::create_dir_all(&go).ok();
        std::fs::write(
            ours.join("status.json"),
            r#"{"name": "status", "description": "ours", "command": ["true"]}"#,
        )
        .ok();
        std::fs::write(
            go.join("status.json"),
            r#"{"name": "status", "description": "theirs", "command": ["true"]}"#,
        )
        .ok();
        std::fs::write(
            go.join("deploy_status.json"),
            r#"{"name": "deploy_status", "description": "Check a deploy.", "command": ["sh", "x.sh"],
               "parameters": {"service": {"type": "string", "required": true}}, "read_only": true, "timeout_sec": 60}"#,
        )
        .ok();
        let tools = load(dir.path(), &[]).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<(&str, &str)> = tools
            .iter()
            .map(|t| (t.manifest.name.as_str(), t.manifest.description.as_str()))
            .collect();
        assert_eq!(
            names,
            [("status", "ours"), ("deploy_status", "Check a deploy.")]
        );
        assert!(tools[1].manifest.read_only);
    }
}
