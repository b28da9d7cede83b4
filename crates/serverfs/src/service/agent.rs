//! The agent tools: a thin client of the Agent Bridge (spec-agent-bridge.md
//! §1). The MCP server never runs an agent (ARCHITECTURE.md invariant 6);
//! it authorizes each request against its own configuration, then asks the
//! Bridge over the private socket.
//!
//! * `submit_agent_task` checks the workdir, agent mode, runtime allowlist,
//!   profile and the working directory (through the confined kernel)
//!   before anything reaches the Bridge.
//! * Every task-id tool first reads the task and re-checks it against the
//!   current configuration with the submit policy (agent mode, runtime,
//!   the task's profile), so a task of a workdir the operator has since
//!   disabled or downgraded cannot be driven any more. Cancelling needs only
//!   the workdir to be configured still: stopping is always allowed.
//! * `get_agent_task` and `read_agent_task_events` may long-poll
//!   (`wait_seconds`, at most 45): they answer as soon as the task or its
//!   event cursor moves — and `get_agent_task` at once when the task
//!   waits for the client's own answer, which no wait can bring — and no
//!   later than the wait, however slow the Bridge.
//! * A Bridge that cannot be reached is `AGENT_BRIDGE_UNAVAILABLE` within
//!   the configured timeout, never a hang.
//! * Who answers a pending approval or question is the workdir's
//!   `approvals` policy (issue 18): the answering tools refuse with
//!   `APPROVAL_REQUIRES_HUMAN` where the client's human decides, whose
//!   answer (an elicitation form, `tasks/update`) arrives through
//!   [`AgentService::apply_human_answer`] and the same Bridge calls.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serverfs_config::{AgentMode, AgentRuntime, AgentSettings, ApprovalPolicy};
use serverfs_fs::{EntryKind, FsError};
use serverfs_protocol::ErrorCode;
use serverfs_protocol::bridge::client::{BridgeClient, ClientOptions};
use serverfs_protocol::bridge::{
    AgentProfile, BridgeCall, BridgeErrorCode, InteractionKind, InteractionResolved, ModelCatalog,
    QuestionAnswer, ResultStorage, RuntimeListParams, RuntimeListResult, RuntimeModelsParams,
    TaskApprovalRespondParams, TaskCancelParams, TaskCancelResult, TaskEventsParams,
    TaskEventsResult, TaskGetParams, TaskMessageSendParams, TaskMessageSendResult,
    TaskQuestionAnswerParams, TaskResultChunk, TaskResultReadParams, TaskSubmitParams,
    TaskSubmitResult, TaskView,
};
use serverfs_protocol::display;
use tokio::time::Instant;

use super::approvals::{Answerer, HumanAnswer, HumanReach, requires_human};
use super::call::{CallControl, OnCancel, Progress};
use super::files::run_blocking;
use super::registry::{WorkdirHandle, WorkdirRegistry};
use crate::audit::AuditRecord;
use crate::mcp::agent_params::{
    AnswerAgentQuestionParams, CancelAgentTaskParams, GetAgentTaskParams, ListAgentModelsParams,
    MAX_WAIT_SECONDS, ProfileParam, ReadAgentTaskEventsParams, ReadAgentTaskResultParams,
    RespondAgentApprovalParams, SendAgentMessageParams, SubmitAgentTaskParams,
};
use crate::mcp::agent_results::{AgentRuntimeList, AgentTaskView, Answering, WorkdirApprovals};
use crate::mcp::error::ToolError;

/// How often a long-poll looks at the task again.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Upper bound of the connect timeout (the call timeout bounds it too).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What a task-id tool is about to do, which decides how much of the
/// current policy the task must still satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskUse {
    /// Read or drive the task: the full submit policy, with its profile.
    Drive,
    /// Stop it: allowed while its workdir is configured, whatever the
    /// workdir's agent policy has become, so that an operator's downgrade
    /// never leaves a task impossible to stop.
    Stop,
}

