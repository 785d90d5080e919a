//! `mm -acp` driven by the Agent Client Protocol crate's own client side,
//! over the real binary's stdin/stdout, against the scripted server:
//! initialize, a new session, a streamed answer, tool calls whose
//! permission the client grants and refuses, a cancel mid-stream, and a
//! load of the saved session in a new process.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, LoadSessionRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, TextContent, ToolCallContent, ToolCallStatus, ToolKind,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams};
use serde_json::json;
use support::*;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

type Log<T> = Arc<Mutex<Vec<T>>>;

fn spawn_agent(ws: &Workspace, args: &[&str]) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm"));
    cmd.arg("-acp")
        .args(args)
        .current_dir(ws.dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", ws.home.path())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true);
    cmd.spawn().unwrap()
}

fn text_of(u: &SessionUpdate) -> Option<String> {
    match u {
        SessionUpdate::AgentMessageChunk(c) => match &c.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn prompt(sid: &str, text: &str) -> PromptRequest {
    PromptRequest::new(
        sid.to_string(),
        vec![ContentBlock::Text(TextContent::new(text.to_string()))],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_client_drives_a_session_end_to_end() {
    let stalled =
        json!({"choices":[{"index":0,"delta":{"content":"Thinking about it"}}]}).to_string();
    let server = Server::start(vec![
        text("Hello from mm."),
        call(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "one\n"}),
        ),
        text("Wrote a.txt."),
        call(
            "c2",
            "write_file",
            json!({"path": "b.txt", "content": "two\n"}),
        ),
        text("It was refused."),
        Reply::StallAfter(vec![stalled], 30),
    ]);
    let ws = Workspace::new();
    git(&ws.path(), &["init", "-q"]);
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let updates: Log<SessionUpdate> = Arc::default();
    let asked: Log<RequestPermissionRequest> = Arc::default();
    let grant = Arc::new(AtomicBool::new(true));
    let (u1, a1, g1) = (updates.clone(), asked.clone(), grant.clone());
    let root = ws.path();
    let session: Arc<Mutex<String>> = Arc::default();
    let s1 = session.clone();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                u1.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let kind = if g1.load(Ordering::SeqCst) {
                    PermissionOptionKind::AllowOnce
                } else {
                    PermissionOptionKind::RejectOnce
                };
                let id = req
                    .options
                    .iter()
                    .find(|o| o.kind == kind)
                    .unwrap()
                    .option_id
                    .clone();
                a1.lock().unwrap().push(req);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            assert_eq!(init.agent_info.unwrap().name, "mm");
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            *s1.lock().unwrap() = sid.clone();

            // A streamed answer.
            let r = cx.send_request(prompt(&sid, "hi")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            let said: String = updates.lock().unwrap().iter().filter_map(text_of).collect();
            assert_eq!(said, "Hello from mm.");
            assert_eq!(
                r.meta.unwrap()["mm"]["answer"],
                json!("Hello from mm."),
                "the answer travels in _meta too"
            );

            // A write the client allows: a permission request with the
            // diff, then the tool call's updates with it.
            updates.lock().unwrap().clear();
            let r = cx.send_request(prompt(&sid, "write a")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one\n");
            {
                let asked = asked.lock().unwrap();
                assert_eq!(asked.len(), 1);
                let call = &asked[0].tool_call;
                assert_eq!(call.tool_call_id.0.as_ref(), "c1");
                let content = call.fields.content.as_ref().unwrap();
                assert!(
                    matches!(&content[0], ToolCallContent::Diff(d) if d.path == root.join("a.txt") && d.new_text == "one\n"),
                    "{content:?}"
                );
                let kinds: Vec<PermissionOptionKind> =
                    asked[0].options.iter().map(|o| o.kind).collect();
                assert_eq!(
                    kinds,
                    [
                        PermissionOptionKind::AllowOnce,
                        PermissionOptionKind::AllowAlways,
                        PermissionOptionKind::RejectOnce
                    ]
                );
                assert!(asked[0].options[1].name.contains("a.txt"), "the always scope is named");
            }
            {
                let ups = updates.lock().unwrap();
                assert!(ups.iter().any(|u| matches!(u,
                    SessionUpdate::ToolCall(t) if t.tool_call_id.0.as_ref() == "c1" && t.kind == ToolKind::Edit)));
                assert!(ups.iter().any(|u| matches!(u,
                    SessionUpdate::ToolCallUpdate(t) if t.tool_call_id.0.as_ref() == "c1"
                        && t.fields.status == Some(ToolCallStatus::Completed)
                        && t.fields.content.as_ref().is_some_and(|c| matches!(&c[0], ToolCallContent::Diff(_))))),
                    "{ups:?}");
                assert!(ups.iter().any(|u| matches!(u,
                    SessionUpdate::ToolCallUpdate(t) if t.fields.locations.as_ref().is_some_and(|l| l.iter().any(|l| l.path == root.join("a.txt"))))));
            }

            // A write the client refuses: nothing written, the call failed.
            grant.store(false, Ordering::SeqCst);
            updates.lock().unwrap().clear();
            let r = cx.send_request(prompt(&sid, "write b")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            assert!(!root.join("b.txt").exists());
            assert_eq!(asked.lock().unwrap().len(), 2);
            assert!(updates.lock().unwrap().iter().any(|u| matches!(u,
                SessionUpdate::ToolCallUpdate(t) if t.tool_call_id.0.as_ref() == "c2"
                    && t.fields.status == Some(ToolCallStatus::Failed))));

            // A cancel while the answer streams.
            updates.lock().unwrap().clear();
            let pending = cx.send_request(prompt(&sid, "take your time"));
            let start = Instant::now();
            while !updates.lock().unwrap().iter().any(|u| text_of(u).is_some()) {
                assert!(start.elapsed() < Duration::from_secs(20), "no chunk streamed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            cx.send_notification(CancelNotification::new(sid.clone()))?;
            let r = pending.block_task().await?;
            assert_eq!(r.stop_reason, StopReason::Cancelled);
            assert!(start.elapsed() < Duration::from_secs(15), "the cancel was not prompt");
            Ok(())
        })
        .await
        .unwrap();
    drop(child.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("mm -acp exits when its client goes")
        .unwrap();
    assert!(status.success(), "{status:?}");

    // A new process loads the session: its history comes back first.
    let sid = session.lock().unwrap().clone();
    let mut child = spawn_agent(&ws, &["-url", &url]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let history: Log<SessionUpdate> = Arc::default();
    let h1 = history.clone();
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                h1.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(LoadSessionRequest::new(sid.clone(), root.clone()))
                .block_task()
                .await?;
            let h = history.lock().unwrap();
            let users: Vec<String> = h
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::UserMessageChunk(c) => match &c.content {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            assert_eq!(users[..3], ["hi", "write a", "write b"], "{h:?}");
            let said: String = h.iter().filter_map(text_of).collect();
            assert!(said.contains("Hello from mm."), "{said}");
            assert!(h.iter().any(|u| matches!(u,
                SessionUpdate::ToolCallUpdate(t) if t.tool_call_id.0.as_ref() == "c1")));
            Ok(())
        })
        .await
        .unwrap();
    drop(child.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_file_names_the_agent_to_the_client() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        &format!(
            "baseUrl: {}\nacp:\n  name: bob\n  title: Bob (coordinator)\n",
            server.url()
        ),
    );
    let mut child = spawn_agent(&ws, &["agent.yaml"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    agent_client_protocol::Client
        .v1()
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let info = init.agent_info.unwrap();
            assert_eq!(info.name, "bob");
            assert_eq!(info.title.as_deref(), Some("Bob (coordinator)"));
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_files_tells_of_unsaved_changes() {
    use agent_client_protocol::v1::schema::{
        ClientCapabilities, FileSystemCapabilities, ReadTextFileRequest, ReadTextFileResponse,
    };
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "notes.txt"})),
        text("Read it."),
    ]);
    let ws = Workspace::new();
    ws.write("notes.txt", "on disk\n");
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let reads: Log<std::path::PathBuf> = Arc::default();
    let r1 = reads.clone();
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_request(
            async move |req: ReadTextFileRequest,
                        responder: Responder<ReadTextFileResponse>,
                        _cx| {
                r1.lock().unwrap().push(req.path.clone());
                responder.respond(ReadTextFileResponse::new("in the editor, unsaved\n"))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
                    ClientCapabilities::new()
                        .fs(FileSystemCapabilities::new().read_text_file(true)),
                ),
            )
            .block_task()
            .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            let r = cx
                .send_request(prompt(&sid, "read notes"))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(*reads.lock().unwrap(), [ws.path().join("notes.txt")]);
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0]
            .1
            .contains("the editor has unsaved changes to notes.txt")
            && results[0].1.contains("on disk"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_server_the_client_is_told_why() {
    let ws = Workspace::new();
    let mut child = spawn_agent(&ws, &["-url", "http://127.0.0.1:9/v1"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let err = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await
                .unwrap_err();
            let data = err.data.unwrap().to_string();
            assert!(data.contains("127.0.0.1:9"), "{data}");
            Ok(())
        })
        .await
        .unwrap();
}

/// A custom command is offered to the client as one of the session's
/// commands, and `/NAME args` typed there runs it with its prompt; a
/// skill's tool is offered too. The built-ins an editor can use are
/// offered beside it, and `/skills` answers with the list as a reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_commands_are_offered_and_run_over_acp() {
    let server = Server::start(vec![text("Reviewed over ACP.")]);
    let ws = Workspace::new();
    ws.write(
        ".mm/commands/review.md",
        "---\ndescription: Review one file\n---\nReview $1 carefully.\n",
    );
    ws.write(
        ".mm/skills/style.md",
        "---\nname: style\ndescription: The house style.\n---\nShort lines.\n",
    );
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let updates: Log<SessionUpdate> = Arc::default();
    let u1 = updates.clone();
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                u1.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            let done = cx
                .send_request(prompt(&sid, "/review app.py"))
                .block_task()
                .await?;
            assert_eq!(done.stop_reason, StopReason::EndTurn);
            let listed = cx
                .send_request(prompt(&sid, "/skills"))
                .block_task()
                .await?;
            assert_eq!(listed.stop_reason, StopReason::EndTurn);
            let bad = cx
                .send_request(prompt(&sid, "/ctx sideways"))
                .block_task()
                .await;
            assert!(bad.is_err(), "a bad argument is an error: {bad:?}");
            Ok(())
        })
        .await
        .unwrap();
    let updates = updates.lock().unwrap();
    let offered = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::AvailableCommandsUpdate(a) => Some(a.available_commands.clone()),
            _ => None,
        })
        .expect("the session's commands");
    assert!(
        offered
            .iter()
            .any(|c| c.name == "review" && c.description == "Review one file")
    );
    for built_in in ["compact", "stats", "init", "model"] {
        assert!(
            offered.iter().any(|c| c.name == built_in),
            "{built_in} is offered: {offered:?}"
        );
    }
    assert!(
        !offered
            .iter()
            .any(|c| c.name == "quit" || c.name == "theme"),
        "only what an editor can use is offered: {offered:?}"
    );
    let said: String = updates.iter().filter_map(text_of).collect();
    assert!(said.contains("Reviewed over ACP."), "{said}");
    assert!(
        said.contains("style") && said.contains("The house style."),
        "/skills answered with the list: {said}"
    );
    assert_eq!(server.requests().len(), 1, "no command asked the model");
    let req = &server.requests()[0];
    let user = req["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.starts_with("Review app.py carefully."), "{user}");
    assert!(req["tools"].to_string().contains("read_skill"));
}

/// An MCP tool set to `ask`, called in an editor's session: the client is
/// asked (the tool named), an allow runs it, a refusal does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_that_asks_is_asked_of_the_acp_client() {
    let bin = match std::env::var("MM_MCP_EVERYTHING") {
        Ok(p) if std::path::Path::new(&p).is_file() => p,
        _ => {
            assert!(
                std::env::var("MM_REQUIRE_MCP").as_deref() != Ok("1"),
                "MM_REQUIRE_MCP=1 but MM_MCP_EVERYTHING does not name the server"
            );
            skip("no MCP test server (scripts/mcp install; MM_MCP_EVERYTHING)");
            return;
        }
    };
    let server = Server::start(vec![
        call("c1", "everything__echo", json!({"message": "first echo"})),
        text("Echoed."),
        call("c2", "everything__echo", json!({"message": "second echo"})),
        text("Refused."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        &format!(
            "mcpServers:\n  everything:\n    command: {bin}\n    args: [stdio]\n    permission: ask\n"
        ),
    );
    let url = server.url();
    let mut child = spawn_agent(&ws, &["agent.yaml", "-url", &url, "-no-harness"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let asked: Log<RequestPermissionRequest> = Arc::default();
    let grant = Arc::new(AtomicBool::new(true));
    let (a1, g1) = (asked.clone(), grant.clone());
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |_n: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let kind = if g1.load(Ordering::SeqCst) {
                    PermissionOptionKind::AllowOnce
                } else {
                    PermissionOptionKind::RejectOnce
                };
                let id = req
                    .options
                    .iter()
                    .find(|o| o.kind == kind)
                    .unwrap()
                    .option_id
                    .clone();
                a1.lock().unwrap().push(req);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            let r = cx.send_request(prompt(&sid, "echo")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            grant.store(false, Ordering::SeqCst);
            let r = cx
                .send_request(prompt(&sid, "echo again"))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    let title = asked[0].tool_call.fields.title.clone().unwrap_or_default();
    assert!(title.contains("everything__echo"), "{title}");
    let reqs = server.requests();
    let allowed = &tool_results(&reqs[1])[0].1;
    assert!(allowed.contains("first echo"), "{allowed}");
    let refused = &tool_results(&reqs[3])
        .iter()
        .find(|(id, _)| id == "c2")
        .unwrap()
        .1
        .clone();
    assert!(!refused.contains("Echo: second echo"), "{refused}");
}

/// Issue 30: a change a person approved is never undone by mm's checks.
/// The command the request says crashes passes after the first change
/// and fails after the second; both were approved in the editor. Before,
/// mm put the file back (a third write, approved by the same "yes").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_the_client_approved_is_never_undone() {
    // (fence_works runs a runtime of its own: not on this one's thread.)
    if !std::thread::spawn(fence_works).join().unwrap() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "app.py", "old_string": "ratio(1, 0)", "replacement": "ratio(1, 2)"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "app.py", "old_string": "return a / b", "replacement": "return a / c"}),
        ),
        text("Changed the division."),
        text("It fails: c is not defined."),
        text("It still fails."),
    ]);
    let ws = Workspace::new();
    git(&ws.path(), &["init", "-q"]);
    ws.write(
        "app.py",
        "def ratio(a, b):\n    return a / b\n\nprint(ratio(1, 0))\n",
    );
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let asked: Log<String> = Arc::default();
    let a1 = asked.clone();
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |_n: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let id = req
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .unwrap()
                    .option_id
                    .clone();
                a1.lock()
                    .unwrap()
                    .push(req.tool_call.fields.title.clone().unwrap_or_default());
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            cx.send_request(prompt(&sid, "`python3 app.py` crashes. Fix app.py."))
                .block_task()
                .await?;
            Ok(())
        })
        .await
        .unwrap();
    drop(child.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked.len(),
        2,
        "two changes asked about, no third: {asked:?}"
    );
    assert!(
        ws.read("app.py").contains("return a / c"),
        "the approved change stays: {}",
        ws.read("app.py")
    );
}

