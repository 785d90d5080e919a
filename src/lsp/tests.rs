//! The client's router and the diagnostics store against a small server
//! written with the same library, over an in-memory duplex pipe.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_lsp::router::Router;
use async_lsp::{ClientSocket, LanguageClient, MainLoop, ResponseError};
use lsp_types::notification::{DidChangeTextDocument, DidOpenTextDocument, Initialized};
use lsp_types::request::{GotoDefinition, Initialize};
use lsp_types::*;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::client::{Client, LspError};
use super::store::DiagStore;
use super::*;
use crate::config::servers::spec;
use std::collections::BTreeMap;

/// Reports one error per line that contains `BAD`, with the version.
fn report(client: &ClientSocket, uri: Url, version: i32, text: &str) {
    let diagnostics = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("BAD"))
        .map(|(i, l)| Diagnostic {
            range: Range::new(
                Position::new(i as u32, l.find("BAD").unwrap_or(0) as u32),
                Position::new(i as u32, l.len() as u32),
            ),
            severity: Some(DiagnosticSeverity::ERROR),
            message: "BAD is not defined".into(),
            ..Default::default()
        })
        .collect();
    let _ = client
        .clone()
        .publish_diagnostics(PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: Some(version),
        });
}

struct Fake {
    client: ClientSocket,
    config_answer: Arc<Mutex<Option<Vec<serde_json::Value>>>>,
}

fn fake_server(
    config_answer: Arc<Mutex<Option<Vec<serde_json::Value>>>>,
) -> (tokio::task::JoinHandle<()>, tokio::io::DuplexStream) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (main, _) = MainLoop::new_server(|client| {
        let mut r = Router::new(Fake {
            client,
            config_answer,
        });
        r.request::<Initialize, _>(|_, _| async {
            Ok::<_, ResponseError>(InitializeResult::default())
        })
        .notification::<Initialized>(|st, _| {
            let c = st.client.clone();
            let slot = st.config_answer.clone();
            tokio::spawn(async move {
                let got = c
                    .clone()
                    .configuration(ConfigurationParams {
                        items: vec![ConfigurationItem::default(), ConfigurationItem::default()],
                    })
                    .await;
                *slot.lock().unwrap() = got.ok();
            });
            ControlFlow::Continue(())
        })
        .notification::<DidOpenTextDocument>(|st, p| {
            let d = p.text_document;
            report(&st.client, d.uri, d.version, &d.text);
            ControlFlow::Continue(())
        })
        .notification::<DidChangeTextDocument>(|st, p| {
            if let Some(c) = p.content_changes.last() {
                report(
                    &st.client,
                    p.text_document.uri,
                    p.text_document.version,
                    &c.text,
                );
            }
            ControlFlow::Continue(())
        })
        .request::<GotoDefinition, _>(|_, p| {
            let uri = p.text_document_position_params.text_document.uri;
            async move {
                Ok::<_, ResponseError>(Some(GotoDefinitionResponse::Scalar(Location {
                    uri,
                    range: Range::new(Position::new(0, 4), Position::new(0, 8)),
                })))
            }
        })
        .unhandled_notification(|_, _| ControlFlow::Continue(()));
        r
    });
    let (read, write) = tokio::io::split(theirs);
    let task = tokio::spawn(async move {
        let _ = main.run_buffered(read.compat(), write.compat_write()).await;
    });
    (task, ours)
}

fn connect(
    ours: tokio::io::DuplexStream,
    store: Arc<DiagStore>,
    seen: Arc<Mutex<Vec<(PathBuf, usize)>>>,
    root: &Path,
) -> Client {
    let (read, write) = tokio::io::split(ours);
    Client::over(
        "fake",
        read.compat(),
        write.compat_write(),
        store,
        Arc::new(move |p: &Path, d: &store::FileDiags| {
            seen.lock().unwrap().push((p.to_path_buf(), d.counts().0));
        }),
        root,
    )
}

fn fake_spec() -> ServerSpec {
    spec("fake", "fake", &[], &["python"])
}

