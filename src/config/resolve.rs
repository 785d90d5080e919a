//! From the layers to one Settings: the user's config, the agent file and the
//! flags laid over each other, the structured-output schema compiled,
//! thinking and the window settled, and every value checked with the file and
//! line it came from.

use super::*;

/// Compiles `structuredOutput`; an error names its place in the YAML file.
pub(super) fn compile_structured(
    settings: &Settings,
    path: &Path,
    decl: &serde_saphyr::Spanned<String>,
) -> Result<structured::Structured, ConfigError> {
    let at = decl.referenced;
    let error = |position: Option<(u64, u64)>, message: String| ConfigError {
        file: path.to_path_buf(),
        position,
        message,
    };
    // An agent acts or answers in a fixed shape: a constrained answer
    // leaves no room for a tool call.
    let mut tools = Vec::new();
    if settings.bash_tool {
        tools.push("bashTool");
    }
    if settings.edit_tools {
        tools.push("editTools");
    }
    if settings.plan_tool {
        tools.push("planTool");
    }
    if !settings.sub_agents.is_empty() {
        tools.push("mmConfigs");
    }
    if !tools.is_empty() {
        let fix: Vec<String> = tools
            .iter()
            .map(|t| {
                if *t == "mmConfigs" {
                    "remove mmConfigs".to_string()
                } else {
                    format!("{t}: false")
                }
            })
            .collect();
        return Err(error(
            (at.line() > 0).then(|| (at.line(), at.column())),
            format!(
                "structuredOutput cannot be used with tools — this agent declares: {} (set {})",
                tools.join(", "),
                fix.join(", ")
            ),
        ));
    }
    structured::compile(&decl.value).map_err(|e| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        error(
            yaml_place(&text, at.line(), e.line, e.col),
            format!("structuredOutput: {}", e.message),
        )
    })
}

