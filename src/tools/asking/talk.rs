//! One prompt put to the child agent over ACP: the session, its updates
//! as they come, its permission requests answered, its answer.

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) async fn talk(
    name: &str,
    prompt: &str,
    asker: &Asker,
    grant: Grant,
    progress: Option<Progress>,
    cancel: &CancellationToken,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) -> Result<Answer, Failure> {
    let text: Shared<String> = Arc::default();
    let last: Shared<Instant> = Arc::new(Mutex::new(Instant::now()));
    let name = name.to_string();
    let (t1, l1, p1) = (text.clone(), last.clone(), progress.clone());
    let p3 = progress.clone();
    let (l2, p2) = (last.clone(), progress);
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let root = asker.root.clone();
    let root_for_diff = asker.root.clone();
    let idle = asker.idle;
    let prompt = prompt.to_string();
    let cancel = cancel.clone();
    let outcome: Shared<Option<Result<Answer, Failure>>> = Arc::default();
    let out = outcome.clone();
    let run = agent_client_protocol::Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                if let Ok(mut l) = l1.lock() {
                    *l = Instant::now();
                }
                note(&n.update, &t1, p1.as_ref());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                if let Ok(mut l) = l2.lock() {
                    *l = Instant::now();
                }
                // Asked with all it would do (every line of a command, an
                // edit's diff), never its one-line title alone.
                let asked = asked(&req, &root_for_diff);
                let title = req
                    .tool_call
                    .fields
                    .title
                    .clone()
                    .unwrap_or_else(|| "a tool call".into());
                let (decision, verdict) = grant.decide(asked).await;
                if let Ok(mut l) = l2.lock() {
                    *l = Instant::now();
                }
                let kinds: &[PermissionOptionKind] = match decision {
                    ApprovalDecision::Always => &[
                        PermissionOptionKind::AllowAlways,
                        PermissionOptionKind::AllowOnce,
                    ],
                    ApprovalDecision::Yes | ApprovalDecision::Hunks { .. } => &[
                        PermissionOptionKind::AllowOnce,
                        PermissionOptionKind::AllowAlways,
                    ],
                    ApprovalDecision::No { .. } => &[
                        PermissionOptionKind::RejectOnce,
                        PermissionOptionKind::RejectAlways,
                    ],
                };
                let pick = kinds.iter().find_map(|k| {
                    req.options
                        .iter()
                        .find(|o| o.kind == *k)
                        .map(|o| o.option_id.clone())
                });
                if let Some(p) = &p2 {
                    let _ = p.send(ChildNote::Step(format!("{verdict}: {title}")));
                }
                let outcome = match pick {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                // The reason for a no and the hunks of a partial yes ride
                // along, so the child's model hears what the user said.
                responder.respond(RequestPermissionResponse::new(outcome).meta(decision.meta()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let r = converse(
                &cx,
                &name,
                &root,
                &prompt,
                (&text, &last, p3.as_ref()),
                idle,
                &cancel,
            )
            .await;
            if let Ok(mut o) = out.lock() {
                *o = Some(r);
            }
            Ok(())
        });
    let ended = run.await;
    let got = outcome.lock().ok().and_then(|mut o| o.take());
    match (got, ended) {
        (Some(r), _) => r,
        (None, _) => Err(Failure::Gone),
    }
}

#[allow(clippy::too_many_arguments)]
async fn converse(
    cx: &ConnectionTo<Agent>,
    name: &str,
    root: &Path,
    prompt: &str,
    (text, last, progress): (&Shared<String>, &Shared<Instant>, Option<&Progress>),
    idle: Duration,
    cancel: &CancellationToken,
) -> Result<Answer, Failure> {
    let gone = |e: agent_client_protocol::Error| {
        if agent_client_protocol::is_connection_terminated(&e)
            || agent_client_protocol::is_incoming_transport_closed(&e)
        {
            Failure::Gone
        } else {
            Failure::Said(format!("agent {name}: {}", error_text(&e)))
        }
    };
    // Starting is watched like answering: a child that never gets going
    // is stopped, and a cancel is heard.
    let started = async {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .map_err(gone)?;
        cx.send_request(NewSessionRequest::new(root.to_path_buf()))
            .block_task()
            .await
            .map_err(gone)
    };
    let started = tokio::select! {
        s = started => s?,
        _ = cancel.cancelled() => return Err(Failure::Said(format!("agent {name}: cancelled"))),
        _ = tokio::time::sleep(idle) => return Err(Failure::Said(format!(
            "agent {name} did not start within {} s: stopped it",
            idle.as_secs()
        ))),
    };
    let session = started.session_id.0.to_string();
    if let Some(p) = progress {
        let _ = p.send(ChildNote::Session(session.clone()));
    }
    let sid = session.clone();
    // Marked as asked by an agent: its text is a question, never a command.
    let mut meta = serde_json::Map::new();
    meta.insert("mm".into(), serde_json::json!({"asked": true}));
    let request = cx.send_request(
        PromptRequest::new(
            sid.clone(),
            vec![ContentBlock::Text(TextContent::new(prompt.to_string()))],
        )
        .meta(meta),
    );
    let mut response = std::pin::pin!(request.block_task());
    let mut cancelled_at: Option<Instant> = None;
    let response = loop {
        tokio::select! {
            r = &mut response => break r,
            _ = cancel.cancelled(), if cancelled_at.is_none() => {
                let _ = cx.send_notification(
                    agent_client_protocol::v1::schema::CancelNotification::new(sid.clone()),
                );
                cancelled_at = Some(Instant::now());
            }
            _ = tokio::time::sleep(Duration::from_millis(250)) => {
                if cancelled_at.is_some_and(|t| t.elapsed() > Duration::from_secs(5)) {
                    return Err(Failure::Said(format!("agent {name}: cancelled")));
                }
                let quiet = last.lock().map(|l| l.elapsed()).unwrap_or_default();
                if quiet > idle {
                    return Err(Failure::Said(format!(
                        "agent {name} sent nothing for {} s: stopped it",
                        idle.as_secs()
                    )));
                }
            }
        }
    };
    let response = response.map_err(gone)?;
    let meta = response
        .meta
        .as_ref()
        .and_then(|m| m.get("mm"))
        .cloned()
        .unwrap_or_default();
    let answer = meta["answer"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| text.lock().map(|t| t.clone()).unwrap_or_default());
    let written: Vec<String> = meta["written"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|p| p.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    match response.stop_reason {
        StopReason::EndTurn => Ok(Answer {
            text: answer,
            written,
            session,
        }),
        // What it wrote before its rounds ran out is often the answer (a
        // real 1.5B reviewer found both bugs, then read the file again
        // until the loop guard stopped it): it is the result, said to be
        // cut, not an error the asker must not repeat.
        StopReason::MaxTurnRequests if !answer.trim().is_empty() => Ok(Answer {
            text: format!(
                "{}\n\n[agent {name} ran out of rounds before it finished: this is what it had written]",
                answer.trim()
            ),
            written,
            session,
        }),
        StopReason::Cancelled => Err(Failure::Said(format!("agent {name}: cancelled"))),
        StopReason::MaxTokens => Err(Failure::Said(format!(
            "agent {name}: its answer was cut off by max_tokens{}",
            partial(&answer)
        ))),
        StopReason::MaxTurnRequests => Err(Failure::Said(format!(
            "agent {name}: ran out of rounds before it answered{}",
            partial(&answer)
        ))),
        _ => Err(Failure::Said(format!("agent {name}: refused to answer"))),
    }
}

fn partial(answer: &str) -> String {
    if answer.trim().is_empty() {
        String::new()
    } else {
        format!("; what it wrote:\n{answer}")
    }
}

fn error_text(e: &agent_client_protocol::Error) -> String {
    match &e.data {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => format!("{} ({v})", e.message),
        None => e.message.clone(),
    }
}

/// What a child's permission request would do, in full: its title, then
/// each part of its content (a command's every line, an edit as a
/// unified diff against the file as it is); an edit of one file, or a
/// command, also as such, so the user is asked as for the asker's own.
fn asked(req: &RequestPermissionRequest, root: &Path) -> Asked {
    use agent_client_protocol::v1::schema::{ToolCallContent, ToolKind};
    let fields = &req.tool_call.fields;
    let mut out = Asked {
        what: fields.title.clone().unwrap_or_else(|| "a tool call".into()),
        ..Asked::default()
    };
    let mut edits = Vec::new();
    let mut texts = Vec::new();
    for part in fields.content.iter().flatten() {
        match part {
            ToolCallContent::Content(c) => {
                if let ContentBlock::Text(t) = &c.content {
                    out.what.push_str(&format!("\n{}", t.text));
                    texts.push(t.text.clone());
                }
            }
            ToolCallContent::Diff(d) => {
                let path = d.path.strip_prefix(root).unwrap_or(&d.path);
                let path = path.to_string_lossy().replace('\\', "/");
                let before = d.old_text.clone().unwrap_or_default();
                out.what.push_str(&format!(
                    "\n{}",
                    crate::diff::unified(&path, &before, &d.new_text, 3, 400)
                ));
                edits.push(crate::tools::fs::file_change(
                    &path,
                    d.old_text.as_deref(),
                    &d.new_text,
                ));
            }
            _ => {}
        }
    }
    // Only an edit inside the root is shown as one of the asker's files.
    if edits.len() == 1
        && texts.is_empty()
        && fields.content.iter().flatten().all(|p| match p {
            ToolCallContent::Diff(d) => d.path.starts_with(root),
            _ => true,
        })
    {
        out.edit = edits.pop();
    }
    if fields.kind == Some(ToolKind::Execute) && edits.is_empty() && texts.len() == 1 {
        // mm's own request: the command, a blank line, the reason.
        let t = &texts[0];
        out.command = Some(match t.rsplit_once("\n\n") {
            Some((cmd, why)) if !why.contains('\n') => (cmd.to_string(), why.to_string()),
            _ => (t.clone(), String::new()),
        });
    }
    out.always = req
        .options
        .iter()
        .find(|o| o.kind == PermissionOptionKind::AllowAlways)
        .map(|o| o.name.clone());
    out
}

/// Collects the answer's text and says what the child does.
fn note(u: &SessionUpdate, text: &Shared<String>, progress: Option<&Progress>) {
    match u {
        SessionUpdate::AgentMessageChunk(c) => {
            if let ContentBlock::Text(t) = &c.content
                && let Ok(mut s) = text.lock()
            {
                s.push_str(&t.text);
            }
        }
        SessionUpdate::ToolCallUpdate(u) => {
            let Some(p) = progress else { return };
            let status = u.fields.status;
            if matches!(
                status,
                Some(ToolCallStatus::Completed | ToolCallStatus::Failed)
            ) {
                let title = u.fields.title.clone().unwrap_or_else(|| "tool".into());
                let mark = if status == Some(ToolCallStatus::Failed) {
                    "✗"
                } else {
                    "✓"
                };
                let _ = p.send(ChildNote::Step(format!("{mark} {title}")));
            }
        }
        _ => {}
    }
}