#[tokio::test]
async fn diagnostics_follow_each_change_and_server_requests_are_answered() {
    let answer = Arc::new(Mutex::new(None));
    let (_server, ours) = fake_server(answer.clone());
    let store = Arc::new(DiagStore::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let root = tempfile::tempdir().unwrap();
    let c = connect(ours, store.clone(), seen.clone(), root.path());
    c.initialize(root.path(), &fake_spec(), Duration::from_secs(5))
        .await
        .unwrap();
    // On disk, as every file mm syncs is: reports on files that do not
    // exist are not kept.
    let file = root.path().join("a.py");
    std::fs::write(&file, "x = 1\ny = BAD\n").unwrap();

    let v1 = c
        .sync(&file, "python", "x = 1\ny = BAD\n", true)
        .await
        .unwrap();
    assert_eq!(v1, 1);
    let got = store
        .settle(
            &file,
            0,
            v1,
            Duration::from_millis(50),
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(got.counts(), (1, 0));
    assert_eq!(got.items[0].range.start, Position::new(1, 4));

    let since = store.get(&file).generation;
    let v2 = c
        .sync(&file, "python", "x = 1\ny = 2\n", true)
        .await
        .unwrap();
    assert_eq!(v2, 2);
    let got = store
        .settle(
            &file,
            since,
            v2,
            Duration::from_millis(50),
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(got.counts(), (0, 0));
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        &[(file.clone(), 1), (file.clone(), 0)]
    );

    // The server asked for configuration after `initialized`: one null
    // per item, not an error.
    let start = std::time::Instant::now();
    while answer.lock().unwrap().is_none() && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        answer.lock().unwrap().clone(),
        Some(vec![serde_json::Value::Null, serde_json::Value::Null])
    );

    let def = c
        .definition(
            TextDocumentPositionParams {
                text_document: TextDocumentIdentifier {
                    uri: client::uri(&file).unwrap(),
                },
                position: Position::new(1, 4),
            },
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(def.len(), 1);
    assert_eq!(def[0].range.start, Position::new(0, 4));
}

#[tokio::test]
async fn a_server_that_goes_away_fails_requests_at_once() {
    let (server, ours) = fake_server(Arc::new(Mutex::new(None)));
    let store = Arc::new(DiagStore::default());
    let root = tempfile::tempdir().unwrap();
    let c = connect(ours, store, Arc::new(Mutex::new(Vec::new())), root.path());
    c.initialize(root.path(), &fake_spec(), Duration::from_secs(5))
        .await
        .unwrap();
    server.abort();
    let _ = server.await;
    let start = std::time::Instant::now();
    while c.alive() && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!c.alive(), "the main loop noticed the pipe closed");
    let err = c
        .hover(
            TextDocumentPositionParams {
                text_document: TextDocumentIdentifier {
                    uri: client::uri(&root.path().join("a.py")).unwrap(),
                },
                position: Position::new(0, 0),
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, LspError::Dead(_)), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn config_changes_built_in_servers_and_adds_new_ones() {
    let mut cfg = BTreeMap::new();
    cfg.insert(
        "pyright".to_string(),
        ServerFile {
            enabled: Some(false),
            ..Default::default()
        },
    );
    cfg.insert(
        "zls".to_string(),
        ServerFile {
            command: Some("zls".into()),
            languages: Some(vec!["zig".into()]),
            ..Default::default()
        },
    );
    let specs = resolve(&cfg).unwrap();
    assert!(!specs.iter().find(|s| s.name == "pyright").unwrap().enabled);
    assert!(
        specs
            .iter()
            .any(|s| s.name == "zls" && s.languages == ["zig"])
    );
    let mut bad = BTreeMap::new();
    bad.insert("nope".to_string(), ServerFile::default());
    assert!(
        resolve(&bad)
            .unwrap_err()
            .contains("needs `command` and `languages`")
    );
}

#[tokio::test]
async fn without_a_server_mm_says_so_once_per_language() {
    let root = tempfile::tempdir().unwrap();
    let bus = EventBus::new();
    let mut rx = bus.subscribe();
    let mut specs = defaults();
    for s in &mut specs {
        s.command = format!("/nonexistent/{}", s.command);
    }
    let lsp = Lsp::new(root.path(), specs, bus, None);
    assert!(!lsp.available());
    let never = tokio_util::sync::CancellationToken::new();
    let f = root.path().join("a.py");
    assert_eq!(lsp.check_write("c1", &f, "x = 1\n", &never).await, None);
    assert_eq!(lsp.check_write("c2", &f, "x = 2\n", &never).await, None);
    assert_eq!(
        lsp.check_write("c3", &root.path().join("notes.txt"), "hi", &never)
            .await,
        None
    );
    let mut notices = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        if let AgentEvent::Notice { text, .. } = ev.msg {
            notices.push(text);
        }
    }
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("no language server found for python"),
        "{notices:?}"
    );
}

#[test]
fn the_language_tools_are_for_a_workspace_with_a_served_language() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.js"), "module.exports = {};\n").unwrap();
    std::fs::write(dir.path().join("README.md"), "# app\n").unwrap();
    assert!(!serves_workspace(dir.path(), &["python"]));
    assert!(serves_workspace(dir.path(), &["javascript", "python"]));
    assert!(!serves_workspace(dir.path(), &[]));
    // An ignore file that is a FIFO is not opened (it would wait for a
    // writer for ever).
    nix::unistd::mkfifo(
        &dir.path().join("src/.gitignore"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    assert!(!serves_workspace(dir.path(), &["python"]));
}
