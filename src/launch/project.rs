//! The project's own configuration (`.mm/config.yaml`): trusted once per
//! content, asked about at start, and `-show-config`.

use super::*;

pub(super) const TRUSTED: &str = "trusted-configs.tsv";

/// The file where trusted project configs and command tools are written
/// down (`path<TAB>blob`).
pub(super) fn trusted_registry() -> Option<PathBuf> {
    config::data_dir().map(|d| d.join(TRUSTED))
}

/// Whether the user trusted the file whose `path<TAB>blob` line this is.
pub(super) fn is_trusted(line: &str) -> bool {
    trusted_registry()
        .and_then(|r| std::fs::read_to_string(r).ok())
        .is_some_and(|t| t.lines().any(|l| l == line))
}

pub(super) fn remember_trusted(line: &str) {
    if let Err(e) = config::append_data_line(TRUSTED, line) {
        eprintln!("mm: could not remember the trust: {e}");
    }
}

/// The workspace's `.mm/config.yaml`, if any: read only when it is a
/// regular file inside the workspace, and trusted when the user said so
/// for its contents as they are (`-trust`, or a yes when mm asks; a
/// change to the file asks again). Untrusted, its keys that run code or
/// send the work elsewhere are left out, and that is said.
pub(super) fn project_config(
    root: &std::path::Path,
    cli: &Cli,
) -> Result<Option<config::ProjectConfig>, String> {
    // The nearest one from the working folder up to the repository's root,
    // so a subfolder of the project keeps its config.
    let top = root
        .ancestors()
        .find(|p| p.join(".git").exists())
        .unwrap_or(root);
    let Some((up, dir)) = root
        .ancestors()
        .take_while(|d| d.starts_with(top))
        .enumerate()
        .find(|(_, d)| std::fs::symlink_metadata(d.join(".mm").join("config.yaml")).is_ok())
    else {
        return Ok(None);
    };
    let path = dir.join(".mm").join("config.yaml");
    let shown = format!("{}.mm/config.yaml", "../".repeat(up));
    let shown = shown.as_str();
    if !crate::paths::resolves_inside(&path, dir) {
        return Err(format!(
            "{shown}: links outside the workspace; mm does not read it"
        ));
    }
    let text = crate::paths::read_small_text(&path).map_err(|e| format!("{shown}: {e}"))?;
    let file = config::AgentFile::parse(&path, &text).map_err(|e| e.to_string())?;
    let keys = file.trusted_only_keys();
    let line = format!("{}\t{}", path.display(), trusted_digest(&file, &text, dir));
    let mut trusted = keys.is_empty() || is_trusted(&line);
    let interactive = cli.prompt.is_none()
        && !cli.acp
        && !cli.show_config
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    if !trusted && (cli.trust || interactive && ask_trust(shown, &keys)) {
        remember_trusted(&line);
        trusted = true;
        let agents = if file.mm_configs.is_some() {
            " or to the agent files its mmConfigs name"
        } else {
            ""
        };
        eprintln!(
            "mm: {shown} is trusted as it is now ({}); a change to it{agents} asks again",
            keys.join(", ")
        );
    } else if !trusted {
        eprintln!(
            "mm: {shown} sets {}: left out until you trust the file (mm -trust; they can run commands or send your code elsewhere)",
            crate::untrusted::displayable(&keys.join(", "))
        );
    }
    Ok(Some(config::ProjectConfig {
        path,
        file,
        trusted,
    }))
}

/// What trusting the project config is a trust of: its text, and the
/// text of each agent file its `mmConfigs` names, and of those theirs
/// name, all the way down (each a whole config of its own, with a server
/// and a key: trusting the config must not trust whatever those files say
/// later). A config without `mmConfigs` is its text's blob alone, as it
/// always was.
fn trusted_digest(file: &config::AgentFile, text: &str, dir: &std::path::Path) -> String {
    if file.mm_configs.is_none() {
        return crate::git::blob_id(text.as_bytes());
    }
    let mut all = text.as_bytes().to_vec();
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    agent_files_into(file, &dir.join(".mm"), &mut all, &mut seen);
    crate::git::blob_id(&all)
}