/// Where line `go_line`, column `go_col` of the declarations sit in the
/// YAML file, the value's place being line `at` (the block scalar's first
/// line of content, or its `|` line).
pub(super) fn yaml_place(text: &str, at: u64, go_line: usize, go_col: usize) -> Option<(u64, u64)> {
    if at == 0 {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let indicator = |n: u64| {
        n >= 1
            && lines.get(n as usize - 1).is_some_and(|l| {
                let l = l.trim_end();
                ["|", "|-", "|+", ">", ">-", ">+"]
                    .iter()
                    .any(|ind| l.ends_with(ind))
            })
    };
    let start = if indicator(at) {
        at + 1
    } else if indicator(at - 1) {
        at
    } else {
        // A one-line value: its place is the error's best place.
        return Some((at, 1));
    };
    let indent = lines
        .iter()
        .skip(start as usize - 1)
        .find(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .unwrap_or(0);
    Some((start + go_line as u64 - 1, (indent + go_col) as u64))
}

/// Merges the layers (lowest first) and the flags; `env` reads the
/// process environment (`MM_BASE_URL`, the key variables).
/// mingo's `-think LEVEL` as the request's sampling fields: a local
/// server's chat template switch (`chat_template_kwargs.enable_thinking`),
/// a hosted API's `reasoning_effort`.
pub(super) fn think(
    sampling: &mut serde_json::Map<String, serde_json::Value>,
    level: &str,
    local: bool,
) -> Result<(), String> {
    const LEVELS: [&str; 6] = ["off", "low", "medium", "high", "xhigh", "max"];
    if !LEVELS.contains(&level) {
        return Err(format!(
            "-think takes one of {}, not {level:?}",
            LEVELS.join(", ")
        ));
    }
    if local {
        let kwargs = sampling
            .entry("chat_template_kwargs")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(k) = kwargs.as_object_mut() {
            k.insert("enable_thinking".into(), serde_json::json!(level != "off"));
        }
    } else if level == "off" {
        sampling.remove("reasoning_effort");
    } else {
        sampling.insert("reasoning_effort".into(), serde_json::json!(level));
    }
    Ok(())
}

/// The request's sampling fields: the file's, `-think` as the server
/// takes it, and a local server's default temperature.
fn sampling_of(
    flags: &Overrides,
    merged: &AgentFile,
    local: bool,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let mut sampling = merged.sampling.clone().unwrap_or_default();
    if let Some(level) = &flags.think {
        think(&mut sampling, level, local)?;
    }
    if local && !sampling.contains_key("temperature") {
        sampling.insert("temperature".into(), serde_json::json!(LOCAL_TEMPERATURE));
    }
    Ok(sampling)
}

/// A duration the file sets, or this many seconds.
fn or_secs(set: Option<&file::GoDuration>, secs: u64) -> Duration {
    set.map_or(Duration::from_secs(secs), |d| d.0)
}

/// The layers laid over one another, lowest first, and the agents their
/// `mmConfigs` declare (each path resolved against its own file's folder).
fn merge(layers: &[(Option<PathBuf>, AgentFile)]) -> (AgentFile, BTreeMap<String, SubAgent>) {
    let mut merged = AgentFile::default();
    let mut sub_agents = BTreeMap::new();
    for (path, layer) in layers {
        if let Some(configs) = &layer.mm_configs {
            let base = path
                .as_ref()
                .and_then(|p| p.parent())
                .map(Path::to_path_buf)
                .unwrap_or_default();
            for (name, r) in configs {
                let path =
                    std::path::absolute(base.join(&r.path)).unwrap_or_else(|_| base.join(&r.path));
                sub_agents.insert(
                    name.clone(),
                    SubAgent {
                        digest: file_digest(&path),
                        name: name.clone(),
                        path,
                        description: r.description.clone(),
                        yolo: r.yolo.unwrap_or(false),
                    },
                );
            }
        }
        overlay(&mut merged, layer.clone());
    }
    (merged, sub_agents)
}

/// The server and model a session talks to, and how.
struct Server {
    provider: String,
    provider_info: provider::ProviderInfo,
    base_url: String,
    /// A provider or URL was given (by a flag, `MM_BASE_URL` or a file):
    /// no looking for a local server.
    chose_server: bool,
    api_key: Option<String>,
    model: Option<String>,
    api: Api,
    aux_url: Option<String>,
    /// `auxUrl`'s own key (never the main one).
    aux_api_key: Option<String>,
}

/// The provider, its URL (checked), key, model and API, from the flags,
/// the environment and the merged files; why not, in words.
fn server(
    flags: &Overrides,
    merged: &AgentFile,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Server, String> {
    let env_url = env("MM_BASE_URL").filter(|s| !s.is_empty());
    let chose_server = flags.provider.is_some()
        || flags.url.is_some()
        || env_url.is_some()
        || merged.provider.is_some()
        || merged.base_url.is_some();
    let provider = flags
        .provider
        .clone()
        .or(merged.provider.clone())
        .unwrap_or_else(|| "local".to_string());
    let provider_info = provider::lookup(&provider).ok_or_else(|| {
        format!(
            "unknown provider {provider:?}; known providers: {}",
            provider::NAMES.join(", ")
        )
    })?;
    let base_url = flags
        .url
        .clone()
        .or(env_url)
        .or(merged.base_url.clone())
        .unwrap_or_else(|| provider_info.default_base_url.to_string());
    let base_url = base_url.trim_end_matches('/').to_string();
    let insecure = merged.allow_insecure_http.unwrap_or(false);
    provider::check_url(&base_url, insecure).map_err(|e| e.to_string())?;
    if let Some(fallback) = &merged.fallback {
        provider::check_url(fallback, insecure).map_err(|e| format!("fallback: {e}"))?;
    }

    let api_key = merged
        .api_key_env
        .as_deref()
        .into_iter()
        .chain(["MM_API_KEY"])
        .chain(provider_info.key_envs.iter().copied())
        .find_map(|name| env(name).filter(|v| !v.is_empty()));
    if !provider_info.local && api_key.is_none() {
        return Err(format!(
            "provider {provider} needs an API key: set {}",
            provider_info.key_envs.join(" or ")
        ));
    }

    let model = flags
        .model
        .clone()
        .or(merged.model.clone())
        .or(provider_info.default_model.map(str::to_string));
    if model.is_none() && !provider_info.local {
        return Err(format!(
            "provider {provider} needs a model: set `model:` in the agent file or pass -model"
        ));
    }

    let api = match merged.api.as_deref() {
        None => Api::default_for(provider_info.kind, model.as_deref()),
        Some(name) => Api::parse(name)
            .ok_or_else(|| format!("api: {name:?} is not one of {}", Api::NAMES.join(", ")))?,
    };

    let aux_url = merged
        .aux_url
        .as_deref()
        .map(|u| u.trim_end_matches('/').to_string());
    if let Some(u) = &aux_url {
        provider::check_url(u, insecure).map_err(|e| format!("auxUrl: {e}"))?;
    }

    Ok(Server {
        provider,
        provider_info,
        base_url,
        chose_server,
        api_key,
        model,
        api,
        aux_url,
        aux_api_key: merged
            .aux_api_key_env
            .as_deref()
            .and_then(|name| env(name).filter(|v| !v.is_empty())),
    })
}

/// The sandbox mode and whether `yolo` holds: an agent asked by another
/// may do no more than the asker (its mode capped by the asker's; below
/// full access its own `yolo` does not hold, the asker answers its
/// permission requests); a ceiling that cannot be read is the lowest.
fn sandbox_and_yolo(
    flags: &Overrides,
    merged: &AgentFile,
    env: &dyn Fn(&str) -> Option<String>,
) -> (SandboxMode, bool) {
    let mut yolo = flags.yolo || merged.yolo.unwrap_or(false);
    let mut sandbox = if yolo {
        SandboxMode::Full
    } else {
        flags
            .sandbox
            .or(merged.sandbox)
            .unwrap_or(SandboxMode::Workspace)
    };
    if let Some(ceiling) = env(ASK_CEILING_VAR)
        .filter(|v| !v.is_empty())
        .map(|v| SandboxMode::parse(&v).unwrap_or(SandboxMode::ReadOnly))
    {
        sandbox = sandbox.min(ceiling);
        if ceiling != SandboxMode::Full {
            yolo = false;
        }
    }
    (sandbox, yolo)
}

/// The MCP servers not switched off, each one of the two kinds and with a
/// usable name.
fn mcp_servers_of(merged: &AgentFile) -> Result<BTreeMap<String, file::McpServerFile>, String> {
    let mut servers = merged.mcp_servers.clone().unwrap_or_default();
    servers.retain(|_, s| s.enabled != Some(false));
    for (name, s) in &servers {
        if s.command.is_some() == s.url.is_some() {
            return Err(format!(
                "mcpServers.{name}: give either command (a server over stdio) or url (streamable HTTP)"
            ));
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "mcpServers: {name:?} is not a server name (letters, digits, - and _)"
            ));
        }
    }
    Ok(servers)
}

pub fn resolve(
    layers: &[(Option<PathBuf>, AgentFile)],
    flags: &Overrides,
    agent_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, ConfigError> {
    let (merged, sub_agents) = merge(layers);
    let err = |message: String| ConfigError {
        file: agent_file
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("command line")),
        position: None,
        message,
    };
    let Server {
        provider,
        provider_info,
        base_url,
        chose_server,
        api_key,
        model,
        api,
        aux_url,
        aux_api_key,
    } = server(flags, &merged, env).map_err(err)?;
    let (sandbox, yolo) = sandbox_and_yolo(flags, &merged, env);
    let mcp_servers = mcp_servers_of(&merged).map_err(err)?;
    let compact_at = merged.compact_at.unwrap_or(80);
    if compact_at > 95 {
        return Err(err(format!(
            "compactAt is a percentage of the context window up to 95 (0: only /compact), not {compact_at}"
        )));
    }
    let max_tokens = flags
        .max_tokens
        .or(merged.max_tokens)
        .or(provider_info.local.then_some(LOCAL_COMPLETION_CAP));
    let acp = merged.acp.clone().unwrap_or_default();
    let sampling = sampling_of(flags, &merged, provider_info.local).map_err(err)?;

    Ok(Settings {
        notes: Vec::new(),
        provider,
        provider_info,
        model,
        base_url,
        api,
        fallback: merged.fallback.clone(),
        auto_detect: !chose_server,
        api_key,
        system: merged.system.clone(),
        sampling,
        bash_tool: merged.bash_tool.unwrap_or(true),
        edit_tools: merged.edit_tools.unwrap_or(true),
        plan_tool: merged.plan_tool.unwrap_or(false),
        plan_gate: merged.plan_gate.unwrap_or(false),
        task_tool: merged.task_tool.unwrap_or(false),
        role: None,
        skills_dir: merged.skills_dir.clone(),
        skills: !flags.no_skills,
        sandbox,
        yolo,
        max_rounds: flags
            .max_rounds
            .or(merged.max_turns)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
            .max(1),
        max_requests: flags.max_requests.or(merged.max_requests),
        watchdog: or_secs(merged.watchdog_timeout.as_ref(), 120),
        first_token_timeout: or_secs(merged.first_token_timeout.as_ref(), 600),
        bash_timeout: or_secs(merged.bash_timeout.as_ref(), 120),
        structured: None,
        context_window: flags.context_window.or(merged.context_window),
        max_tokens,
        sub_agents,
        hooks: merged.hooks.clone().unwrap_or_default(),
        fetch_content: merged.fetch_content.unwrap_or(false),
        fetch_private: merged.fetch_private.unwrap_or(false),
        env_passthrough: merged.env_passthrough.clone().unwrap_or_default(),
        ui: merged.ui.unwrap_or_default(),
        mcp_servers,
        // A sub-task of a session that did not ask before edits.
        approve_edits: merged.approve_edits.unwrap_or(true)
            && env(APPROVE_EDITS_VAR).as_deref() != Some("0"),
        theme: merged.theme.clone().unwrap_or_else(|| "dark".into()),
        keymap: merged.keymap.clone().unwrap_or_else(|| "default".into()),
        checkpoint_days: merged.checkpoint_days.unwrap_or(30),
        lsp: servers::resolve(&merged.lsp.clone().unwrap_or_default()).map_err(err)?,
        acp_name: acp.name,
        acp_title: acp.title,
        agent_file: agent_file.map(Path::to_path_buf),
        // `verify: off`: no command, and none looked for.
        verify: merged
            .verify
            .as_deref()
            .map(|v| if v.trim() == "off" { "" } else { v.trim() }.to_string()),
        verify_attempts: merged.verify_attempts.unwrap_or(3),
        harness: !flags.no_harness && merged.harness.unwrap_or(true),
        harness_off: behaviours_off(flags.harness_off.as_deref(), merged.harness_off.as_deref())
            .map_err(err)?,
        candidates: merged.candidates.unwrap_or(3).min(8),
        edit_format: flags.edit_format.or(merged.edit_format).unwrap_or_default(),
        candidate_time: or_secs(merged.candidate_time.as_ref(), 240),
        compact_at,
        context_mode: flags
            .context_mode
            .or(merged.context_mode)
            .unwrap_or_default(),
        aux_model: merged.aux_model.clone(),
        aux_url,
        aux_api_key,
        prices: merged.prices.clone().unwrap_or_default(),
        notify_after: Some(merged.notify_after.map_or(Duration::from_secs(10), |d| d.0))
            .filter(|d| !d.is_zero()),
        budget_minutes: merged.budget_minutes.filter(|m| *m > 0),
        budget_k_tokens: merged.budget_k_tokens.filter(|k| *k > 0),
        trace: merged.trace.unwrap_or(false)
            || env("AGENT_TRACE").is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes")),
    })
}

/// Lays `top` over `base`: every key `top` sets wins; `sampling` merges key
/// by key so a personal temperature survives an agent file's max_tokens.
pub(super) fn overlay(base: &mut AgentFile, top: AgentFile) {
    // Every key is named here: one added to the file and not laid over
    // does not build (`planGate` was once read and then dropped here).
    let AgentFile {
        provider,
        model,
        base_url,
        fallback,
        allow_insecure_http,
        api_key_env,
        api,
        system,
        sampling,
        bash_tool,
        edit_tools,
        plan_tool,
        plan_gate,
        task_tool,
        skills_dir,
        yolo,
        sandbox,
        mm_configs,
        mcp_servers,
        hooks,
        fetch_content,
        fetch_private,
        env_passthrough,
        ui,
        acp,
        max_turns,
        max_requests,
        watchdog_timeout,
        first_token_timeout,
        bash_timeout,
        structured_output,
        context_window,
        max_tokens,
        approve_edits,
        theme,
        keymap,
        checkpoint_days,
        lsp,
        verify,
        verify_attempts,
        harness,
        harness_off,
        edit_format,
        candidates,
        candidate_time,
        compact_at,
        context_mode,
        aux_model,
        aux_url,
        aux_api_key_env,
        trace,
        budget_minutes,
        budget_k_tokens,
        notify_after,
        prices,
    } = top;
    macro_rules! take {
        ($($field:ident),*) => { $( if $field.is_some() { base.$field = $field; } )* };
    }
    take!(
        provider,
        model,
        base_url,
        fallback,
        allow_insecure_http,
        api_key_env,
        api,
        system,
        bash_tool,
        edit_tools,
        plan_tool,
        plan_gate,
        task_tool,
        skills_dir,
        yolo,
        sandbox,
        mm_configs,
        hooks,
        fetch_content,
        fetch_private,
        env_passthrough,
        ui,
        acp,
        max_turns,
        max_requests,
        watchdog_timeout,
        first_token_timeout,
        bash_timeout,
        structured_output,
        context_window,
        max_tokens,
        approve_edits,
        theme,
        keymap,
        checkpoint_days,
        verify,
        verify_attempts,
        harness,
        harness_off,
        edit_format,
        candidates,
        candidate_time,
        compact_at,
        context_mode,
        aux_model,
        aux_url,
        aux_api_key_env,
        trace,
        budget_minutes,
        budget_k_tokens,
        notify_after,
        prices
    );
    if let Some(servers) = mcp_servers {
        // Server by server: an agent file's server of the same name wins.
        base.mcp_servers
            .get_or_insert_with(Default::default)
            .extend(servers);
    }
    if let Some(top_lsp) = lsp {
        // Server by server: a personal pyright setting survives an agent
        // file that only adds clangd options.
        let lsp = base.lsp.get_or_insert_with(Default::default);
        for (k, v) in top_lsp {
            lsp.insert(k, v);
        }
    }
    if let Some(top_sampling) = sampling {
        let sampling = base.sampling.get_or_insert_with(Default::default);
        for (k, v) in top_sampling {
            sampling.insert(k, v);
        }
    }
}
