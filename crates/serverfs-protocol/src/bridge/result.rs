//! Final results: where they are stored and how spooled ones are read back
//! (spec-agent-bridge.md §6).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::field::{Nullable, present};

/// Where a task's final response is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultStorage {
    /// Whole in the task record (`final_response` is complete).
    Inline,
    /// In a spool file; `final_response` is a prefix and the rest is read
    /// with `task.result.read`.
    Spool,
}

/// Size and digest of a stored result, for verifying a chunked read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultSummary {
    /// Inline or spooled.
    pub storage: ResultStorage,
    /// Size of the (host-path-redacted) UTF-8 text, in bytes.
    pub size_bytes: u64,
    /// SHA-256 of those bytes, lowercase hex.
    pub sha256: String,
    /// Whether `task.result.read` serves it (`storage == "spool"`).
    pub retrievable: bool,
}

/// `task.result.read` parameters.
///
/// The integers are plain `i64` here: a negative offset or an out-of-range
/// limit is the service's `INVALID_RESULT_OFFSET` / `INVALID_RESULT_LIMIT`,
/// not a protocol error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskResultReadParams {
    /// The task id.
    pub task_id: String,
    /// Byte offset to start at. Absent: 0; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "i64")]
    pub offset_bytes: Option<i64>,
    /// Most bytes to return, `1..=65536`. Absent: 65536; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "i64")]
    pub max_bytes: Option<i64>,
}

impl TaskResultReadParams {
    /// The offset used when `offset_bytes` is absent.
    pub const DEFAULT_OFFSET_BYTES: i64 = 0;
    /// The chunk size used when `max_bytes` is absent, and its maximum.
    pub const MAX_CHUNK_BYTES: i64 = 65_536;
}

/// `task.result.read` result: one chunk of a spooled result.
///
/// A chunk never splits a UTF-8 character. To verify the whole text, compare
/// the concatenated chunks with `result.size_bytes` and `result.sha256` of
/// `task.get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskResultChunk {
    /// The chunk.
    pub text: String,
    /// Where it starts, in bytes.
    pub offset_bytes: u64,
    /// Where the next chunk starts: `offset_bytes` + the chunk's byte length.
    pub next_offset_bytes: u64,
    /// Whether the chunk reaches the end of the result. Reading at exactly
    /// the size returns `""` with `eof: true`.
    pub eof: bool,
    /// The task's correlation id, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
}
