//! The Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) over
//! the Bridge's task backend: an adapter, never a second backend
//! (ARCHITECTURE.md §6; seed 000 §26).
//!
//! When a call of `submit_agent_task` declares the extension, the task is
//! submitted exactly as by the tool and the call answers with a task
//! handle at once: the Bridge's task id, so a handle outlives a `serverfs`
//! restart and nothing is kept here. Then:
//!
//! | method | does |
//! |---|---|
//! | `tasks/get` | the task, re-checked against the current policy as `get_agent_task` does, as a [`DetailedTask`] |
//! | `tasks/update` | the human's response to the input request, applied as `respond_agent_approval` / `answer_agent_question` would |
//! | `tasks/cancel` | `cancel_agent_task` |
//!
//! Status mapping (the ServerFS status stays visible: first in
//! `statusMessage`, and as `_meta["serverfs/status"]`):
//!
//! | ServerFS | task |
//! |---|---|
//! | `queued`, `starting`, `running` | `working` |
//! | `waiting_for_approval`, `waiting_for_question` | `input_required`, the pending request as an elicitation form keyed by its request id ([`super::forms`]) |
//! | `succeeded` | `completed`, `result` the `get_agent_task` result of the task |
//! | `failed`, `interrupted` | `failed`, `error` a JSON-RPC error whose `data` holds the ServerFS code and the task |
//! | `cancelled` | `cancelled` |
//!
//! Refusals are JSON-RPC errors (`-32602`, `-32603` for the server's own
//! failures) whose message is `CODE: message` and whose `data` is
//! `{"error": {"code", "message"}}`, with the codes of the tools. Unlike
//! the extension's default, an answer to a request that is no longer
//! outstanding (resolved, stale, unknown) is refused rather than silently
//! ignored, and so is any request about a task this server would not let
//! the tools drive: a human's late answer is never dropped without a word.

use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, ElicitRequest, ElicitResult, GetTaskResult, InputRequest,
    InputRequests, JsonObject, MetaObject, Task, TaskPayload, TaskStatus as McpTaskStatus,
    UpdateTaskParams,
};
use serde_json::{Value, json};
use serverfs_protocol::ErrorCode;
use serverfs_protocol::bridge::{BridgeErrorCode, PendingInteraction, TaskStatus, TaskView};

use super::ToolOutput;
use super::agent_params::{CancelAgentTaskParams, SubmitAgentTaskParams};
use super::agent_results::AgentTaskView;
use super::error::{ToolCode, ToolError};
use super::forms;
use super::text::TextContent;
use crate::audit::AuditRecord;
use crate::service::{AgentService, HumanReach};

/// How often a client should poll `tasks/get`, in milliseconds.
const POLL_INTERVAL_MS: u64 = 1_000;

/// The `_meta` key carrying the ServerFS status of a task.
const STATUS_META_KEY: &str = "serverfs/status";

/// `submit_agent_task` as a task: submitted as by the tool, answered with
/// the handle once `tasks/get` resolves it.
///
/// # Errors
///
/// The tool's own refusals (`invalid arguments`, the policy, the Bridge's
/// codes), for the caller to answer as a tool error.
pub async fn submit(
    agent: &AgentService,
    params: SubmitAgentTaskParams,
    reach: HumanReach,
    audit: &AuditRecord,
) -> Result<CreateTaskResult, ToolError> {
    let submitted = agent.submit_agent_task(params, audit).await?;
    let view = agent
        .task_for_human(&submitted.task_id, reach, audit)
        .await?;
    Ok(CreateTaskResult::new(task(agent, &view.task)))
}

/// `tasks/get`.
///
/// # Errors
///
/// The refusals of `get_agent_task` (an unknown task, a workdir whose
/// agents are disabled now), as JSON-RPC errors.
pub async fn get(
    agent: &AgentService,
    task_id: &str,
    reach: HumanReach,
    text: TextContent,
    audit: &AuditRecord,
) -> Result<GetTaskResult, ToolError> {
    let view = agent.task_for_human(task_id, reach, audit).await?;
    audit.set(|a| a.status = Some(view.task.status.as_str()));
    let base = task(agent, &view.task);
    let payload = payload(&view, text)?;
    let mut result = GetTaskResult::new(DetailedTask::new(base, payload));
    let mut meta = MetaObject::new();
    meta.0.insert(
        STATUS_META_KEY.to_owned(),
        Value::from(view.task.status.as_str()),
    );
    result.meta = Some(meta);
    Ok(result)
}