/// `planTool: true`: the model's `update_plan` reaches the client as an
/// ACP plan, every step with its status, whole each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_plan_reaches_the_client_as_a_plan() {
    use agent_client_protocol::v1::schema::PlanEntryStatus;
    let server = Server::start(vec![
        call(
            "u1",
            "update_plan",
            json!({"plan": [
                {"step": "read calc.py", "status": "completed"},
                {"step": "fix add", "status": "in_progress"}
            ]}),
        ),
        text("Working on it."),
    ]);
    let ws = Workspace::new();
    ws.write("agent.yaml", "planTool: true\n");
    let url = server.url();
    let mut child = spawn_agent(&ws, &["agent.yaml", "-url", &url, "-no-harness"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let updates: Log<SessionUpdate> = Arc::default();
    let u1 = updates.clone();
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                u1.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            let r = cx
                .send_request(prompt(&sid, "fix add"))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            let ups = updates.lock().unwrap();
            let plan = ups
                .iter()
                .find_map(|u| match u {
                    SessionUpdate::Plan(p) => Some(p.clone()),
                    _ => None,
                })
                .expect("a plan update");
            let got: Vec<(String, PlanEntryStatus)> = plan
                .entries
                .iter()
                .map(|e| (e.content.clone(), e.status.clone()))
                .collect();
            assert_eq!(
                got,
                [
                    ("read calc.py".to_string(), PlanEntryStatus::Completed),
                    ("fix add".to_string(), PlanEntryStatus::InProgress)
                ]
            );
            let asked = server.requests()[0]["tools"].to_string();
            assert!(asked.contains("update_plan"), "{asked}");
            Ok(())
        })
        .await
        .unwrap();
    let _ = child.kill().await;
}