/// The agent side of the MCP server.
#[derive(Debug, Clone)]
pub struct AgentService {
    workdirs: WorkdirRegistry,
    client: Arc<BridgeClient>,
    /// How long the Bridge keeps a finished task (`retention_hours`).
    retention: Duration,
}

fn bridge_error(code: BridgeErrorCode, message: &str) -> ToolError {
    ToolError::bridge(code, message.to_owned())
}

impl AgentService {
    /// A client of the Bridge at `agent.bridge_socket`, each call bounded by
    /// `agent.bridge_timeout_ms`.
    pub fn new(workdirs: WorkdirRegistry, agent: &AgentSettings) -> AgentService {
        let call_timeout = Duration::from_millis(agent.bridge_timeout_ms);
        let options = ClientOptions {
            connect_timeout: CONNECT_TIMEOUT.min(call_timeout),
            call_timeout,
            ..ClientOptions::default()
        };
        AgentService {
            workdirs,
            client: Arc::new(BridgeClient::new(agent.bridge_socket.clone(), options)),
            retention: Duration::from_secs(agent.retention_seconds),
        }
    }

    /// One Bridge call; its failure as the client sees it.
    ///
    /// Every string of the result that is not an identifier has its hidden
    /// characters (controls, bidirectional and other format characters)
    /// shown escaped before anything here reads it — tool results, forms,
    /// task messages alike (`serverfs_protocol::display`, issue 27): the
    /// Bridge escapes what it stores, but it is another process, and tasks
    /// stored before it did hold raw text. Text it escaped holds no hidden
    /// character and passes unchanged.
    async fn call<P: BridgeCall>(&self, params: P) -> Result<P::Result, ToolError> {
        let result = self
            .client
            .call(params)
            .await
            .map_err(|error| ToolError::bridge(error.code(), error.to_string()))?;
        display::escaped(&result, display::escape_if_hidden)
            .map_err(|e| ToolError::internal(format!("a Bridge result did not re-encode: {e}")))
    }

    /// Runtimes any agent-enabled workdir allows.
    fn allowlisted_runtimes(&self) -> BTreeSet<String> {
        self.workdirs
            .iter()
            .filter(|w| w.config.agent_mode.is_enabled())
            .flat_map(|w| w.config.agent_runtimes.iter())
            .map(|runtime| runtime.as_str().to_owned())
            .collect()
    }

