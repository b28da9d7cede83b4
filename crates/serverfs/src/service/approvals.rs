//! Who answers a delegated agent's approvals and questions (issue 18): the
//! workdir's `approvals` policy, what the calling client can do, and what
//! a human's answer from a form means.
//!
//! The services know nothing of MCP: the MCP layer says what the client
//! declared ([`HumanReach`]) and turns a form's response into a
//! [`HumanAnswer`]; [`crate::service::AgentService`] applies it through the
//! same Bridge calls as the answering tools.

use serverfs_config::ApprovalPolicy;
use serverfs_protocol::ErrorCode;
use serverfs_protocol::bridge::{ApprovalDecision, QuestionAnswer};

use crate::mcp::error::ToolError;

/// How the calling client can put a question to its human.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HumanReach {
    /// It declared form elicitation, on a protocol that lets a server send
    /// `elicitation/create` (an `initialize` session).
    pub elicitation: bool,
    /// It declared the Tasks extension for this call, so an approval of a
    /// task it created reaches its human as the task's input request.
    pub tasks: bool,
}

impl HumanReach {
    /// Whether the client can reach its human at all.
    pub const fn any(self) -> bool {
        self.elicitation || self.tasks
    }
}

/// Who answers a pending approval or question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answerer {
    /// The model, through `respond_agent_approval` and
    /// `answer_agent_question`, relaying its user's decision.
    Model,
    /// The client's human, through an elicitation form or `tasks/update`.
    Human,
}

impl Answerer {
    /// Who answers on a workdir with `policy`, for a client with `reach`.
    pub const fn of(policy: ApprovalPolicy, reach: HumanReach) -> Answerer {
        match policy {
            ApprovalPolicy::Model => Answerer::Model,
            ApprovalPolicy::Human => Answerer::Human,
            ApprovalPolicy::HumanPreferred => {
                if reach.any() {
                    Answerer::Human
                } else {
                    Answerer::Model
                }
            }
        }
    }
}

/// What a human decided, from a form: applied as the decision of the
/// request it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HumanAnswer {
    /// An approval's decision, with the exact option and the permissions
    /// granted where the request offers them.
    Approval {
        /// The decision.
        decision: ApprovalDecision,
        /// The chosen exact option, when the request lists options.
        option_id: Option<String>,
        /// The permissions to grant, when the human picked some (none
        /// picked: every requested one, as `respond_agent_approval`).
        granted_permission_ids: Option<Vec<String>>,
    },
    /// A question's answers, one per question.
    Question {
        /// The answers.
        answers: Vec<QuestionAnswer>,
    },
    /// Stop the task: the human declined a question, which the agent
    /// cannot go on without (or an approval that offers no refusal and no
    /// `cancel_task`).
    CancelTask,
}

/// The refusal of a model's answer on a workdir whose human decides.
pub fn requires_human(workdir: &str, tasks: bool) -> ToolError {
    let channel = if tasks {
        "the task's input request in their client (tasks/update)"
    } else {
        "the form their client shows (elicitation)"
    };
    ToolError {
        code: ErrorCode::ApprovalRequiresHuman.into(),
        message: format!(
            "workdir '{workdir}' lets only your user decide an agent's approvals and \
             questions; you cannot answer this request. Ask your user to answer it through \
             {channel}, then poll get_agent_task. Nothing was answered: the request is still \
             pending."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_answers_by_policy_and_reach() {
        let none = HumanReach::default();
        let form = HumanReach {
            elicitation: true,
            tasks: false,
        };
        let tasks = HumanReach {
            elicitation: false,
            tasks: true,
        };
        let table = [
            (ApprovalPolicy::Model, none, Answerer::Model),
            (ApprovalPolicy::Model, form, Answerer::Model),
            (ApprovalPolicy::Model, tasks, Answerer::Model),
            (ApprovalPolicy::Human, none, Answerer::Human),
            (ApprovalPolicy::Human, form, Answerer::Human),
            (ApprovalPolicy::HumanPreferred, none, Answerer::Model),
            (ApprovalPolicy::HumanPreferred, form, Answerer::Human),
            (ApprovalPolicy::HumanPreferred, tasks, Answerer::Human),
        ];
        for (policy, reach, expected) in table {
            assert_eq!(Answerer::of(policy, reach), expected, "{policy} {reach:?}");
        }
    }

    #[test]
    fn the_refusal_names_the_code_and_the_way_out() {
        let refusal = requires_human("demo", false);
        assert_eq!(refusal.code, ErrorCode::ApprovalRequiresHuman);
        assert!(
            refusal.message.contains("elicitation"),
            "{}",
            refusal.message
        );
        assert!(
            requires_human("demo", true)
                .message
                .contains("tasks/update")
        );
    }
}
