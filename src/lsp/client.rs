//! One running language server: the process, its main loop, the documents
//! it has open. Every request has a time limit; a server that dies ends its
//! main loop and marks the client dead, which the manager notices.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_lsp::router::Router;
use async_lsp::{LanguageServer, MainLoop, ResponseError, ServerSocket};
use lsp_types::notification::{LogMessage, PublishDiagnostics, ShowMessage};
use lsp_types::request::{
    RegisterCapability, UnregisterCapability, WorkDoneProgressCreate, WorkspaceConfiguration,
    WorkspaceFoldersRequest,
};
use lsp_types::*;
use tokio::sync::Mutex;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::ServerSpec;
use super::store::{DiagStore, FileDiags};

/// Called with every diagnostics report, after the store has it.
pub type OnReport = Arc<dyn Fn(&Path, &FileDiags) + Send + Sync>;

/// Ends the main loop.
struct Stop;

struct RouterState {
    store: Arc<DiagStore>,
    on_report: OnReport,
    root: PathBuf,
}

/// The client's half of the protocol: diagnostics into the store, polite
/// answers to what servers ask of a client, everything else ignored.
pub fn router(store: Arc<DiagStore>, on_report: OnReport, root: PathBuf) -> Router<()> {
    let state = RouterState {
        store,
        on_report,
        root,
    };
    let mut r = Router::new(());
    let state = Arc::new(state);
    let s = state.clone();
    r.notification::<PublishDiagnostics>(move |_, p| {
        // Reports for files outside the workspace, or for none at all,
        // are not kept (a server could fill mm's memory with made-up
        // paths); the store caps the rest.
        if let Ok(path) = p.uri.to_file_path()
            && path.starts_with(&s.root)
            && path.is_file()
        {
            let now = s.store.publish(path.clone(), p.version, p.diagnostics);
            (s.on_report)(&path, &now);
        }
        ControlFlow::Continue(())
    })
    .notification::<ShowMessage>(|_, p| {
        tracing::debug!("server says: {}", p.message);
        ControlFlow::Continue(())
    })
    .notification::<LogMessage>(|_, p| {
        tracing::trace!("server log: {}", p.message);
        ControlFlow::Continue(())
    })
    .unhandled_notification(|_, _| ControlFlow::Continue(()))
    .request::<WorkspaceConfiguration, _>(|_, p| {
        let n = p.items.len();
        async move { Ok::<_, ResponseError>(vec![serde_json::Value::Null; n]) }
    })
    .request::<RegisterCapability, _>(|_, _| async { Ok::<_, ResponseError>(()) })
    .request::<UnregisterCapability, _>(|_, _| async { Ok::<_, ResponseError>(()) })
    .request::<WorkDoneProgressCreate, _>(|_, _| async { Ok::<_, ResponseError>(()) });
    let s = state;
    r.request::<WorkspaceFoldersRequest, _>(move |_, _| {
        let folder = folder(&s.root);
        async move { Ok::<_, ResponseError>(folder.map(|f| vec![f])) }
    })
    .event::<Stop>(|_, _| ControlFlow::Break(Ok(())))
    .unhandled_event(|_, _| ControlFlow::Continue(()));
    r
}

fn folder(root: &Path) -> Option<WorkspaceFolder> {
    Some(WorkspaceFolder {
        uri: Url::from_file_path(root).ok()?,
        name: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workspace".into()),
    })
}

pub fn uri(path: &Path) -> Option<Url> {
    Url::from_file_path(path).ok()
}

pub struct Client {
    pub name: String,
    socket: ServerSocket,
    alive: Arc<AtomicBool>,
    /// Why the main loop ended, when it did.
    pub exit_reason: Arc<std::sync::Mutex<Option<String>>>,
    child: Mutex<Option<tokio::process::Child>>,
    /// The server's process group, killed when the client goes (and by
    /// every way out of mm).
    group: Option<crate::sandbox::procs::Group>,
    /// mm's pid as the server can see it (None inside the fence).
    parent_pid: Option<u32>,
    /// Open documents: their versions and a hash of the text sent last.
    docs: Mutex<HashMap<PathBuf, (i32, u64)>>,
    pub pid: Option<u32>,
}

