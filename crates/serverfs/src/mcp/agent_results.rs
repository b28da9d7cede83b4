//! The agent tools' results and their text blocks. The structured content
//! is the Bridge's own result (spec-agent-bridge.md §2.6), which never
//! holds a provider-native id or a host path; `get_agent_task` and
//! `list_agent_runtimes` add, beside the Bridge's fields, who answers an
//! agent's approvals and questions (issue 18). The one-line summaries never
//! repeat a prompt, response or answer.

use schemars::JsonSchema;
use serde::Serialize;
use serverfs_protocol::bridge::{
    InteractionResolved, ModelCatalog, RuntimeListResult, TaskCancelResult, TaskEventsResult,
    TaskMessageSendResult, TaskResultChunk, TaskSubmitResult, TaskView,
};

use super::results::{AnsweredBy, ApprovalsName};
use super::text::{Body, ModelText};

/// Result of `get_agent_task`: the Bridge's task view and, while the task
/// waits on a pending approval or question, who may answer it and how.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentTaskView {
    /// The task, as the Bridge reports it.
    #[serde(flatten)]
    pub task: TaskView,
    /// Present exactly while `pending_request` is: the decision belongs to
    /// your user, and this says how it is made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answering: Option<Answering>,
}

/// Who answers a pending approval or question, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Answering {
    /// The workdir's `approvals` policy.
    pub approvals: ApprovalsName,
    /// Who answers it for this client: `model` (you, with exactly the
    /// decision your user made) or `user` (your user, in their client).
    pub by: AnsweredBy,
    /// What to do, in words.
    pub instructions: String,
}

/// Result of `list_agent_runtimes`: the Bridge's runtimes and, for each
/// agent-enabled workdir, who answers its agents' approvals and questions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentRuntimeList {
    /// The runtimes some workdir allows, as the Bridge reports them.
    #[serde(flatten)]
    pub listed: RuntimeListResult,
    /// The workdirs that allow agents, in configuration order.
    pub approvals: Vec<WorkdirApprovals>,
}

/// Who answers an agent's approvals and questions in one workdir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WorkdirApprovals {
    /// The workdir alias.
    pub workdir: String,
    /// Its `approvals` policy.
    pub approvals: ApprovalsName,
    /// Who answers for this client: `model` or `user`.
    pub answered_by: AnsweredBy,
}

impl ModelText for AgentTaskView {
    fn summary(&self) -> String {
        let mut line = self.task.summary();
        if let Some(answering) = &self.answering {
            line.push_str("; ");
            line.push_str(&answering.instructions);
        }
        line
    }

    fn body(&self) -> Option<Body> {
        self.task.body()
    }
}

impl ModelText for AgentRuntimeList {
    fn summary(&self) -> String {
        let mut line = self.listed.summary();
        let human: Vec<&str> = self
            .approvals
            .iter()
            .filter(|w| w.answered_by == AnsweredBy::User)
            .map(|w| w.workdir.as_str())
            .collect();
        if !human.is_empty() {
            line.push_str(&format!(
                "; your user answers agent approvals in their client for: {}",
                human.join(", ")
            ));
        }
        line
    }
}

impl ModelText for RuntimeListResult {
    fn summary(&self) -> String {
        let names: Vec<String> = self
            .runtimes
            .iter()
            .map(|r| {
                let state = if r.available {
                    "available"
                } else {
                    "unavailable"
                };
                format!("{} ({state})", r.name)
            })
            .collect();
        if names.is_empty() {
            "no agent runtime is allowed".to_owned()
        } else {
            format!("runtimes: {}", names.join(", "))
        }
    }
}

impl ModelText for ModelCatalog {
    fn summary(&self) -> String {
        format!("{} models of {}", self.models.len(), self.runtime)
    }
}

impl ModelText for TaskSubmitResult {
    fn summary(&self) -> String {
        format!(
            "task {} {}; poll get_agent_task (wait_seconds up to 45)",
            self.task_id,
            self.status.as_str()
        )
    }
}

impl ModelText for TaskView {
    fn summary(&self) -> String {
        let mut line = format!("task {} {}", self.task_id, self.status.as_str());
        if let Some(request) = &self.pending_request {
            line.push_str(&format!(
                "; pending {:?} request {} awaits your user's answer",
                request.kind(),
                request.request_id()
            ));
        }
        if let Some(code) = self.error_code {
            line.push_str(&format!("; error {}", code.as_str()));
        }
        if self.final_response_truncated {
            line.push_str("; final response truncated: read it with read_agent_task_result");
        }
        line
    }

    fn body(&self) -> Option<Body> {
        let response = self.final_response.as_ref()?;
        let whole = if self.final_response_truncated {
            "only its start: read the rest with read_agent_task_result"
        } else {
            "whole"
        };
        Some(Body {
            field: "final_response",
            note: format!("<below: the agent's final response, verbatim ({whole})>"),
            text: response.clone(),
        })
    }
}

impl ModelText for TaskEventsResult {
    fn summary(&self) -> String {
        format!(
            "{} events; next_after_event_id {}",
            self.events.len(),
            self.next_after_event_id
        )
    }
}

impl ModelText for TaskResultChunk {
    fn summary(&self) -> String {
        format!(
            "bytes {}..{}{}",
            self.offset_bytes,
            self.next_offset_bytes,
            if self.eof { " (end)" } else { "" }
        )
    }

    fn body(&self) -> Option<Body> {
        Some(Body {
            field: "text",
            note: format!(
                "<below: bytes {}..{} of the final response, verbatim>",
                self.offset_bytes, self.next_offset_bytes
            ),
            text: self.text.clone(),
        })
    }
}

impl ModelText for InteractionResolved {
    fn summary(&self) -> String {
        format!(
            "request {} of task {} resolved",
            self.request_id, self.task_id
        )
    }
}

impl ModelText for TaskMessageSendResult {
    fn summary(&self) -> String {
        format!("message delivered to task {}", self.task_id)
    }
}

impl ModelText for TaskCancelResult {
    fn summary(&self) -> String {
        format!("task {} {}", self.task_id, self.status.as_str())
    }
}
