//! Resolving approvals and questions (spec-agent-bridge.md §4.5): the
//! request's state first (exists, pending, the task's presented request,
//! not expired), then the answer's validity (for an approval offering
//! exact options, the chosen option too, §4.7), then one compare-and-set
//! in the store — so of two racing answers exactly one wins.

use std::collections::HashSet;
use std::sync::Arc;

use serverfs_protocol::bridge::{
    ApprovalDecision, ApprovalPayload, BridgeErrorCode, EventPayload, InteractionResolved,
    InteractionStatus, LiteralTrue, QuestionAnswer, QuestionPayload, QuestionResolution,
    TaskApprovalRespondParams, TaskQuestionAnswerParams, TaskStatus,
};

use super::Core;
use super::error::ServiceResult;
use super::live::StopReason;
use crate::store::{
    InteractionPayload, InteractionRecord, InteractionResolution, StoreError, TaskRecord,
    Transition, now_millis,
};
use serverfs_agent_runtime::AgentError;

fn invalid_decision(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::InvalidApprovalDecision, message.to_owned())
}

fn invalid_answer(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::InvalidQuestionAnswer, message.to_owned())
}

fn stale(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::RequestStale, message.to_owned())
}

/// What the state checks found.
enum Lookup {
    /// The request is the task's presented, unexpired request.
    Pending(Box<(TaskRecord, InteractionRecord)>),
    /// It had expired: the task was interrupted just now.
    Expired,
}

impl Core {
    pub(super) async fn respond_approval(
        self: &Arc<Self>,
        params: TaskApprovalRespondParams,
    ) -> ServiceResult<InteractionResolved> {
        let (task, record) = self.presented(&params.task_id, &params.request_id).await?;
        let InteractionPayload::Approval(payload) = &record.payload else {
            return Err(invalid_decision(
                "the request is a question, not an approval",
            ));
        };
        let decision = ApprovalDecision::from_wire(&params.decision)
            .ok_or_else(|| invalid_decision("unknown approval decision"))?;
        if !payload.available_decisions.is_empty()
            && !payload.available_decisions.contains(&decision)
        {
            return Err(invalid_decision(
                "the decision was not offered for this request",
            ));
        }
        let option_id = chosen_option(payload, decision, params.option_id)?;
        let granted = granted_permissions(payload, decision, params.granted_permission_ids)?;
        let resolution =
            InteractionResolution::Approval(serverfs_protocol::bridge::ApprovalResolution {
                decision,
                granted_permission_ids: granted,
                option_id,
            });
        self.resolve(&task, &record.request_id, resolution).await?;
        if decision == ApprovalDecision::CancelTask {
            self.cancel(task.task_id.clone()).await?;
        }
        Ok(resolved(task, record.request_id))
    }

    pub(super) async fn answer_question(
        self: &Arc<Self>,
        params: TaskQuestionAnswerParams,
    ) -> ServiceResult<InteractionResolved> {
        let (task, record) = self.presented(&params.task_id, &params.request_id).await?;
        let InteractionPayload::Question(payload) = &record.payload else {
            return Err(invalid_answer("the request is an approval, not a question"));
        };
        let answers = params.answers().ok_or_else(|| {
            invalid_answer("each answer must be {question_id, selected_option_ids?, text?}")
        })?;
        let resolution = InteractionResolution::Question(validate_answers(payload, answers)?);
        self.resolve(&task, &record.request_id, resolution).await?;
        Ok(resolved(task, record.request_id))
    }

    /// Steps 1–5: ids given, request exists, is pending, belongs to the
    /// task and is its presented request, and has not expired (an
    /// expired one interrupts its task here, lazily).
    async fn presented(
        &self,
        task_id: &str,
        request_id: &str,
    ) -> ServiceResult<(TaskRecord, InteractionRecord)> {
        if task_id.is_empty() || request_id.is_empty() {
            return Err(AgentError::new(
                BridgeErrorCode::InvalidRequest,
                "task_id and request_id must be non-empty",
            ));
        }
        let (task_id, request_id) = (task_id.to_owned(), request_id.to_owned());
        let id = task_id.clone();
        let lookup = self
            .store
            .call(move |db| {
                let record = db.get_interaction(&request_id)?;
                match record.status {
                    InteractionStatus::Pending => {}
                    InteractionStatus::Resolved => return Err(StoreError::RequestAlreadyResolved),
                    InteractionStatus::Stale => return Err(StoreError::RequestStale),
                }
                // Spec §4.5 step 4: a request that is not the named task's
                // presented one is stale for that task, not unknown.
                if record.task_id != id {
                    return Err(StoreError::RequestStale);
                }
                let task = db.get_task(&id)?;
                if task.pending_request_id.as_deref() != Some(record.request_id.as_str()) {
                    return Err(StoreError::RequestStale);
                }
                let now = now_millis();
                if record.expires_at.is_some_and(|at| at <= now) {
                    expire(db, &task, &record, now)?;
                    return Ok(Lookup::Expired);
                }
                Ok(Lookup::Pending(Box::new((task, record))))
            })
            .await?;
        match lookup {
            Lookup::Pending(found) => Ok(*found),
            Lookup::Expired => {
                if let Some(live) = self.live_task(&task_id) {
                    live.stop(StopReason::Ended);
                }
                Err(stale("the request expired"))
            }
        }
    }