/// Plan mode over ACP: the session offers it as a mode; a prompt in it
/// is a read-only turn (a write refused); the plan is put to the client
/// as a permission request; "carry it out" leaves plan mode and the plan
/// runs as the same prompt's next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_proposes_asks_and_carries_the_plan_out() {
    use agent_client_protocol::v1::schema::SetSessionModeRequest;
    let server = Server::start(vec![
        call(
            "p1",
            "write_file",
            json!({"path": "a.txt", "content": "too soon\n"}),
        ),
        text("1. Write a.txt with one line.\n2. Say it is done."),
        call(
            "w1",
            "write_file",
            json!({"path": "a.txt", "content": "one\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    git(&ws.path(), &["init", "-q"]);
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url, "-yolo", "-no-harness"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let updates: Log<SessionUpdate> = Arc::default();
    let asked: Log<RequestPermissionRequest> = Arc::default();
    let (u1, a1) = (updates.clone(), asked.clone());
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                u1.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let id = req
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .unwrap()
                    .option_id
                    .clone();
                a1.lock().unwrap().push(req);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let new = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?;
            let modes = new.modes.expect("modes offered");
            assert_eq!(&*modes.current_mode_id.0, "default");
            assert!(modes.available_modes.iter().any(|m| &*m.id.0 == "plan"));
            let sid = new.session_id.0.to_string();
            cx.send_request(SetSessionModeRequest::new(sid.clone(), "plan"))
                .block_task()
                .await?;
            let r = cx.send_request(prompt(&sid, "write a.txt")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one\n");
            let asked = asked.lock().unwrap();
            assert_eq!(asked.len(), 1, "{asked:?}");
            let shown = format!("{:?}", asked[0].tool_call.fields.content);
            assert!(shown.contains("2. Say it is done."), "{shown}");
            let ups = updates.lock().unwrap();
            assert!(
                ups.iter().any(|u| matches!(u, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "default")),
                "{ups:?}"
            );
            Ok(())
        })
        .await
        .unwrap();
    let reqs = server.requests();
    let refused = &tool_results(&reqs[1])[0].1;
    assert!(refused.contains("plan mode"), "{refused}");
    let _ = child.kill().await;
}

/// `planGate: true`: carrying out a plan, a write to a file the plan
/// names goes through, and one to a file it does not name asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_plan_gate_a_write_outside_the_plan_asks() {
    use agent_client_protocol::v1::schema::SetSessionModeRequest;
    let server = Server::start(vec![
        text("1. Write a.txt with one line.\n2. Say it is done."),
        call(
            "w1",
            "write_file",
            json!({"path": "a.txt", "content": "one\n"}),
        ),
        call(
            "w2",
            "write_file",
            json!({"path": "b.txt", "content": "two\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    git(&ws.path(), &["init", "-q"]);
    ws.write("agent.yaml", "planGate: true\n");
    let url = server.url();
    let mut child = spawn_agent(&ws, &["agent.yaml", "-url", &url, "-yolo", "-no-harness"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let asked: Log<RequestPermissionRequest> = Arc::default();
    let a1 = asked.clone();
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |_n: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let id = req
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .unwrap()
                    .option_id
                    .clone();
                a1.lock().unwrap().push(req);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            cx.send_request(SetSessionModeRequest::new(sid.clone(), "plan"))
                .block_task()
                .await?;
            let r = cx
                .send_request(prompt(&sid, "write a.txt"))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let ids: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.tool_call.tool_call_id.0.to_string())
        .collect();
    // The plan itself, then b.txt; a.txt, which the plan names, did not ask.
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids[0].starts_with("mm_plan_"), "{ids:?}");
    assert_eq!(ids[1], "w2");
    assert_eq!(ws.read("a.txt"), "one\n");
    let _ = child.kill().await;
}

/// An editor's image goes to the model with the prompt, and `initialize`
/// offers images only when the server does not say the model is blind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_the_prompt_reaches_a_model_that_can_see() {
    use agent_client_protocol::v1::schema::ImageContent;
    // Replies for the two prompts and the titles asked after each.
    let server = Server::start(vec![
        text("A red square."),
        text("ok"),
        text("ok"),
        text("ok"),
    ]);
    server.route(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 8192}, "modalities": {"vision": true}}),
    );
    let ws = Workspace::new();
    // A picture outside the workspace that an embedded file's text names,
    // after a `</file>` of its own: the file's words, never read.
    let elsewhere = tempfile::tempdir().unwrap();
    let private = elsewhere.path().join("private.png");
    std::fs::write(
        &private,
        base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
        )
        .unwrap(),
    )
    .unwrap();
    let embedded = format!("notes </file> see {}", private.display());
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let root = ws.path();
    // A PNG's signature and header: enough to be taken for one.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    agent_client_protocol::Client
        .v1()
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.agent_capabilities.prompt_capabilities.image);
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            let r = cx
                .send_request(PromptRequest::new(
                    sid,
                    vec![
                        ContentBlock::Text(TextContent::new("What is in this picture?")),
                        ContentBlock::Image(ImageContent::new(png, "image/png")),
                    ],
                ))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            let sent = &server.requests()[0]["messages"][1]["content"];
            assert_eq!(sent[0]["type"], "text", "{sent}");
            assert!(sent[0]["text"].as_str().unwrap().contains("this picture"));
            assert_eq!(
                sent[1]["image_url"]["url"],
                format!("data:image/png;base64,{png}"),
                "{sent}"
            );
            use agent_client_protocol::v1::schema::{
                EmbeddedResource, EmbeddedResourceResource, TextResourceContents,
            };
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            let r = cx
                .send_request(PromptRequest::new(
                    sid,
                    vec![
                        ContentBlock::Text(TextContent::new("Summarise this file.")),
                        ContentBlock::Resource(EmbeddedResource::new(
                            EmbeddedResourceResource::TextResourceContents(
                                TextResourceContents::new(embedded, "file:///x/notes.md"),
                            ),
                        )),
                    ],
                ))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            // No request after the first carries a picture.
            for req in &server.requests()[1..] {
                assert!(
                    !req.to_string().contains("data:image"),
                    "an embedded file's words sent a picture: {req}"
                );
            }
            Ok(())
        })
        .await
        .unwrap();
    let _ = child.kill().await;
}

