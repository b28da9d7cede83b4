//! The text blocks of the agent tools' results. The structured content is
//! the Bridge's own result (spec-agent-bridge.md §2.6), which never holds a
//! provider-native id or a host path; the one-line summaries never repeat a
//! prompt, response or answer.

use serverfs_protocol::bridge::{
    InteractionResolved, ModelCatalog, RuntimeListResult, TaskCancelResult, TaskEventsResult,
    TaskMessageSendResult, TaskResultChunk, TaskSubmitResult, TaskView,
};

use super::text::{Body, ModelText};

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
