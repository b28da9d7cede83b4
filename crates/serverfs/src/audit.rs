//! The audit trail: exactly one `tool_call` JSON line per tool call.
//!
//! Only aliases, normalized workdir-relative paths, outcomes, codes,
//! durations and counts are recorded — never file content, search queries,
//! host paths or the caller's raw path string (which could be anything).

use std::time::Instant;

use serverfs_protocol::ErrorCode;

/// What one tool call did, filled in as the call proceeds.
#[derive(Debug)]
pub struct AuditRecord {
    tool: &'static str,
    started: Instant,
    workdir: Option<String>,
    path: Option<String>,
    /// Tool-specific counts, recorded on success only.
    pub counts: AuditCounts,
}

/// Tool-specific fields of a successful call. `None` fields are omitted.
#[derive(Debug, Default)]
pub struct AuditCounts {
    /// Entries or matches returned.
    pub returned: Option<u64>,
    /// More entries follow.
    pub has_more: Option<bool>,
    /// Content bytes returned.
    pub bytes_returned: Option<u64>,
    /// First line read.
    pub start_line: Option<u64>,
    /// Last line read.
    pub end_line: Option<u64>,
    /// Object kind reported by `stat_file`.
    pub kind: Option<&'static str>,
}

impl AuditRecord {
    /// Starts the record (and its clock) for a call of `tool`.
    pub fn start(tool: &'static str) -> AuditRecord {
        AuditRecord {
            tool,
            started: Instant::now(),
            workdir: None,
            path: None,
            counts: AuditCounts::default(),
        }
    }

    /// Records the workdir alias once it is known to be configured.
    pub fn workdir(&mut self, alias: &str) {
        self.workdir = Some(alias.to_owned());
    }

    /// Records the normalized path once it has parsed.
    pub fn path(&mut self, path: String) {
        self.path = Some(path);
    }

    /// Emits the record.
    pub fn finish(self, error: Option<ErrorCode>) {
        // Milliseconds with one decimal, from a monotonic clock.
        let duration_ms = (self.started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        let c = if error.is_none() {
            self.counts
        } else {
            AuditCounts::default()
        };
        tracing::info!(
            event = "tool_call",
            tool = self.tool,
            workdir = self.workdir.as_deref(),
            path = self.path.as_deref(),
            success = error.is_none(),
            error_code = error.map(ErrorCode::as_str),
            duration_ms,
            returned = c.returned,
            has_more = c.has_more,
            bytes_returned = c.bytes_returned,
            start_line = c.start_line,
            end_line = c.end_line,
            r#type = c.kind,
        );
    }
}
