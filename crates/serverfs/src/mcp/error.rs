//! Tool errors: `CODE: message` text plus `{"error": {"code", "message"}}`
//! structured content, with `isError: true`.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use serverfs_fs::FsError;
use serverfs_protocol::ErrorCode;

/// Longest echo of a caller's string in a message, in characters: a
/// multi-megabyte path must not come back (twice) in its own error.
const MAX_ECHO_CHARS: usize = 256;

/// The caller's string, escaped (control characters cannot forge text or
/// log lines) and cut to [`MAX_ECHO_CHARS`].
fn echo(text: &str) -> String {
    let mut shown: String = text
        .chars()
        .take(MAX_ECHO_CHARS)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if text.chars().nth(MAX_ECHO_CHARS).is_some() {
        shown.push('…');
    }
    shown
}

/// A failed tool call, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Stable code.
    pub code: ErrorCode,
    /// Human-readable detail; never a host path or file content.
    pub message: String,
}

impl ToolError {
    /// A kernel error about `path` in `workdir`. `path` is the normalized
    /// path when parsing succeeded, otherwise the caller's own string
    /// (escaped, so control characters cannot forge log or text lines).
    pub fn fs(error: FsError, workdir: &str, path: &str) -> ToolError {
        ToolError {
            code: error.code(),
            message: format!(
                "{}:{} — {error}",
                workdir.escape_debug(),
                path.escape_debug()
            ),
        }
    }

    /// The alias names no configured workdir.
    pub fn workdir_not_found(alias: &str) -> ToolError {
        ToolError {
            code: ErrorCode::WorkdirNotFound,
            message: format!(
                "'{}' is not a configured workdir; call list_workdirs",
                echo(alias)
            ),
        }
    }

    /// Arguments that do not fit the tool's schema or ranges.
    pub fn invalid_argument(message: impl Into<String>) -> ToolError {
        ToolError {
            code: ErrorCode::InvalidArgument,
            message: message.into(),
        }
    }

    /// A failure that is the server's, not the caller's.
    pub fn internal(message: impl Into<String>) -> ToolError {
        ToolError {
            code: ErrorCode::InternalError,
            message: message.into(),
        }
    }

    /// The wire form of the error.
    pub fn into_call_tool_result(self) -> CallToolResult {
        let code = self.code.as_str();
        let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
            "{code}: {}",
            self.message
        ))]);
        result.structured_content = Some(json!({
            "error": { "code": code, "message": self.message }
        }));
        result
    }
}
