//! Agent approvals and questions put to the client's human as
//! `elicitation/create` forms (issue 18, item 2).
//!
//! A client that declared form elicitation, on a protocol that lets a
//! server send it requests (an `initialize` session), gets one watcher per
//! agent task it drives through the tools, on a workdir whose `approvals`
//! policy hands the decision to the human (`human`, `human-preferred`).
//! The watcher reads the task from the Bridge; each pending request is put
//! to the human as the form of [`super::forms`], while `get_agent_task`
//! keeps reporting it. The human's response is applied as the decision
//! through the answering tools' own Bridge calls (one winner: a request
//! answered elsewhere meanwhile is refused with their codes, and its form
//! is withdrawn with `notifications/cancelled`). A client that answers
//! nothing within the interaction timeout leaves the request pending, as
//! without elicitation.
//!
//! A dismissed form (`cancel`) decides nothing, and the request is put to
//! the human again when the session next names the task in a tool call —
//! the watcher is nudged as that call starts, so the form arrives while it
//! runs. Some clients show a form only then: Claude Code answers a form
//! that arrives between tool calls with `cancel` at once (docs/clients.md),
//! and a model told to long-poll `get_agent_task` gives it that moment.
//!
//! A client without the capability is never sent a form: no watcher is
//! started for it. Tasks created through the Tasks extension are not
//! watched either: their human answers the task's input request.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleServer};
use serverfs_protocol::bridge::{BridgeErrorCode, InteractionStatus, PendingInteraction};
use tokio::sync::Notify;

use super::agent_results::AgentTaskView;
use super::error::ToolCode;
use super::forms;
use crate::audit::AuditRecord;
use crate::service::{AgentService, Answerer, HumanReach};

/// How often a watcher reads its task.
const POLL_INTERVAL: Duration = Duration::from_millis(300);

/// The reach of a client the watcher serves: it declared form elicitation.
const FORM_CLIENT: HumanReach = HumanReach {
    elicitation: true,
    tasks: false,
};

/// The tasks one MCP session's human is asked about (and the tasks of the
/// Tasks extension, whose human answers elsewhere). Clones share the
/// session's state; each session starts with an empty one.
#[derive(Debug, Clone, Default)]
pub struct Elicitations {
    seen: Arc<Mutex<Seen>>,
}

#[derive(Debug, Default)]
struct Seen {
    /// Tasks with a watcher (running or finished): never two per task; each
    /// with the nudge its watcher waits for after a dismissed form.
    watched: HashMap<String, Arc<Notify>>,
    /// Tasks created through the Tasks extension in this session.
    task_augmented: HashSet<String>,
}

impl Elicitations {
    /// Marks `task_id` as a task of the Tasks extension: it is never
    /// watched.
    pub fn task_augmented(&self, task_id: &str) {
        self.seen().task_augmented.insert(task_id.to_owned());
    }