/// Appends the name and bytes of each agent file `file`'s `mmConfigs`
/// names (resolved against `base`, the folder `file` is in), then of the
/// files those name; each file once, however it is reached.
fn agent_files_into(
    file: &config::AgentFile,
    base: &std::path::Path,
    all: &mut Vec<u8>,
    seen: &mut Vec<std::path::PathBuf>,
) {
    const MAX_FILES: usize = 64;
    for (name, r) in file.mm_configs.iter().flatten() {
        all.extend_from_slice(format!("\0mmConfigs {name} {}\0", r.path).as_bytes());
        let named = base.join(&r.path);
        let key = std::fs::canonicalize(&named).unwrap_or_else(|_| named.clone());
        if seen.contains(&key) || seen.len() >= MAX_FILES {
            continue;
        }
        seen.push(key);
        let bytes = std::fs::read(&named).unwrap_or_default();
        all.extend_from_slice(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(inner) = config::AgentFile::parse(&named, &text)
            && let Some(parent) = named.parent()
        {
            agent_files_into(&inner, parent, all, seen);
        }
    }
}

/// Asks on the terminal whether to trust the project config.
pub(super) fn ask_trust(shown: &str, keys: &[&str]) -> bool {
    use std::io::Write;
    eprint!(
        "mm: this repository's {shown} sets {}: keys that can run commands, send your code to another server or widen what mm may do. Trust it? [y/N] ",
        keys.join(", ")
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes")
}

/// A config layer as `-show-config` shows it: the file's name, its text,
/// the keys left out of it.
type Layer = (String, String, Vec<&'static str>);

/// The config layers `-show-config` shows, lowest first: each file's
/// name, its text, and the keys left out of it (an untrusted project
/// config's trusted-only keys). Err: the exit code of a file that could
/// not be read, said.
fn config_layers(cli: &Cli, project: Option<&config::ProjectConfig>) -> Result<Vec<Layer>, i32> {
    let mut layers: Vec<Layer> = Vec::new();
    // The Go agent's config, its keys as it names them.
    if let Some(p) = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| std::path::PathBuf::from(h).join(".agent/config.json"))
        .filter(|p| p.is_file())
        && let Ok(t) = crate::paths::read_small_text(&p)
    {
        layers.push((p.display().to_string(), t, Vec::new()));
    }
    if let Some(p) = config::user_config_dir().map(|d| d.join("config.yaml"))
        && p.is_file()
    {
        match std::fs::read_to_string(&p) {
            Ok(t) => layers.push((p.display().to_string(), t, Vec::new())),
            Err(e) => {
                eprintln!("mm: {}: {e}", p.display());
                return Err(2);
            }
        }
    }
    if let Some(p) = project {
        let text = crate::paths::read_small_text(&p.path).unwrap_or_default();
        let left_out = if p.trusted {
            Vec::new()
        } else {
            p.file.trusted_only_keys()
        };
        layers.push((p.path.display().to_string(), text, left_out));
    }
    if let Some(a) = &cli.config {
        match std::fs::read_to_string(a) {
            Ok(t) => layers.push((a.display().to_string(), t, Vec::new())),
            Err(e) => {
                eprintln!("mm: {}: {e}", a.display());
                return Err(2);
            }
        }
    }
    Ok(layers)
}

/// The layers' names, each with what it left out untrusted, and every
/// key set in them: (key, value shown, the layer it comes from).
fn layer_keys(layers: &[Layer]) -> (String, Vec<(String, String, String)>) {
    let mut out = String::from("layers, lowest first:\n  defaults\n");
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for (name, text, left_out) in layers {
        out.push_str(&format!("  {name}"));
        if !left_out.is_empty() {
            out.push_str(&format!(
                " (not trusted: {} left out; mm -trust)",
                left_out.join(", ")
            ));
        }
        out.push('\n');
        let map: serde_json::Map<String, serde_json::Value> =
            serde_saphyr::from_str(text).unwrap_or_default();
        for (k, v) in map {
            let from = if left_out.contains(&k.as_str()) {
                format!("{name} (left out: not trusted)")
            } else {
                name.clone()
            };
            let shown = crate::untrusted::json_line(&v);
            match keys.iter_mut().find(|(key, _, _)| *key == k) {
                Some(e) if !left_out.contains(&k.as_str()) => *e = (k, shown, from),
                Some(_) => {}
                None => keys.push((k, shown, from)),
            }
        }
    }
    (out, keys)
}

/// The keys a flag set, and which flag.
fn keys_by_flag(cli: &Cli) -> Vec<(&'static str, String)> {
    let o = cli.overrides();
    [
        (
            "provider",
            o.provider.as_ref().map(|v| format!("-provider {v}")),
        ),
        ("model", o.model.as_ref().map(|v| format!("-model {v}"))),
        ("baseUrl", o.url.as_ref().map(|v| format!("-url {v}"))),
        (
            "sandbox",
            o.sandbox.map(|v| format!("-sandbox {}", v.as_str())),
        ),
        ("yolo", o.yolo.then(|| "-yolo".to_string())),
        ("maxTurns", o.max_rounds.map(|v| format!("-max-rounds {v}"))),
        (
            "maxRequests",
            o.max_requests.map(|v| format!("-max-requests {v}")),
        ),
        (
            "contextMode",
            o.context_mode.map(|v| format!("-ctx {}", v.as_str())),
        ),
        (
            "maxTokens",
            o.max_tokens.map(|v| format!("-max-tokens {v}")),
        ),
        (
            "contextWindow",
            o.context_window.map(|v| format!("-context {v}")),
        ),
        ("sampling", o.think.as_ref().map(|v| format!("-think {v}"))),
    ]
    .into_iter()
    .filter_map(|(k, f)| f.map(|f| (k, f)))
    .collect()
}

/// The settings as resolved, each with the flag that set it.
fn resolved_lines(
    cli: &Cli,
    settings: &crate::config::Settings,
    flag_of: &dyn Fn(&str) -> String,
) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "  provider      {}{}\n",
        settings.provider,
        flag_of("provider")
    ));
    out.push_str(&format!(
        "  baseUrl       {}{}{}\n",
        settings.base_url,
        if settings.auto_detect {
            " (looked for: llama-server, then Ollama)"
        } else {
            ""
        },
        flag_of("baseUrl")
    ));
    out.push_str(&format!(
        "  model         {}{}\n",
        settings
            .model
            .as_deref()
            .unwrap_or("what the server has loaded"),
        flag_of("model")
    ));
    out.push_str(&format!(
        "  sandbox       {}{}{}\n",
        settings.sandbox.as_str(),
        if settings.yolo { ", yolo" } else { "" },
        flag_of("sandbox") + &flag_of("yolo")
    ));
    out.push_str(&format!(
        "  maxTurns      {}{}\n",
        settings.max_rounds,
        flag_of("maxTurns")
    ));
    if let Some(n) = settings.max_requests {
        out.push_str(&format!("  maxRequests   {n}{}\n", flag_of("maxRequests")));
    }
    out.push_str(&format!(
        "  contextMode   {}{}\n",
        settings.context_mode.as_str(),
        flag_of("contextMode")
    ));
    if let Some(n) = settings.max_tokens {
        out.push_str(&format!("  maxTokens     {n}{}\n", flag_of("maxTokens")));
    }
    if let Some(n) = settings.context_window {
        out.push_str(&format!(
            "  contextWindow {n}{}\n",
            flag_of("contextWindow")
        ));
    }
    if !settings.sampling.is_empty() {
        out.push_str(&format!(
            "  sampling      {}{}\n",
            crate::untrusted::json_line(&serde_json::Value::Object(settings.sampling.clone())),
            flag_of("sampling")
        ));
    }
    out.push_str(&format!(
        "  harness       {}{}\n",
        if settings.harness { "on" } else { "off" },
        if cli.no_harness {
            "  (flag -no-harness)"
        } else {
            ""
        }
    ));
    out
}

