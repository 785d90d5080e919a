//! The language servers mm knows (`rust-analyzer`, `pyright`, …) and the
//! `lsp:` config key that changes them or adds others. What runs them
//! lives in `lsp/`; this is only what the config says.

use std::collections::BTreeMap;

/// One language server as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// LSP language ids (`python`, `rust`, `c`, `cpp`, `go`, `typescript`…).
    pub languages: Vec<String>,
    pub initialization_options: Option<serde_json::Value>,
    pub enabled: bool,
}

/// A server entry of the `lsp:` config key; every field optional so a
/// layer can change one thing of a built-in server.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerFile {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub languages: Option<Vec<String>>,
    pub initialization_options: Option<serde_json::Value>,
    pub enabled: Option<bool>,
}

pub(crate) fn spec(name: &str, command: &str, args: &[&str], languages: &[&str]) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        command: command.into(),
        args: args.iter().map(std::string::ToString::to_string).collect(),
        languages: languages
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        initialization_options: None,
        enabled: true,
    }
}

/// The built-in servers, in order of preference per language.
pub fn defaults() -> Vec<ServerSpec> {
    vec![
        spec("rust-analyzer", "rust-analyzer", &[], &["rust"]),
        spec("pyright", "pyright-langserver", &["--stdio"], &["python"]),
        spec("pylsp", "pylsp", &[], &["python"]),
        spec("clangd", "clangd", &[], &["c", "cpp"]),
        spec("gopls", "gopls", &[], &["go"]),
        spec(
            "typescript-language-server",
            "typescript-language-server",
            &["--stdio"],
            &[
                "typescript",
                "typescriptreact",
                "javascript",
                "javascriptreact",
            ],
        ),
    ]
}

/// The built-in servers with the config's changes laid over them; a new
/// name adds a server (it needs a command and languages).
pub fn resolve(config: &BTreeMap<String, ServerFile>) -> Result<Vec<ServerSpec>, String> {
    let mut specs = defaults();
    for (name, f) in config {
        let i = match specs.iter().position(|s| &s.name == name) {
            Some(i) => i,
            None => {
                let (Some(command), Some(languages)) = (&f.command, &f.languages) else {
                    return Err(format!(
                        "lsp server {name:?} is not built in: it needs `command` and `languages`"
                    ));
                };
                specs.push(ServerSpec {
                    name: name.clone(),
                    command: command.clone(),
                    args: vec![],
                    languages: languages.clone(),
                    initialization_options: None,
                    enabled: true,
                });
                specs.len() - 1
            }
        };
        let s = &mut specs[i];
        if let Some(c) = &f.command {
            s.command = c.clone();
        }
        if let Some(a) = &f.args {
            s.args = a.clone();
        }
        if let Some(l) = &f.languages {
            s.languages = l.clone();
        }
        if f.initialization_options.is_some() {
            s.initialization_options = f.initialization_options.clone();
        }
        if let Some(e) = f.enabled {
            s.enabled = e;
        }
    }
    Ok(specs)
}