    /// Starts a watcher of `task_id` for the session's `peer`, unless one
    /// was started before (it is nudged instead: a dismissed request of the
    /// task is put to the human again) or the task belongs to the Tasks
    /// extension. `token_name` names the HTTP token, for the audit.
    pub fn watch(
        &self,
        agent: &AgentService,
        peer: &Peer<RoleServer>,
        task_id: &str,
        token_name: Option<String>,
    ) {
        let nudge = {
            let mut seen = self.seen();
            if seen.task_augmented.contains(task_id) {
                return;
            }
            if let Some(nudge) = seen.watched.get(task_id) {
                nudge.notify_one();
                return;
            }
            let nudge = Arc::new(Notify::new());
            seen.watched.insert(task_id.to_owned(), nudge.clone());
            nudge
        };
        let watcher = Watcher {
            agent: agent.clone(),
            peer: peer.clone(),
            task_id: task_id.to_owned(),
            token_name,
            nudge,
        };
        tokio::spawn(watcher.run());
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        // The sets are plain data: usable after a panicking holder.
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether the session's client takes forms: it declared form
/// elicitation and the session lets the server send it requests.
pub fn takes_forms(peer: &Peer<RoleServer>) -> bool {
    let session = peer
        .peer_info()
        .is_some_and(|info| info.protocol_version.has_initialize());
    session
        && peer
            .supported_elicitation_modes()
            .contains(&rmcp::service::ElicitationMode::Form)
}

/// One task's watcher.
struct Watcher {
    agent: AgentService,
    peer: Peer<RoleServer>,
    task_id: String,
    token_name: Option<String>,
    /// Notified when the session names the task in a tool call.
    nudge: Arc<Notify>,
}

/// How the human's turn with a form ended.
enum Asked {
    /// Answered (the answer applied or refused by the Bridge), withdrawn,
    /// lapsed or no longer askable: never asked again.
    Done,
    /// Dismissed without a choice, or not answered and not lapsed: asked
    /// again at the next nudge.
    Dismissed,
}

impl Watcher {
    /// Reads the task until it ends, the session closes, or its workdir
    /// lets the model answer; puts each new pending request to the human.
    async fn run(self) {
        let Some(mut view) = self.read().await else {
            return;
        };
        let policy = self.agent.approvals_of(&view.task.workdir_alias);
        if Answerer::of(policy, FORM_CLIENT) == Answerer::Model {
            // The model answers here: nothing for the human.
            return;
        }
        let mut asked: HashSet<String> = HashSet::new();
        while !view.task.status.is_terminal() && !self.peer.is_transport_closed() {
            let new_request = view.task.pending_request.as_ref().filter(|pending| {
                pending.status() == InteractionStatus::Pending
                    && !asked.contains(pending.request_id())
            });
            match new_request {
                Some(pending) => {
                    let request_id = pending.request_id().to_owned();
                    asked.insert(request_id.clone());
                    if let Asked::Dismissed = self.ask(&view, pending).await {
                        tokio::select! {
                            () = self.nudge.notified() => {
                                asked.remove(&request_id);
                            }
                            () = self.answered_elsewhere(&request_id) => {}
                        }
                    }
                }
                None => tokio::time::sleep(POLL_INTERVAL).await,
            }
            let Some(next) = self.read().await else {
                return;
            };
            view = next;
        }
    }

    /// The task, re-checked against the policy; `None` once it cannot be
    /// driven any more (gone, or its workdir's agents disabled). A Bridge
    /// that is down for a moment is waited for.
    async fn read(&self) -> Option<AgentTaskView> {
        loop {
            // Polls are not tool calls: their records are dropped unwritten.
            let poll = AuditRecord::start("elicitation/create");
            match self
                .agent
                .task_for_human(&self.task_id, FORM_CLIENT, &poll)
                .await
            {
                Ok(view) => return Some(view),
                Err(error)
                    if error.code == ToolCode::Bridge(BridgeErrorCode::AgentBridgeUnavailable) =>
                {
                    if self.peer.is_transport_closed() {
                        return None;
                    }
                    tokio::time::sleep(POLL_INTERVAL).await;
                }
                Err(_) => return None,
            }
        }
    }

    /// Puts `pending` to the human and applies the response; withdraws the
    /// form if the request is answered elsewhere first.
    async fn ask(&self, view: &AgentTaskView, pending: &PendingInteraction) -> Asked {
        let request_id = pending.request_id().to_owned();
        let audit = AuditRecord::start("elicitation/create");
        audit.set(|a| {
            a.token_name = self.token_name.clone();
            a.task_id = Some(self.task_id.clone());
            a.workdir = Some(view.task.workdir_alias.clone());
            a.runtime = Some(view.task.runtime.clone());
        });
        let form = match forms::form(&view.task, pending) {
            Ok(form) => form,
            Err(error) => {
                audit.finish(Some(error.code));
                return Asked::Done;
            }
        };
        let expires_at = match pending {
            PendingInteraction::Approval(record) => record.expires_at,
            PendingInteraction::Question(record) => record.expires_at,
        };
        let Some(timeout) = until(expires_at) else {
            return Asked::Done;
        };
        let response = tokio::select! {
            response = send_form(&self.peer, form, timeout) => response,
            () = self.answered_elsewhere(&request_id) => {
                tracing::info!(
                    event = "elicitation_withdrawn",
                    task_id = %self.task_id,
                    request_id = %request_id,
                );
                return Asked::Done;
            }
        };
        let outcome = match response {
            Ok((action, content)) => match forms::decision(pending, action, content.as_ref()) {
                Ok(Some(answer)) => {
                    self.agent
                        .apply_human_answer(&view.task, &request_id, answer, &audit)
                        .await
                }
                Ok(None) => {
                    // Dismissed: nothing decided, nothing audited.
                    tracing::info!(
                        event = "elicitation_dismissed",
                        task_id = %self.task_id,
                        request_id = %request_id,
                    );
                    return Asked::Dismissed;
                }
                Err(error) => Err(error),
            },
            Err(no_answer) => {
                // No answer: the request stays pending, as it would
                // without elicitation; one that has not lapsed is put to
                // the human again at the session's next look.
                tracing::info!(
                    event = "elicitation_unanswered",
                    task_id = %self.task_id,
                    request_id = %request_id,
                    reason = no_answer.reason(),
                );
                return match no_answer {
                    NoAnswer::TimedOut => Asked::Done,
                    NoAnswer::NotSent | NoAnswer::Refused => Asked::Dismissed,
                };
            }
        };
        audit.finish(outcome.err().map(|error| error.code));
        Asked::Done
    }

    /// Resolves once `request_id` is no longer the task's pending request.
    async fn answered_elsewhere(&self, request_id: &str) {
        loop {
            tokio::time::sleep(POLL_INTERVAL).await;
            match self.read().await {
                Some(view) if view.task.pending_request_id.as_deref() == Some(request_id) => {}
                _ => return,
            }
        }
    }
}

/// Why a form got no response.
#[derive(Debug, Clone, Copy)]
enum NoAnswer {
    /// It could not be sent (the session has no channel to the client now).
    NotSent,
    /// The client answered with an error, or with something else.
    Refused,
    /// Nothing came before the request lapsed.
    TimedOut,
}

impl NoAnswer {
    fn reason(self) -> &'static str {
        match self {
            NoAnswer::NotSent => "not sent",
            NoAnswer::Refused => "refused by the client",
            NoAnswer::TimedOut => "timed out",
        }
    }
}

/// Sends the form and waits `timeout` for the response: the action and
/// content, or why there is none.
async fn send_form(
    peer: &Peer<RoleServer>,
    form: ElicitRequestParams,
    timeout: Duration,
) -> Result<(rmcp::model::ElicitationAction, Option<serde_json::Value>), NoAnswer> {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(form));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
        .map_err(|_| NoAnswer::NotSent)?;
    let id = handle.id.clone();
    let owner = handle.peer.clone();
    // Dropped by the caller's select (the request was answered elsewhere):
    // withdraw the form from the client.
    let withdraw = WithdrawOnDrop {
        peer: Some(owner),
        id: Some(id),
    };
    let response = handle.await_response().await;
    withdraw.disarm();
    match response {
        Ok(ClientResult::ElicitResult(result)) => Ok((result.action, result.content)),
        Ok(_) => Err(NoAnswer::Refused),
        Err(ServiceError::Timeout { .. }) => Err(NoAnswer::TimedOut),
        Err(_) => Err(NoAnswer::Refused),
    }
}

/// Sends `notifications/cancelled` for a form still open when dropped.
struct WithdrawOnDrop {
    peer: Option<Peer<RoleServer>>,
    id: Option<rmcp::model::RequestId>,
}

impl WithdrawOnDrop {
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        let (Some(peer), Some(id)) = (self.peer.take(), self.id.take()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            // Best effort: a client that is gone needs no withdrawal.
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(
                    Some(id),
                    Some("answered elsewhere".to_owned()),
                ))
                .await;
        });
    }
}

/// How long until `expires_at` (epoch ms); `None` once past.
fn until(expires_at: i64) -> Option<Duration> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    u64::try_from(expires_at.saturating_sub(now))
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}