    /// Step 11: the compare-and-set, then waking the adapter.
    async fn resolve(
        &self,
        task: &TaskRecord,
        request_id: &str,
        resolution: InteractionResolution,
    ) -> ServiceResult<()> {
        let (task_id, id) = (task.task_id.clone(), request_id.to_owned());
        let stored = resolution.clone();
        let resolved = self
            .store
            .call(move |db| db.resolve_interaction(&task_id, &id, &stored, now_millis()))
            .await;
        let resolved = match resolved {
            Ok(resolved) => resolved,
            Err(StoreError::RequestExpired) => {
                // Expired between the checks and the CAS.
                let _ = self.expire_if_due(&task.task_id).await;
                return Err(stale("the request expired"));
            }
            Err(error) => return Err(error.into()),
        };
        if let Some(live) = self.live_task(&task.task_id) {
            live.expiry
                .send_replace(resolved.next.and_then(|next| next.expires_at));
            live.wake(request_id, resolution);
        }
        Ok(())
    }

    /// Interrupts the task if its presented request has lapsed
    /// (`AGENT_INTERACTION_TIMED_OUT`, events `interaction.expired` and
    /// `task.interrupted`) and stops its runner; otherwise says when the
    /// request presented now lapses, as the store knows it.
    pub(super) async fn expire_if_due(&self, task_id: &str) -> Expiry {
        let id = task_id.to_owned();
        let expired = self
            .store
            .call(move |db| {
                let task = db.get_task(&id)?;
                let Some(request_id) = task.pending_request_id.clone() else {
                    return Ok(Expiry::NotDue(None));
                };
                let record = db.get_interaction(&request_id)?;
                let now = now_millis();
                match record.expires_at {
                    Some(at) if at <= now => {
                        expire(db, &task, &record, now)?;
                        Ok(Expiry::Expired)
                    }
                    other => Ok(Expiry::NotDue(other)),
                }
            })
            .await;
        match expired {
            Ok(Expiry::Expired) => {
                if let Some(live) = self.live_task(task_id) {
                    live.stop(StopReason::Ended);
                }
                Expiry::Expired
            }
            Ok(not_due) => not_due,
            Err(error) => {
                tracing::warn!(
                    task_id,
                    code = error.code().as_str(),
                    "interaction expiry not recorded"
                );
                // Look again in a second rather than never.
                Expiry::NotDue(Some(now_millis().saturating_add(1_000)))
            }
        }
    }
}

/// What [`Core::expire_if_due`] found.
pub(super) enum Expiry {
    /// The presented request lapsed; the task was interrupted.
    Expired,
    /// Nothing lapsed; when the presented request does, if one is.
    NotDue(Option<serverfs_protocol::bridge::EpochMillis>),
}

/// Records the lapse of the presented `record` and interrupts `task` (one
/// store job, so atomic with respect to answers).
fn expire(
    db: &mut crate::store::Db,
    task: &TaskRecord,
    record: &InteractionRecord,
    now: serverfs_protocol::bridge::EpochMillis,
) -> Result<(), StoreError> {
    // An expiry capped at the task deadline is the deadline passing: the
    // task deadline governs (spec §3.8).
    let code = if record.expires_at.is_some_and(|at| at >= task.deadline_at) {
        BridgeErrorCode::AgentTaskTimedOut
    } else {
        BridgeErrorCode::AgentInteractionTimedOut
    };
    let expired = EventPayload::InteractionExpired {
        request_id: record.request_id.clone(),
        kind: record.kind(),
    };
    // Lifecycle events never block the state change (spec §5.3).
    let _ = db.append_event(&task.task_id, &expired, now);
    db.transition(
        &task.task_id,
        Transition::new(task.status, TaskStatus::Interrupted)
            .with_error(code, "the pending request was not answered in time")
            .with_event(EventPayload::TaskInterrupted { error_code: code }),
        now,
    )?;
    Ok(())
}