    /// `list_agent_runtimes`: the Bridge's runtimes that some workdir
    /// allows (no Bridge call when none is allowed), and who answers
    /// approvals in each agent-enabled workdir for this client.
    pub async fn list_agent_runtimes(
        &self,
        _audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<AgentRuntimeList, ToolError> {
        let approvals = self
            .workdirs
            .iter()
            .filter(|w| w.config.agent_mode.is_enabled())
            .map(|w| WorkdirApprovals {
                workdir: w.config.alias.as_str().to_owned(),
                approvals: w.config.approvals.into(),
                answered_by: Answerer::of(w.config.approvals, call.reach()).into(),
            })
            .collect();
        let allowed = self.allowlisted_runtimes();
        let mut listed = if allowed.is_empty() {
            RuntimeListResult {
                runtimes: Vec::new(),
            }
        } else {
            self.call(RuntimeListParams {}).await?
        };
        listed
            .runtimes
            .retain(|runtime| allowed.contains(&runtime.name));
        Ok(AgentRuntimeList { listed, approvals })
    }

    /// `list_agent_models`; with any advice argument, the submit checks run
    /// first and the normalized path is forwarded.
    pub async fn list_agent_models(
        &self,
        params: ListAgentModelsParams,
        audit: &AuditRecord,
    ) -> Result<ModelCatalog, ToolError> {
        audit.set(|a| a.runtime = Some(params.runtime.clone()));
        if !self.allowlisted_runtimes().contains(&params.runtime) {
            return Err(bridge_error(
                BridgeErrorCode::AgentRuntimeNotAllowed,
                "no workdir allows this runtime; see list_workdirs",
            ));
        }
        let advice = params.workdir.is_some()
            || params.task_prompt.is_some()
            || !params.path.is_empty()
            || params.profile != ProfileParam::WorkspaceWrite;
        let mut request = RuntimeModelsParams {
            runtime: params.runtime.clone(),
            workdir: None,
            task_prompt: None,
            path: None,
            profile: None,
        };
        if advice {
            let (Some(workdir), Some(prompt)) = (params.workdir, params.task_prompt) else {
                return Err(bridge_error(
                    BridgeErrorCode::InvalidRequest,
                    "model advice requires workdir and task_prompt",
                ));
            };
            let cwd = self
                .authorize_submit(
                    &workdir,
                    &params.runtime,
                    params.profile,
                    &params.path,
                    audit,
                )
                .await?;
            request.workdir = Some(workdir);
            request.task_prompt = Some(prompt);
            request.path = Some(cwd);
            request.profile = Some(params.profile.as_str().to_owned());
        }
        self.call(request).await
    }

    /// `submit_agent_task`: authorized here, then submitted; returns the
    /// task id without waiting for the task.
    pub async fn submit_agent_task(
        &self,
        params: SubmitAgentTaskParams,
        audit: &AuditRecord,
    ) -> Result<TaskSubmitResult, ToolError> {
        audit.set(|a| a.runtime = Some(params.runtime.clone()));
        let cwd = self
            .authorize_submit(
                &params.workdir,
                &params.runtime,
                params.profile,
                &params.path,
                audit,
            )
            .await?;
        let submitted = self
            .call(TaskSubmitParams {
                runtime: params.runtime,
                workdir: params.workdir,
                path: cwd,
                profile: params.profile.as_str().to_owned(),
                prompt: params.prompt,
                model: params.model,
                continue_from_task_id: params.continue_from_task_id,
                correlation_id: params.correlation_id,
                idempotency_key: params.idempotency_key,
            })
            .await?;
        audit.set(|a| {
            a.task_id = Some(submitted.task_id.clone());
            a.status = Some(submitted.status.as_str());
        });
        Ok(submitted)
    }

    /// The MCP-side submit checks (spec §1.4), in order: workdir, agent
    /// mode, runtime, profile, then the working directory through the
    /// confined kernel. Returns the normalized relative cwd.
    async fn authorize_submit(
        &self,
        alias: &str,
        runtime: &str,
        profile: ProfileParam,
        path: &str,
        audit: &AuditRecord,
    ) -> Result<String, ToolError> {
        let workdir = self.workdirs.get(alias).ok_or_else(|| {
            bridge_error(
                BridgeErrorCode::WorkdirNotFound,
                "not a configured workdir; call list_workdirs",
            )
        })?;
        audit.set(|a| a.workdir = Some(alias.to_owned()));
        check_agent_policy(&workdir, runtime, profile)?;
        let cwd = workdir
            .fs
            .parse_path(path)
            .map_err(|e| ToolError::fs(e, alias, path))?;
        audit.set(|a| a.path = Some(cwd.as_string()));
        let entry = run_blocking(&workdir, &cwd, |w, p| w.fs.stat(p)).await?;
        match entry.kind {
            EntryKind::Directory => Ok(cwd.as_string()),
            // `stat` describes a final symlink instead of following it; as
            // a working directory it would be followed, so it is refused
            // with the code every directory-opening tool gives it.
            EntryKind::Symlink => Err(ToolError::fs(FsError::Symlink, alias, &cwd.as_string())),
            EntryKind::File | EntryKind::Other => Err(ToolError {
                code: ErrorCode::NotADirectory.into(),
                message: format!("{alias}:{} is not a directory", cwd.as_string()),
            }),
        }
    }

    /// Reads the task and re-checks it against the current configuration
    /// for `purpose`.
    async fn authorized_task(
        &self,
        task_id: &str,
        purpose: TaskUse,
        audit: &AuditRecord,
    ) -> Result<TaskView, ToolError> {
        audit.set(|a| a.task_id = Some(task_id.to_owned()));
        let task = self
            .call(TaskGetParams {
                task_id: task_id.to_owned(),
            })
            .await?;
        self.recheck(&task, purpose)?;
        audit.set(|a| {
            a.workdir = Some(task.workdir_alias.clone());
            a.runtime = Some(task.runtime.clone());
            a.status = Some(task.status.as_str());
        });
        Ok(task)
    }

    fn recheck(&self, task: &TaskView, purpose: TaskUse) -> Result<(), ToolError> {
        let workdir = self.workdirs.get(&task.workdir_alias).ok_or_else(|| {
            bridge_error(
                BridgeErrorCode::WorkdirNotFound,
                "the task's workdir is no longer configured",
            )
        })?;
        match purpose {
            TaskUse::Drive => {
                check_agent_policy(&workdir, &task.runtime, profile_param(task.profile))
            }
            TaskUse::Stop => Ok(()),
        }
    }

    /// `get_agent_task`, optionally waiting for a change: a wait the client
    /// can cancel, with a progress heartbeat while it lasts.
    pub async fn get_agent_task(
        &self,
        params: GetAgentTaskParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<AgentTaskView, ToolError> {
        let task = self.wait_for_task(params, audit, call).await?;
        Ok(self.with_answering(task, call.reach()))
    }

    /// The task of `get_agent_task`, after its wait.
    async fn wait_for_task(
        &self,
        params: GetAgentTaskParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<TaskView, ToolError> {
        let deadline = wait_deadline(params.wait_seconds)?;
        let first = self
            .authorized_task(&params.task_id, TaskUse::Drive, audit)
            .await?;
        // Nothing will change while the task waits for this client's answer
        // (or after it ended): answer at once rather than hold the caller.
        if first.status.is_terminal() || first.pending_request_id.is_some() {
            return Ok(first);
        }
        let wait = async {
            let mut latest = first.clone();
            while Instant::now() + POLL_INTERVAL <= deadline {
                tokio::time::sleep(POLL_INTERVAL).await;
                let polled = self.call(TaskGetParams {
                    task_id: params.task_id.clone(),
                });
                // A slow Bridge must not hold the caller past its wait: the
                // view already read is the answer then.
                let Ok(polled) = tokio::time::timeout_at(deadline, polled).await else {
                    break;
                };
                latest = polled?;
                if moved(&first, &latest) {
                    break;
                }
            }
            Ok(latest)
        };
        let latest = call
            .watch(
                wait,
                OnCancel::Abandon,
                heartbeat(Instant::now(), params.wait_seconds),
            )
            .await?;
        audit.set(|a| a.status = Some(latest.status.as_str()));
        Ok(latest)
    }

    /// `read_agent_task_events`, optionally waiting for a new event: a wait
    /// the client can cancel, with a progress heartbeat while it lasts.
    pub async fn read_agent_task_events(
        &self,
        params: ReadAgentTaskEventsParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<TaskEventsResult, ToolError> {
        let deadline = wait_deadline(params.wait_seconds)?;
        let task = self
            .authorized_task(&params.task_id, TaskUse::Drive, audit)
            .await?;
        let request = TaskEventsParams {
            task_id: params.task_id,
            after_event_id: Some(params.after_event_id),
            limit: Some(params.limit),
        };
        let wait = self.wait_for_events(request, task.status.is_terminal(), deadline);
        let page = call
            .watch(
                wait,
                OnCancel::Abandon,
                heartbeat(Instant::now(), params.wait_seconds),
            )
            .await?;
        audit.set(|a| a.returned = Some(page.events.len() as u64));
        Ok(page)
    }

    /// The first page of `request` with an event, or the last one read by
    /// `deadline`; `finished` says the task had ended before the first.
    async fn wait_for_events(
        &self,
        request: TaskEventsParams,
        finished: bool,
        deadline: Instant,
    ) -> Result<TaskEventsResult, ToolError> {
        let mut page = self.call(request.clone()).await?;
        let mut finished = finished;
        // Every call in the loop is bounded by what is left of the wait (a
        // slow Bridge must not hold the caller past it); the page already
        // read is the answer then.
        while page.events.is_empty() && !finished && Instant::now() + POLL_INTERVAL <= deadline {
            tokio::time::sleep(POLL_INTERVAL).await;
            let Ok(read) = tokio::time::timeout_at(deadline, self.call(request.clone())).await
            else {
                break;
            };
            page = read?;
            if !page.events.is_empty() {
                break;
            }
            let now = self.call(TaskGetParams {
                task_id: request.task_id.clone(),
            });
            let Ok(now) = tokio::time::timeout_at(deadline, now).await else {
                break;
            };
            finished = now?.status.is_terminal();
            if finished {
                // The task ended after the empty read: its terminal events
                // are stored by now, so read once more rather than answer
                // an empty page for a finished task.
                let Ok(read) = tokio::time::timeout_at(deadline, self.call(request.clone())).await
                else {
                    break;
                };
                page = read?;
            }
        }
        Ok(page)
    }

    /// `read_agent_task_result`.
    pub async fn read_agent_task_result(
        &self,
        params: ReadAgentTaskResultParams,
        audit: &AuditRecord,
    ) -> Result<TaskResultChunk, ToolError> {
        let task = self
            .authorized_task(&params.task_id, TaskUse::Drive, audit)
            .await?;
        // The Bridge's own refusal says only "not retrievable"; say where
        // the response is instead (issue 17).
        match &task.result {
            None => {
                return Err(bridge_error(
                    BridgeErrorCode::AgentResultNotRetrievable,
                    &format!(
                        "task {} has no result yet (status {}); poll get_agent_task until it \
                         ends",
                        task.task_id,
                        task.status.as_str()
                    ),
                ));
            }
            Some(result) if result.storage == ResultStorage::Inline => {
                return Err(bridge_error(
                    BridgeErrorCode::AgentResultNotRetrievable,
                    &format!(
                        "the result of task {} is inline: it is the whole final_response of \
                         get_agent_task ({} bytes); read_agent_task_result reads only results \
                         too large for it (final_response_truncated: true)",
                        task.task_id, result.size_bytes
                    ),
                ));
            }
            Some(_) => {}
        }
        let chunk = self
            .call(TaskResultReadParams {
                task_id: params.task_id,
                offset_bytes: Some(params.offset_bytes),
                max_bytes: Some(params.max_bytes),
            })
            .await?;
        audit.set(|a| a.bytes_returned = Some(chunk.text.len() as u64));
        Ok(chunk)
    }

    /// `respond_agent_approval`: the model's answer, where the workdir
    /// lets the model decide.
    pub async fn respond_agent_approval(
        &self,
        params: RespondAgentApprovalParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<InteractionResolved, ToolError> {
        let task = self
            .authorized_task(&params.task_id, TaskUse::Drive, audit)
            .await?;
        audit.set(|a| a.decision = Some(params.decision.as_str()));
        self.check_model_may_answer(&task, call.reach(), audit)?;
        self.respond(
            params.task_id,
            params.request_id,
            params.decision.as_str(),
            params.granted_permission_ids,
            params.option_id,
        )
        .await
    }

    /// `answer_agent_question`: the model's answer, where the workdir
    /// lets the model decide.
    pub async fn answer_agent_question(
        &self,
        params: AnswerAgentQuestionParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<InteractionResolved, ToolError> {
        let task = self
            .authorized_task(&params.task_id, TaskUse::Drive, audit)
            .await?;
        self.check_model_may_answer(&task, call.reach(), audit)?;
        let answers = params
            .answers
            .into_iter()
            .map(|answer| QuestionAnswer {
                question_id: answer.question_id,
                selected_option_ids: answer.selected_option_ids,
                text: answer.text,
            })
            .collect();
        self.answer(params.task_id, params.request_id, answers)
            .await
    }

    /// `task.approval.respond`, for the model and the human alike.
    async fn respond(
        &self,
        task_id: String,
        request_id: String,
        decision: &str,
        granted_permission_ids: Option<Vec<String>>,
        option_id: Option<String>,
    ) -> Result<InteractionResolved, ToolError> {
        self.call(TaskApprovalRespondParams {
            task_id,
            request_id,
            decision: decision.to_owned(),
            granted_permission_ids,
            option_id,
        })
        .await
    }

    /// `task.question.answer`, for the model and the human alike.
    async fn answer(
        &self,
        task_id: String,
        request_id: String,
        answers: Vec<QuestionAnswer>,
    ) -> Result<InteractionResolved, ToolError> {
        let answers = answers
            .into_iter()
            .map(|answer| {
                serde_json::to_value(answer)
                    .map_err(|e| ToolError::internal(format!("an answer did not encode: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.call(TaskQuestionAnswerParams {
            task_id,
            request_id,
            answers,
        })
        .await
    }

    /// Refuses the model's answer on a workdir where the client's human
    /// decides ([`Answerer::of`]).
    fn check_model_may_answer(
        &self,
        task: &TaskView,
        reach: HumanReach,
        audit: &AuditRecord,
    ) -> Result<(), ToolError> {
        audit.set(|a| a.answered_by = Some("model"));
        match Answerer::of(self.approvals_of(&task.workdir_alias), reach) {
            Answerer::Model => Ok(()),
            Answerer::Human => Err(requires_human(&task.workdir_alias, reach.tasks)),
        }
    }

    /// How long after its creation `task` may be forgotten, in
    /// milliseconds: its deadline, then the Bridge's retention.
    pub fn task_lifetime_ms(&self, task: &TaskView) -> u64 {
        let run = u64::try_from(task.deadline_at.saturating_sub(task.created_at)).unwrap_or(0);
        let kept = u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX);
        run.saturating_add(kept)
    }

    /// The `approvals` policy of the workdir `alias` (a task's workdir,
    /// configured: the re-check has just looked it up).
    pub fn approvals_of(&self, alias: &str) -> ApprovalPolicy {
        self.workdirs
            .get(alias)
            .map_or(ApprovalPolicy::Human, |w| w.config.approvals)
    }

    /// The task for the client's human (a form's source, `tasks/get`):
    /// read and re-checked as `get_agent_task` does, without waiting, with
    /// who answers a pending request for a client with `reach`.
    pub async fn task_for_human(
        &self,
        task_id: &str,
        reach: HumanReach,
        audit: &AuditRecord,
    ) -> Result<AgentTaskView, ToolError> {
        let task = self.authorized_task(task_id, TaskUse::Drive, audit).await?;
        Ok(self.with_answering(task, reach))
    }

    /// Applies the human's answer to the pending request `request_id` of
    /// `task` (read with [`AgentService::task_for_human`]) through the
    /// Bridge calls of the answering tools: one winner, and a stale or late
    /// answer refused with their codes. Whatever the workdir's policy: the
    /// human may always decide.
    pub async fn apply_human_answer(
        &self,
        task: &TaskView,
        request_id: &str,
        answer: HumanAnswer,
        audit: &AuditRecord,
    ) -> Result<(), ToolError> {
        audit.set(|a| a.answered_by = Some("human"));
        let task_id = task.task_id.clone();
        let request_id = request_id.to_owned();
        match answer {
            HumanAnswer::Approval {
                decision,
                option_id,
                granted_permission_ids,
            } => {
                audit.set(|a| a.decision = Some(decision.as_str()));
                self.respond(
                    task_id,
                    request_id,
                    decision.as_str(),
                    granted_permission_ids,
                    option_id,
                )
                .await
                .map(drop)
            }
            HumanAnswer::Question { answers } => {
                self.answer(task_id, request_id, answers).await.map(drop)
            }
            HumanAnswer::CancelTask => {
                audit.set(|a| a.decision = Some("cancel_task"));
                let cancelled = self.call(TaskCancelParams { task_id }).await?;
                audit.set(|a| a.status = Some(cancelled.status.as_str()));
                Ok(())
            }
        }
    }

    /// Why an answer to `request_id`, which is not `task_id`'s pending
    /// request (any more), is refused: the Bridge's own code for it
    /// (`REQUEST_ALREADY_RESOLVED`, `REQUEST_STALE`, `REQUEST_NOT_FOUND`).
    ///
    /// Asked with a decision no request accepts: the Bridge checks the
    /// request's state before the decision (spec-agent-bridge.md §4.5,
    /// steps 2–7), so nothing is ever applied, and a request that did
    /// become pending meanwhile answers `INVALID_APPROVAL_DECISION`.
    pub async fn refusal_of_unpresented(&self, task_id: &str, request_id: &str) -> ToolError {
        match self
            .respond(task_id.to_owned(), request_id.to_owned(), "", None, None)
            .await
        {
            Err(refusal) => refusal,
            Ok(_) => ToolError::internal("the Bridge accepted an answer without a decision"),
        }
    }

    /// `task` with who answers its pending request, if any.
    fn with_answering(&self, task: TaskView, reach: HumanReach) -> AgentTaskView {
        let answering = task.pending_request.as_ref().map(|pending| {
            let policy = self.approvals_of(&task.workdir_alias);
            let by = Answerer::of(policy, reach);
            Answering {
                approvals: policy.into(),
                by: by.into(),
                instructions: answering_instructions(pending.kind(), by, reach),
            }
        });
        AgentTaskView { task, answering }
    }

    /// `send_agent_message`.
    pub async fn send_agent_message(
        &self,
        params: SendAgentMessageParams,
        audit: &AuditRecord,
    ) -> Result<TaskMessageSendResult, ToolError> {
        self.authorized_task(&params.task_id, TaskUse::Drive, audit)
            .await?;
        self.call(TaskMessageSendParams {
            task_id: params.task_id,
            message: params.message,
        })
        .await
    }

    /// `cancel_agent_task`.
    pub async fn cancel_agent_task(
        &self,
        params: CancelAgentTaskParams,
        audit: &AuditRecord,
    ) -> Result<TaskCancelResult, ToolError> {
        self.authorized_task(&params.task_id, TaskUse::Stop, audit)
            .await?;
        let cancelled = self
            .call(TaskCancelParams {
                task_id: params.task_id,
            })
            .await?;
        audit.set(|a| a.status = Some(cancelled.status.as_str()));
        Ok(cancelled)
    }
}

/// What the model is told about a pending request (issue 18, item 4): the
/// decision is its user's, shown as it is, and answered only with the
/// user's choice — or made by the user in their client.
fn answering_instructions(kind: InteractionKind, by: Answerer, reach: HumanReach) -> String {
    let (what, tool, choices) = match kind {
        InteractionKind::Approval => (
            "approval",
            "respond_agent_approval",
            "what the agent wants to do (the command or files), where, why, and the \
             decisions or options on offer",
        ),
        InteractionKind::Question => (
            "question",
            "answer_agent_question",
            "each question and its options",
        ),
    };
    match by {
        Answerer::Model => format!(
            "This {what} is your user's decision, not yours: show them the pending_request \
             ({choices}), then call {tool} with exactly what they chose. Never decide it \
             yourself."
        ),
        Answerer::Human if reach.any() => format!(
            "This {what} is your user's decision and they make it in their client (a form \
             ServerFS sent, or the task's input request); {tool} refuses with \
             APPROVAL_REQUIRES_HUMAN. Tell your user it is waiting there, then poll \
             get_agent_task."
        ),
        Answerer::Human => format!(
            "This {what} is your user's decision and the operator requires them to make it \
             in an MCP client that shows elicitation forms or speaks the Tasks extension, \
             which this client does not; {tool} refuses with APPROVAL_REQUIRES_HUMAN. Tell \
             your user: they can answer it from such a client, or cancel the task with \
             cancel_agent_task; unanswered, it lapses and the task is interrupted."
        ),
    }
}

/// The workdir's agent policy for a submission (spec §1.4 steps 2–5).
fn check_agent_policy(
    workdir: &WorkdirHandle,
    runtime: &str,
    profile: ProfileParam,
) -> Result<(), ToolError> {
    let config = &workdir.config;
    if !config.agent_mode.is_enabled() {
        return Err(bridge_error(
            BridgeErrorCode::AgentDisabled,
            "agents are disabled on this workdir",
        ));
    }
    let allowed = config
        .agent_runtimes
        .iter()
        .find(|allowed| allowed.as_str() == runtime)
        .ok_or_else(|| {
            bridge_error(
                BridgeErrorCode::AgentRuntimeNotAllowed,
                "the runtime is not allowed on this workdir; see list_workdirs",
            )
        })?;
    if profile == ProfileParam::WorkspaceWrite
        && (config.agent_mode != AgentMode::WorkspaceWrite || config.read_only)
    {
        return Err(bridge_error(
            BridgeErrorCode::AgentProfileNotAllowed,
            "this workdir only allows the review profile",
        ));
    }
    if profile != ProfileParam::WorkspaceWrite && AgentRuntime::is_native(allowed) {
        return Err(bridge_error(
            BridgeErrorCode::AgentProfileNotAllowed,
            "this runtime currently requires the workspace-write profile",
        ));
    }
    Ok(())
}

/// The tool-side profile of a task's profile.
fn profile_param(profile: AgentProfile) -> ProfileParam {
    match profile {
        AgentProfile::Review => ProfileParam::Review,
        AgentProfile::WorkspaceWrite => ProfileParam::WorkspaceWrite,
    }
}

/// How often a long-poll tells a client that asked for progress that it is
/// still waiting: often enough for clients that restart their timeout on
/// progress, rarely enough to be no traffic.
const HEARTBEAT_SECONDS: u64 = 5;

/// The progress of a long-poll that began at `started`: the seconds waited
/// so far, in steps of [`HEARTBEAT_SECONDS`] (so one report per step).
fn heartbeat(started: Instant, wait_seconds: u64) -> impl FnMut() -> Progress {
    move || {
        let waited = started.elapsed().as_secs() / HEARTBEAT_SECONDS * HEARTBEAT_SECONDS;
        Progress {
            done: waited,
            total: Some(wait_seconds),
            message: format!("waited {waited} of {wait_seconds} s for the task to change"),
        }
    }
}

/// When a long-poll must answer: `wait_seconds` from now, at most
/// [`MAX_WAIT_SECONDS`].
fn wait_deadline(wait_seconds: u64) -> Result<Instant, ToolError> {
    if wait_seconds > MAX_WAIT_SECONDS {
        return Err(ToolError::invalid_argument(format!(
            "wait_seconds must be 0..={MAX_WAIT_SECONDS}"
        )));
    }
    Ok(Instant::now() + Duration::from_secs(wait_seconds))
}

/// Whether the task changed in a way a waiting client cares about.
fn moved(before: &TaskView, now: &TaskView) -> bool {
    before.status != now.status
        || before.pending_request_id != now.pending_request_id
        || before.updated_at != now.updated_at
}