/// `tasks/update`: each response answers the outstanding request its key
/// names (the Bridge's request id).
///
/// # Errors
///
/// A response that does not answer its request (`INVALID_APPROVAL_DECISION`,
/// `INVALID_QUESTION_ANSWER`), a key that is not the task's outstanding
/// request (`REQUEST_ALREADY_RESOLVED`, `REQUEST_STALE`,
/// `REQUEST_NOT_FOUND`), and the refusals of `get_agent_task`.
pub async fn update(
    agent: &AgentService,
    params: UpdateTaskParams,
    reach: HumanReach,
    audit: &AuditRecord,
) -> Result<(), ToolError> {
    let view = agent.task_for_human(&params.task_id, reach, audit).await?;
    for (key, response) in params.input_responses {
        let outstanding = view
            .task
            .pending_request
            .as_ref()
            .filter(|pending| pending.request_id() == key);
        let Some(pending) = outstanding else {
            return Err(agent.refusal_of_unpresented(&params.task_id, &key).await);
        };
        let response: ElicitResult = serde_json::from_value(response).map_err(|e| {
            ToolError::bridge(
                invalid_answer_code(pending),
                format!("the response to {key} is not an elicitation result: {e}"),
            )
        })?;
        // A dismissed input request decides nothing: it stays outstanding.
        if let Some(answer) = forms::decision(pending, response.action, response.content.as_ref())?
        {
            agent
                .apply_human_answer(&view.task, &key, answer, audit)
                .await?;
        }
    }
    Ok(())
}

/// `tasks/cancel`: `cancel_agent_task`.
///
/// # Errors
///
/// The refusals of `cancel_agent_task`.
pub async fn cancel(
    agent: &AgentService,
    task_id: String,
    audit: &AuditRecord,
) -> Result<(), ToolError> {
    agent
        .cancel_agent_task(CancelAgentTaskParams { task_id }, audit)
        .await
        .map(drop)
}

/// A refusal as the JSON-RPC error of a `tasks/*` request: `-32603` for
/// the server's own failures (its Bridge unreachable included), `-32602`
/// for everything the request itself asked wrongly.
pub fn error_data(error: ToolError) -> ErrorData {
    let internal = matches!(
        error.code,
        ToolCode::File(ErrorCode::InternalError)
            | ToolCode::Bridge(
                BridgeErrorCode::AgentBridgeUnavailable
                    | BridgeErrorCode::AgentBridgeProtocolError
                    | BridgeErrorCode::AgentBridgeError
            )
    );
    let (message, data) = error.into_parts();
    if internal {
        ErrorData::internal_error(message, Some(data))
    } else {
        ErrorData::invalid_params(message, Some(data))
    }
}

/// The code refusing a response that is no answer to `pending`.
fn invalid_answer_code(pending: &PendingInteraction) -> BridgeErrorCode {
    match pending {
        PendingInteraction::Approval(_) => BridgeErrorCode::InvalidApprovalDecision,
        PendingInteraction::Question(_) => BridgeErrorCode::InvalidQuestionAnswer,
    }
}