fn resolved(task: TaskRecord, request_id: String) -> InteractionResolved {
    InteractionResolved {
        task_id: task.task_id,
        request_id,
        resolved: LiteralTrue,
        correlation_id: task.correlation_id,
    }
}

/// After step 8, for providers that offer exact options (spec §4.7, our
/// extension): the option the client chose.
///
/// A request that lists options needs one of them, named by id, with the
/// decision its kind maps to — so a provider's allow-always (which may
/// persist a rule) is only ever chosen explicitly, never produced from a
/// bare `approve_session`. `cancel_task` needs no option: it cancels the
/// task and the adapter answers the provider with its cancel behaviour. A
/// request without options takes no option id.
fn chosen_option(
    payload: &ApprovalPayload,
    decision: ApprovalDecision,
    option_id: Option<String>,
) -> ServiceResult<Option<String>> {
    let offered = payload.options.as_deref().unwrap_or_default();
    let Some(option_id) = option_id else {
        if offered.is_empty() || decision == ApprovalDecision::CancelTask {
            return Ok(None);
        }
        return Err(invalid_decision(
            "choose one of the request's options by option_id",
        ));
    };
    if offered.is_empty() {
        return Err(invalid_decision("this request offers no options"));
    }
    let option = offered
        .iter()
        .find(|option| option.option_id == option_id)
        .ok_or_else(|| invalid_decision("the option was not offered for this request"))?;
    if option.kind.decision() != decision {
        return Err(invalid_decision(
            "the decision does not match the chosen option's kind",
        ));
    }
    Ok(Some(option_id))
}

/// Step 9: the permission ids granted. On approval, the selected subset of
/// the requested permissions (all of them when none is selected); on deny
/// or cancel, none.
fn granted_permissions(
    payload: &ApprovalPayload,
    decision: ApprovalDecision,
    selected: Option<Vec<String>>,
) -> ServiceResult<Vec<String>> {
    let requested: Vec<&str> = payload
        .requested_permissions
        .iter()
        .flatten()
        .map(|permission| permission.permission_id.as_str())
        .collect();
    if let Some(selected) = &selected
        && selected.iter().any(|id| !requested.contains(&id.as_str()))
    {
        return Err(AgentError::new(
            BridgeErrorCode::PermissionOutsidePolicy,
            "a granted permission was not requested",
        ));
    }
    Ok(match decision {
        ApprovalDecision::ApproveOnce | ApprovalDecision::ApproveSession => {
            selected.unwrap_or_else(|| requested.iter().map(|id| (*id).to_owned()).collect())
        }
        ApprovalDecision::Deny | ApprovalDecision::CancelTask => Vec::new(),
    })
}

/// The per-answer rules of spec §4.5: every question answered exactly
/// once, known option ids without duplicates, one option unless
/// multi-select, free text only where allowed, and something chosen or
/// written.
fn validate_answers(
    payload: &QuestionPayload,
    answers: Vec<QuestionAnswer>,
) -> ServiceResult<QuestionResolution> {
    let mut answered = HashSet::new();
    for answer in &answers {
        let question = payload
            .questions
            .iter()
            .find(|question| question.question_id == answer.question_id)
            .ok_or_else(|| invalid_answer("an answer names an unknown question"))?;
        if !answered.insert(answer.question_id.as_str()) {
            return Err(invalid_answer("a question is answered twice"));
        }
        let mut chosen = HashSet::new();
        for option_id in &answer.selected_option_ids {
            if !question
                .options
                .iter()
                .any(|option| &option.option_id == option_id)
            {
                return Err(invalid_answer("an answer selects an unknown option"));
            }
            if !chosen.insert(option_id.as_str()) {
                return Err(invalid_answer("an answer selects an option twice"));
            }
        }
        if chosen.len() > 1 && !question.multi_select {
            return Err(invalid_answer("the question takes one option"));
        }
        if answer.text.is_some() && !question.allow_free_text {
            return Err(invalid_answer("the question takes no free text"));
        }
        let wrote = answer.text.as_deref().is_some_and(|text| !text.is_empty());
        if chosen.is_empty() && !wrote {
            return Err(invalid_answer(
                "an answer must select an option or give text",
            ));
        }
    }
    if answered.len() != payload.questions.len() {
        return Err(invalid_answer("every question must be answered"));
    }
    Ok(QuestionResolution { answers })
}