/// How a server is started: its command (in the fence or not), and mm's
/// pid as the server will see it (None inside the fence's pid namespace).
pub struct Launch {
    pub cmd: tokio::process::Command,
    pub parent_pid: Option<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum LspError {
    #[error("{0} did not start: {1}")]
    Start(String, String),
    #[error("{0} did not answer within {1:?}")]
    Timeout(String, Duration),
    #[error("{0}: {1}")]
    Request(String, String),
    #[error("{0} is not running")]
    Dead(String),
}

impl Client {
    /// Starts the server and completes `initialize`. Its stderr goes to
    /// `log` (or nowhere).
    pub async fn start(
        spec: &ServerSpec,
        launch: Launch,
        root: &Path,
        store: Arc<DiagStore>,
        on_report: OnReport,
        log: Option<&Path>,
        init_timeout: Duration,
    ) -> Result<Client, LspError> {
        let stderr = log
            .and_then(|p| {
                let dir = crate::mmdir::MmDir::open(p.parent()?).ok()?;
                let name = p.file_name()?.to_string_lossy().into_owned();
                dir.file(&name, crate::mmdir::Open::Append).ok()
            })
            .map(Stdio::from)
            .unwrap_or_else(Stdio::null);
        let Launch {
            mut cmd,
            parent_pid,
        } = launch;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| LspError::Start(spec.name.clone(), e.to_string()))?;
        let pid = child.id();
        let group = pid.and_then(crate::sandbox::procs::Group::register);
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(LspError::Start(spec.name.clone(), "no pipes".into()));
        };
        let mut client = Self::over(
            &spec.name,
            stdout.compat(),
            stdin.compat_write(),
            store,
            on_report,
            root,
        );
        *client.child.lock().await = Some(child);
        client.pid = pid;
        client.group = group;
        // In the fence's pid namespace mm's pid means nothing: a server
        // that watches its parent by pid (pyright does, every few seconds)
        // would find it gone and quit.
        client.parent_pid = parent_pid;
        client.initialize(root, spec, init_timeout).await?;
        Ok(client)
    }

    /// A client over any pair of streams (a process's pipes, or an
    /// in-memory duplex in tests). Not initialized yet.
    pub fn over(
        name: &str,
        input: impl futures::AsyncRead + Unpin + Send + 'static,
        output: impl futures::AsyncWrite + Send + 'static,
        store: Arc<DiagStore>,
        on_report: OnReport,
        root: &Path,
    ) -> Client {
        let root = root.to_path_buf();
        let (main, socket) = MainLoop::new_client(|_| router(store, on_report, root));
        let alive = Arc::new(AtomicBool::new(true));
        let exit_reason = Arc::new(std::sync::Mutex::new(None));
        let (a, why) = (alive.clone(), exit_reason.clone());
        tokio::spawn(async move {
            // What the server sends is held to a frame size first.
            let res = main
                .run_buffered(super::frames::Guarded::new(input), output)
                .await;
            a.store(false, Ordering::SeqCst);
            if let Ok(mut w) = why.lock() {
                *w = Some(match res {
                    Ok(()) => "stopped".to_string(),
                    Err(e) => e.to_string(),
                });
            }
        });
        Client {
            name: name.to_string(),
            socket,
            alive,
            exit_reason,
            child: Mutex::new(None),
            group: None,
            parent_pid: Some(std::process::id()),
            docs: Mutex::new(HashMap::new()),
            pid: None,
        }
    }

    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Whether the server is gone: its stream ended, or its process exited
    /// even if the stream has not ended yet. The process is our child, so
    /// its pid stays its own until the runtime reaps it: a zombie or no
    /// process at all is gone.
    pub fn exited(&self) -> bool {
        if !self.alive() {
            return true;
        }
        let Some(pid) = self.pid else {
            return false;
        };
        let gone = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name's closing parenthesis.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        };
        if gone
            && let Ok(mut w) = self.exit_reason.lock()
            && w.is_none()
        {
            *w = Some("its process exited".to_string());
        }
        gone
    }

    pub async fn initialize(
        &self,
        root: &Path,
        spec: &ServerSpec,
        timeout: Duration,
    ) -> Result<InitializeResult, LspError> {
        let caps = ClientCapabilities {
            text_document: Some(TextDocumentClientCapabilities {
                synchronization: Some(TextDocumentSyncClientCapabilities {
                    did_save: Some(true),
                    ..Default::default()
                }),
                publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                    version_support: Some(true),
                    ..Default::default()
                }),
                hover: Some(HoverClientCapabilities {
                    content_format: Some(vec![MarkupKind::PlainText, MarkupKind::Markdown]),
                    ..Default::default()
                }),
                definition: Some(GotoCapability::default()),
                references: Some(DynamicRegistrationClientCapabilities::default()),
                ..Default::default()
            }),
            workspace: Some(WorkspaceClientCapabilities {
                configuration: Some(true),
                workspace_folders: Some(true),
                symbol: Some(WorkspaceSymbolClientCapabilities::default()),
                ..Default::default()
            }),
            ..Default::default()
        };
        #[allow(deprecated)]
        let params = InitializeParams {
            process_id: self.parent_pid,
            root_uri: uri(root),
            workspace_folders: folder(root).map(|f| vec![f]),
            initialization_options: spec.initialization_options.clone(),
            capabilities: caps,
            client_info: Some(ClientInfo {
                name: "mm".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        };
        let mut socket = self.socket.clone();
        let res = self
            .timed(timeout, async move { socket.initialize(params).await })
            .await?;
        self.socket
            .clone()
            .initialized(InitializedParams {})
            .map_err(|e| self.err(e))?;
        Ok(res)
    }

    fn err(&self, e: async_lsp::Error) -> LspError {
        match e {
            async_lsp::Error::ServiceStopped | async_lsp::Error::Eof => {
                LspError::Dead(self.name.clone())
            }
            other => LspError::Request(self.name.clone(), other.to_string()),
        }
    }

    async fn timed<T>(
        &self,
        limit: Duration,
        fut: impl std::future::Future<Output = Result<T, async_lsp::Error>>,
    ) -> Result<T, LspError> {
        if !self.alive() {
            return Err(LspError::Dead(self.name.clone()));
        }
        match tokio::time::timeout(limit, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.err(e)),
            Err(_) => Err(LspError::Timeout(self.name.clone(), limit)),
        }
    }

    /// Tells the server the document's text (open, or change); `saved`
    /// adds didSave (the text is what is on disk). Returns the version.
    pub async fn sync(
        &self,
        path: &Path,
        language: &str,
        text: &str,
        saved: bool,
    ) -> Result<i32, LspError> {
        self.sync_inner(path, language, text, saved, false)
            .await
            .map(|v| v.unwrap_or(0))
    }

    /// Makes the server's copy of the document `text` (the file on disk):
    /// opens it, or changes it when the text sent last differs; sends
    /// nothing when it is the same.
    pub async fn ensure(&self, path: &Path, language: &str, text: &str) -> Result<(), LspError> {
        self.sync_inner(path, language, text, false, true)
            .await
            .map(|_| ())
    }

    async fn sync_inner(
        &self,
        path: &Path,
        language: &str,
        text: &str,
        saved: bool,
        only_if_different: bool,
    ) -> Result<Option<i32>, LspError> {
        let Some(uri) = uri(path) else {
            return Err(LspError::Request(
                self.name.clone(),
                format!("{} is not an absolute path", path.display()),
            ));
        };
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            h.finish()
        };
        let mut docs = self.docs.lock().await;
        if only_if_different && docs.get(path).is_some_and(|(_, h)| *h == hash) {
            return Ok(None);
        }
        let mut socket = self.socket.clone();
        let version = match docs.get(path).map(|(v, _)| *v) {
            None => {
                socket
                    .did_open(DidOpenTextDocumentParams {
                        text_document: TextDocumentItem {
                            uri: uri.clone(),
                            language_id: language.to_string(),
                            version: 1,
                            text: text.to_string(),
                        },
                    })
                    .map_err(|e| self.err(e))?;
                1
            }
            Some(v) => {
                let version = v + 1;
                socket
                    .did_change(DidChangeTextDocumentParams {
                        text_document: VersionedTextDocumentIdentifier {
                            uri: uri.clone(),
                            version,
                        },
                        content_changes: vec![TextDocumentContentChangeEvent {
                            range: None,
                            range_length: None,
                            text: text.to_string(),
                        }],
                    })
                    .map_err(|e| self.err(e))?;
                version
            }
        };
        if saved {
            // Servers that check on save (rust-analyzer runs cargo check)
            // hear of every write, the first one too.
            socket
                .did_save(DidSaveTextDocumentParams {
                    text_document: TextDocumentIdentifier { uri },
                    text: None,
                })
                .map_err(|e| self.err(e))?;
        }
        docs.insert(path.to_path_buf(), (version, hash));
        Ok(Some(version))
    }

    /// The version the next change of `path` will carry.
    pub async fn next_version(&self, path: &Path) -> i32 {
        self.docs.lock().await.get(path).map_or(1, |(v, _)| v + 1)
    }

    pub async fn is_open(&self, path: &Path) -> bool {
        self.docs.lock().await.contains_key(path)
    }

    pub async fn open_paths(&self) -> Vec<PathBuf> {
        self.docs.lock().await.keys().cloned().collect()
    }

    pub async fn definition(
        &self,
        pos: TextDocumentPositionParams,
        limit: Duration,
    ) -> Result<Vec<Location>, LspError> {
        let mut s = self.socket.clone();
        let res = self
            .timed(limit, async move {
                s.definition(GotoDefinitionParams {
                    text_document_position_params: pos,
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                })
                .await
            })
            .await?;
        Ok(match res {
            None => vec![],
            Some(GotoDefinitionResponse::Scalar(l)) => vec![l],
            Some(GotoDefinitionResponse::Array(v)) => v,
            Some(GotoDefinitionResponse::Link(v)) => v
                .into_iter()
                .map(|l| Location {
                    uri: l.target_uri,
                    range: l.target_selection_range,
                })
                .collect(),
        })
    }

    pub async fn references(
        &self,
        pos: TextDocumentPositionParams,
        limit: Duration,
    ) -> Result<Vec<Location>, LspError> {
        let mut s = self.socket.clone();
        let res = self
            .timed(limit, async move {
                s.references(ReferenceParams {
                    text_document_position: pos,
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                    context: ReferenceContext {
                        include_declaration: true,
                    },
                })
                .await
            })
            .await?;
        Ok(res.unwrap_or_default())
    }

    pub async fn hover(
        &self,
        pos: TextDocumentPositionParams,
        limit: Duration,
    ) -> Result<Option<Hover>, LspError> {
        let mut s = self.socket.clone();
        self.timed(limit, async move {
            s.hover(HoverParams {
                text_document_position_params: pos,
                work_done_progress_params: Default::default(),
            })
            .await
        })
        .await
    }

    pub async fn workspace_symbols(
        &self,
        query: &str,
        limit: Duration,
    ) -> Result<Vec<(String, SymbolKind, Location)>, LspError> {
        let mut s = self.socket.clone();
        let query = query.to_string();
        let res = self
            .timed(limit, async move {
                s.symbol(WorkspaceSymbolParams {
                    query,
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                })
                .await
            })
            .await?;
        Ok(match res {
            None => vec![],
            Some(WorkspaceSymbolResponse::Flat(v)) => v
                .into_iter()
                .map(|s| (s.name, s.kind, s.location))
                .collect(),
            Some(WorkspaceSymbolResponse::Nested(v)) => v
                .into_iter()
                .filter_map(|s| match s.location {
                    OneOf::Left(l) => Some((s.name, s.kind, l)),
                    OneOf::Right(_) => None,
                })
                .collect(),
        })
    }

    /// `shutdown` then `exit`, each briefly; then the process is killed.
    pub async fn shutdown(&self) {
        if self.alive() {
            let mut s = self.socket.clone();
            let _ = tokio::time::timeout(Duration::from_secs(2), s.shutdown(())).await;
            let _ = s.exit(());
            let _ = s.emit(Stop);
        }
        if let Some(mut child) = self.child.lock().await.take()
            && tokio::time::timeout(Duration::from_millis(500), child.wait())
                .await
                .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

impl Drop for Client {
    /// The main loop ends before its last sender goes (async-lsp panics
    /// in a loop whose sender is gone), e.g. when initialize failed.
    fn drop(&mut self) {
        let _ = self.socket.emit(Stop);
    }
}