/// `-show-config`: each layer, then each key set anywhere with its value
/// and the layer it comes from; the flags last.
pub(super) fn show_config(cli: &Cli, project: Option<&config::ProjectConfig>) -> i32 {
    let layers = match config_layers(cli, project) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let settings = match load_settings(cli, project) {
        Ok(s) => s,
        Err(code) => return code,
    };
    for note in &settings.notes {
        eprintln!("mm: {}", crate::untrusted::displayable(note));
    }
    let (mut out, mut keys) = layer_keys(&layers);
    // The agent file is a layer above, not a flag.
    let agent_file = cli.config.as_ref().map(|p| p.display().to_string());
    let flags: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "-show-config" && a != "--show-config")
        .filter(|a| Some(a) != agent_file.as_ref())
        .collect();
    let by_flag = keys_by_flag(cli);
    let flag_of = |key: &str| {
        by_flag
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, f)| format!("  (flag {f})"))
            .unwrap_or_default()
    };
    out.push_str(&format!(
        "  flags{}\n\nresolved:\n",
        if flags.is_empty() {
            " (none)".to_string()
        } else {
            format!(": {}", flags.join(" "))
        }
    ));
    out.push_str(&resolved_lines(cli, &settings, &flag_of));
    out.push_str("\nkeys set in the files (the highest layer wins; a flag over them all):\n");
    keys.sort();
    for (k, v, from) in keys {
        let over = match by_flag.iter().find(|(key, _)| *key == k) {
            Some((_, f)) => format!(" (flag {f} wins)"),
            None => String::new(),
        };
        out.push_str(&format!("  {k}: {v}    # {from}{over}\n"));
    }
    print!("{}", crate::untrusted::displayable(&out));
    0
}