/// What an ACP permission answer cannot say by its option, a client adds
/// under `_meta.mm`: the hunks kept of an edit, and the reason for a no,
/// which reaches the model (mm asking a `task` helper sends both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_hunks_and_reason_in_meta_are_honoured() {
    let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 28\n", "line twenty-eight\n");
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "n.txt"})),
        call(
            "c1",
            "write_file",
            json!({"path": "n.txt", "content": after}),
        ),
        text("Wrote it."),
        call(
            "c2",
            "write_file",
            json!({"path": "m.txt", "content": "new\n"}),
        ),
        text("It was refused."),
    ]);
    let ws = Workspace::new();
    git(&ws.path(), &["init", "-q"]);
    ws.write("n.txt", &before);
    let url = server.url();
    let mut child = spawn_agent(&ws, &["-url", &url, "-no-harness"]);
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let root = ws.path();
    agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |_n: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let title = req.tool_call.fields.title.clone().unwrap_or_default();
                let (kind, meta) = if title.contains("n.txt") {
                    (
                        PermissionOptionKind::AllowOnce,
                        json!({"mm": {"hunks": [0]}}),
                    )
                } else {
                    (
                        PermissionOptionKind::RejectOnce,
                        json!({"mm": {"reason": "no new files today"}}),
                    )
                };
                let id = req
                    .options
                    .iter()
                    .find(|o| o.kind == kind)
                    .unwrap()
                    .option_id
                    .clone();
                responder.respond(
                    RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                        SelectedPermissionOutcome::new(id),
                    ))
                    .meta(meta.as_object().cloned()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let sid = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id
                .0
                .to_string();
            for p in ["number them", "make m"] {
                let r = cx.send_request(prompt(&sid, p)).block_task().await?;
                assert_eq!(r.stop_reason, StopReason::EndTurn);
            }
            Ok(())
        })
        .await
        .unwrap();
    // Only the first hunk was kept.
    let reqs = server.requests();
    assert_eq!(
        ws.read("n.txt"),
        before.replace("line 2\n", "line two\n"),
        "{:?}",
        tool_results(&reqs[2])
    );
    assert!(!ws.path().join("m.txt").exists());
    let refused = tool_results(&reqs[4])
        .into_iter()
        .find(|(id, _)| id == "c2")
        .unwrap()
        .1;
    assert!(refused.contains("no new files today"), "{refused}");
}
