//! The task service's settings, derived from the shared configuration's
//! `[agent]` section (spec-agent-bridge.md §10.3).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_config::AgentSettings;

use crate::store::StoreLimits;

/// Largest prompt, in UTF-8 bytes (not configurable).
pub const MAX_PROMPT_BYTES: usize = 65_536;
/// Largest steering message, in UTF-8 bytes (not configurable).
pub const MAX_MESSAGE_BYTES: usize = 65_536;
/// Longest `model` value, in UTF-8 bytes.
pub const MAX_MODEL_BYTES: usize = 512;
/// Longest correlation id and idempotency key.
pub const MAX_KEY_BYTES: usize = 256;
/// How long a provider interrupt may take before the core stops waiting
/// for the adapter (spec §3.8).
pub const PROVIDER_INTERRUPT_BOUND: Duration = Duration::from_secs(10);

/// What the task core needs to know.
#[derive(Debug, Clone)]
pub struct ServiceSettings {
    /// The directory of writer-lease artifacts.
    pub lock_dir: PathBuf,
    /// Task budget from submission.
    pub task_timeout: Duration,
    /// Budget of one presented interaction.
    pub interaction_timeout: Duration,
    /// How long terminal tasks are kept.
    pub retention: Duration,
    /// The store's bounds (active tasks, events, results).
    pub limits: StoreLimits,
    /// Bound of a provider interrupt.
    pub interrupt_bound: Duration,
    /// The Bridge user's home (`$HOME`, when absolute), which informative
    /// approvals show as `~` (`approval_paths`, issue 18); `None`: no path
    /// is shown that way.
    pub home: Option<PathBuf>,
}

impl ServiceSettings {
    /// The settings of `agent`, with no home known (see
    /// [`ServiceSettings::home`]).
    pub fn from_agent(agent: &AgentSettings) -> ServiceSettings {
        let threshold = usize::try_from(agent.result_spool_threshold_bytes).unwrap_or(usize::MAX);
        let defaults = StoreLimits::default();
        let limits = StoreLimits {
            max_active_tasks: agent.max_active_tasks,
            max_inline_result_bytes: threshold.min(defaults.max_spooled_result_bytes),
            result_preview_bytes: defaults.result_preview_bytes.min(threshold),
            ..defaults
        };
        ServiceSettings {
            lock_dir: agent.lock_dir.clone(),
            task_timeout: Duration::from_secs(agent.task_timeout_seconds),
            interaction_timeout: Duration::from_secs(agent.interaction_timeout_seconds),
            retention: Duration::from_secs(agent.retention_seconds),
            limits,
            interrupt_bound: PROVIDER_INTERRUPT_BOUND,
            home: None,
        }
    }

    /// The thirteen limits recorded in every manifest (spec §10.3).
    pub fn manifest_limits(&self) -> Value {
        let limits = &self.limits;
        json!({
            "max_prompt_bytes": MAX_PROMPT_BYTES,
            "max_final_response_bytes": limits.max_inline_result_bytes,
            "max_spooled_result_bytes": limits.max_spooled_result_bytes,
            "max_result_chunk_bytes": limits.max_result_chunk_bytes,
            "result_preview_bytes": limits.result_preview_bytes,
            "task_timeout_seconds": self.task_timeout.as_secs(),
            "interaction_timeout_seconds": self.interaction_timeout.as_secs(),
            "retention_seconds": self.retention.as_secs(),
            "max_event_bytes": limits.max_event_bytes,
            "max_interaction_bytes": limits.max_interaction_bytes,
            "max_message_bytes": MAX_MESSAGE_BYTES,
            "max_events_per_task": limits.max_events_per_task,
            "max_active_tasks": limits.max_active_tasks,
        })
    }
}
