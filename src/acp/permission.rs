//! An approval question as a `session/request_permission` request, and
//! the client's answer as mm's decision; a proposed plan put to the
//! client the same way.

use super::*;

pub(super) const ALLOW: &str = "allow";
pub(super) const ALWAYS: &str = "always";
pub(super) const REJECT: &str = "reject";

pub(super) fn permission_request(
    session: &str,
    call: agent_client_protocol::v1::schema::ToolCallUpdate,
    request: &ApprovalRequest,
) -> RequestPermissionRequest {
    let always = match &request.kind {
        ApprovalKind::Exec { scope, .. } if !scope.is_empty() => {
            format!("Always allow {scope} in this session")
        }
        ApprovalKind::Exec { .. } => "Always allow this command in this session".into(),
        ApprovalKind::Edit { change } => {
            format!("Always allow edits to {} in this session", change.path)
        }
    };
    RequestPermissionRequest::new(
        session.to_string(),
        call,
        vec![
            PermissionOption::new(ALLOW, "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(ALWAYS, always, PermissionOptionKind::AllowAlways),
            PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        ],
    )
}

/// The client's answer as mm's decision: the option chosen, made exact
/// by what `_meta.mm` adds (the reason for a no, the hunks of a yes).
pub(super) fn decision_of(
    response: &agent_client_protocol::v1::schema::RequestPermissionResponse,
    _request: &ApprovalRequest,
) -> ApprovalDecision {
    let plain = match &response.outcome {
        RequestPermissionOutcome::Selected(s) => match &*s.option_id.0 {
            ALLOW => ApprovalDecision::Yes,
            ALWAYS => ApprovalDecision::Always,
            _ => ApprovalDecision::No {
                reason: Some("the user rejected it".into()),
            },
        },
        _ => {
            return ApprovalDecision::No {
                reason: Some("cancelled".into()),
            };
        }
    };
    plain.with_meta(response.meta.as_ref())
}

pub(super) const CARRY_OUT: &str = "carry-out";
pub(super) const SET_ASIDE: &str = "set-aside";

/// Asks the client whether to carry out the plan a plan-mode turn
/// proposed (as a permission request on a "plan" tool call that shows
/// the steps). Yes: plan mode ends and the plan runs as the same prompt's
/// next turn. No, or no answer: the prompt ends with the plan.
pub(super) async fn put_plan(
    id: String,
    live: Arc<Live>,
    cx: ConnectionTo<Client>,
    steps: Vec<String>,
    responder: Responder<PromptResponse>,
    result: OpResult,
) {
    use agent_client_protocol::v1::schema::{
        Content, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
        ToolKind,
    };
    let call_id = format!("mm_plan_{}", uuid_like());
    let shown = crate::agent::planning::numbered(&steps);
    let content = vec![ToolCallContent::Content(Content::new(updates::said_block(
        shown.clone(),
    )))];
    let call = ToolCall::new(call_id.clone(), "Carry out this plan?")
        .kind(ToolKind::Think)
        .status(ToolCallStatus::Pending)
        .content(content.clone());
    let _ = cx.send_notification(SessionNotification::new(
        id.clone(),
        SessionUpdate::ToolCall(call),
    ));
    let fields = ToolCallUpdateFields::new()
        .title("Carry out this plan?".to_string())
        .content(content);
    let req = RequestPermissionRequest::new(
        id.clone(),
        ToolCallUpdate::new(call_id.clone(), fields),
        vec![
            PermissionOption::new(CARRY_OUT, "Carry it out", PermissionOptionKind::AllowOnce),
            PermissionOption::new(SET_ASIDE, "Set it aside", PermissionOptionKind::RejectOnce),
        ],
    );
    let yes = matches!(
        cx.send_request(req).block_task().await,
        Ok(r) if matches!(&r.outcome, RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == CARRY_OUT)
    );
    let status = if yes {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    let _ = cx.send_notification(SessionNotification::new(
        id.clone(),
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new().status(status),
        )),
    ));
    if !yes {
        let _ = answer(responder, &result);
        return;
    }
    // Out of plan mode, as the client will show.
    live.planning
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let _ = cx.send_notification(SessionNotification::new(
        id,
        SessionUpdate::CurrentModeUpdate(
            agent_client_protocol::v1::schema::CurrentModeUpdate::new(DEFAULT_MODE),
        ),
    ));
    let Ok(mut pending) = live.pending.lock() else {
        let _ = answer(responder, &result);
        return;
    };
    match live.ops.submit(Op::RunPlan { steps }) {
        Some(op) => {
            *pending = Some(Pending {
                op,
                responder,
                command: false,
                plan: false,
            });
        }
        None => {
            let _ = answer(responder, &result);
        }
    }
}