/// The task's base fields.
fn task(agent: &AgentService, view: &TaskView) -> Task {
    Task::new(
        view.task_id.clone(),
        status(view),
        iso8601(view.created_at),
        iso8601(view.updated_at),
    )
    .with_status_message(status_message(view))
    .with_ttl_ms(agent.task_lifetime_ms(view))
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// The task status of a ServerFS status.
fn status(view: &TaskView) -> McpTaskStatus {
    match view.status {
        TaskStatus::Queued | TaskStatus::Starting | TaskStatus::Running => McpTaskStatus::Working,
        TaskStatus::WaitingForApproval | TaskStatus::WaitingForQuestion => {
            if view.pending_request.is_some() {
                McpTaskStatus::InputRequired
            } else {
                // Between a request's answer and the status change.
                McpTaskStatus::Working
            }
        }
        TaskStatus::Succeeded => McpTaskStatus::Completed,
        TaskStatus::Failed | TaskStatus::Interrupted => McpTaskStatus::Failed,
        TaskStatus::Cancelled => McpTaskStatus::Cancelled,
    }
}

/// `<ServerFS status>: what it means`, for the human or the model.
fn status_message(view: &TaskView) -> String {
    let meaning = match view.status {
        TaskStatus::Queued => "accepted, not started yet".to_owned(),
        TaskStatus::Starting => "the agent is starting".to_owned(),
        TaskStatus::Running => "the agent is working".to_owned(),
        TaskStatus::WaitingForApproval => {
            "the agent waits for your approval: answer the input request".to_owned()
        }
        TaskStatus::WaitingForQuestion => {
            "the agent asks a question: answer the input request".to_owned()
        }
        TaskStatus::Succeeded => "finished; the result is the agent's final response".to_owned(),
        TaskStatus::Cancelled => "cancelled".to_owned(),
        TaskStatus::Failed | TaskStatus::Interrupted => {
            match (&view.error_code, &view.error_message) {
                (Some(code), Some(message)) => format!("{}: {message}", code.as_str()),
                (Some(code), None) => code.as_str().to_owned(),
                (None, _) => "stopped without a result".to_owned(),
            }
        }
    };
    format!("{}: {meaning}", view.status.as_str())
}

/// The status-specific part of the task (its status as [`status`] maps).
fn payload(view: &AgentTaskView, text: TextContent) -> Result<TaskPayload, ToolError> {
    Ok(match view.task.status {
        TaskStatus::Queued | TaskStatus::Starting | TaskStatus::Running => TaskPayload::Working,
        TaskStatus::WaitingForApproval | TaskStatus::WaitingForQuestion => {
            match &view.task.pending_request {
                Some(pending) => {
                    let form = forms::form(&view.task, pending)?;
                    let mut input_requests = InputRequests::new();
                    input_requests.insert(
                        pending.request_id().to_owned(),
                        InputRequest::Elicitation(ElicitRequest::new(form)),
                    );
                    TaskPayload::InputRequired { input_requests }
                }
                None => TaskPayload::Working,
            }
        }
        TaskStatus::Succeeded => {
            // The result `get_agent_task` gives for the task, whole.
            let result = view.clone().into_tool_result(text)?;
            TaskPayload::Completed {
                result: object(serde_json::to_value(result))?,
            }
        }
        TaskStatus::Failed | TaskStatus::Interrupted => {
            let code = view
                .task
                .error_code
                .map_or("AGENT_PROVIDER_ERROR", |code| code.as_str());
            let message = view
                .task
                .error_message
                .clone()
                .unwrap_or_else(|| format!("the task ended {}", view.task.status.as_str()));
            TaskPayload::Failed {
                error: object(Ok(json!({
                    "code": rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                    "message": format!("{code}: {message}"),
                    "data": {
                        "error": {"code": code, "message": message},
                        "task": view,
                    },
                })))?,
            }
        }
        TaskStatus::Cancelled => TaskPayload::Cancelled,
    })
}

/// `value` as a JSON object.
fn object(value: Result<Value, serde_json::Error>) -> Result<JsonObject, ToolError> {
    match value {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) | Err(_) => Err(ToolError::internal("a task payload is not a JSON object")),
    }
}

/// An epoch-millisecond time as ISO 8601 UTC (`2026-09-20T10:30:00.123Z`);
/// a time before the epoch (never written by the Bridge) as the epoch.
fn iso8601(epoch_ms: i64) -> String {
    let ms = epoch_ms.max(0);
    let seconds = serverfs_fs::rfc3339_seconds(ms / 1_000);
    let whole = seconds.strip_suffix('Z').unwrap_or(&seconds);
    format!("{whole}.{:03}Z", ms % 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_is_utc_with_milliseconds() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_790_000_000_999), "2026-09-21T14:13:20.999Z");
        assert_eq!(iso8601(-5), "1970-01-01T00:00:00.000Z");
    }
}
