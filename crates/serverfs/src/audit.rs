//! The audit trail: exactly one `tool_call` JSON line per tool call.
//!
//! Only aliases, normalized workdir-relative paths, outcomes, codes,
//! durations, counts and revision tokens are recorded — never file
//! content, edit texts, search queries, host paths or the caller's raw path
//! string (which could be anything).

use std::sync::Mutex;
use std::time::Instant;

use crate::mcp::error::ToolCode;

/// What one tool call did, filled in as the call proceeds. Shared by
/// reference with the service (interior mutability), so that async service
/// methods can borrow it freely.
#[derive(Debug)]
pub struct AuditRecord {
    tool: &'static str,
    started: Instant,
    fields: Mutex<AuditFields>,
}

/// Fields of a record. `None` fields are omitted from the line; the
/// tool-specific counts are emitted on success only.
#[derive(Debug, Default)]
pub struct AuditFields {
    /// Workdir alias, once known to be configured.
    pub workdir: Option<String>,
    /// Normalized path, once parsed.
    pub path: Option<String>,
    /// Name of the bearer token that authenticated the call (HTTP only;
    /// never the token itself).
    pub token_name: Option<String>,
    /// Entries or matches returned.
    pub returned: Option<u64>,
    /// More entries follow.
    pub has_more: Option<bool>,
    /// A find or search stopped at a cap.
    pub truncated: Option<bool>,
    /// Content bytes returned.
    pub bytes_returned: Option<u64>,
    /// First line read.
    pub start_line: Option<u64>,
    /// Last line read.
    pub end_line: Option<u64>,
    /// Lines after the page read (pages read from the end).
    pub from_end: Option<u64>,
    /// Object kind reported by `stat_file`.
    pub kind: Option<&'static str>,
    /// Bytes written by a create or upload.
    pub bytes_written: Option<u64>,
    /// Edits applied.
    pub edit_count: Option<u64>,
    /// File size before an edit.
    pub bytes_before: Option<u64>,
    /// File size after an edit.
    pub bytes_after: Option<u64>,
    /// Size of a deleted file.
    pub bytes_deleted: Option<u64>,
    /// Revision produced (or deleted).
    pub revision: Option<String>,
    /// MIME type of a download.
    pub mime_type: Option<String>,
    /// True for an edit's dry run.
    pub dry_run: Option<bool>,
    /// Agent task id (agent tools; kept on failure).
    pub task_id: Option<String>,
    /// Agent runtime name (agent tools; kept on failure).
    pub runtime: Option<String>,
    /// Approval decision given (kept on failure).
    pub decision: Option<&'static str>,
    /// Agent task status after the call.
    pub status: Option<&'static str>,
    /// Who answered an agent's approval or question: `model` (the
    /// answering tools) or `human` (a form, `tasks/update`); kept on
    /// failure.
    pub answered_by: Option<&'static str>,
}

impl AuditRecord {
    /// Starts the record (and its clock) for a call of `tool`.
    pub fn start(tool: &'static str) -> AuditRecord {
        AuditRecord {
            tool,
            started: Instant::now(),
            fields: Mutex::new(AuditFields::default()),
        }
    }

    /// Updates the fields.
    pub fn set(&self, update: impl FnOnce(&mut AuditFields)) {
        // A poisoned lock only means another update panicked; the fields
        // are plain data and still usable.
        let mut fields = self.fields.lock().unwrap_or_else(|e| e.into_inner());
        update(&mut fields);
    }

    /// Emits the record.
    pub fn finish(self, error: Option<ToolCode>) {
        // Milliseconds with one decimal, from a monotonic clock.
        let duration_ms = (self.started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        let all = self.fields.into_inner().unwrap_or_else(|e| e.into_inner());
        // Who tried what on which object is kept on failure too; counts
        // and outcomes only on success.
        let (workdir, path, token_name) = (
            all.workdir.clone(),
            all.path.clone(),
            all.token_name.clone(),
        );
        let (task_id, runtime, decision, answered_by) = (
            all.task_id.clone(),
            all.runtime.clone(),
            all.decision,
            all.answered_by,
        );
        let c = if error.is_none() {
            all
        } else {
            AuditFields::default()
        };
        tracing::info!(
            event = "tool_call",
            tool = self.tool,
            workdir = workdir.as_deref(),
            path = path.as_deref(),
            token_name = token_name.as_deref(),
            success = error.is_none(),
            error_code = error.map(ToolCode::as_str),
            duration_ms,
            returned = c.returned,
            has_more = c.has_more,
            truncated = c.truncated,
            bytes_returned = c.bytes_returned,
            start_line = c.start_line,
            end_line = c.end_line,
            from_end = c.from_end,
            r#type = c.kind,
            bytes_written = c.bytes_written,
            edit_count = c.edit_count,
            bytes_before = c.bytes_before,
            bytes_after = c.bytes_after,
            bytes_deleted = c.bytes_deleted,
            revision = c.revision.as_deref(),
            mime_type = c.mime_type.as_deref(),
            dry_run = c.dry_run,
            task_id = task_id.as_deref(),
            runtime = runtime.as_deref(),
            decision,
            answered_by,
            status = c.status,
        );
    }
}
