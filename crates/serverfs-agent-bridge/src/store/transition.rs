//! The frozen task transition table (spec-agent-bridge.md §3.1), encoded
//! once. Every state change of the store goes through
//! [`transition_allowed`].

use serverfs_protocol::bridge::TaskStatus;

/// The statuses `from` may move to. Terminal statuses have none: a task
/// that ended never becomes active again.
pub const fn allowed_targets(from: TaskStatus) -> &'static [TaskStatus] {
    use TaskStatus::{
        Cancelled, Failed, Interrupted, Queued, Running, Starting, Succeeded, WaitingForApproval,
        WaitingForQuestion,
    };
    match from {
        Queued => &[Starting, Cancelled, Interrupted],
        Starting => &[Running, Failed, Cancelled, Interrupted],
        Running => &[
            WaitingForApproval,
            WaitingForQuestion,
            Succeeded,
            Failed,
            Cancelled,
            Interrupted,
        ],
        WaitingForApproval | WaitingForQuestion => &[Running, Cancelled, Interrupted],
        Succeeded | Failed | Cancelled | Interrupted => &[],
    }
}

/// Whether the table allows `from → to`.
pub fn transition_allowed(from: TaskStatus, to: TaskStatus) -> bool {
    allowed_targets(from).contains(&to)
}
