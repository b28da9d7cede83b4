//! Tool errors: `CODE: message` text plus `{"error": {"code", "message"}}`
//! structured content, with `isError: true`.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use serverfs_fs::FsError;
use serverfs_protocol::ErrorCode;
use serverfs_protocol::bridge::BridgeErrorCode;

/// Longest echo of a caller's string in a message, in characters: a
/// multi-megabyte path must not come back (twice) in its own error.
const MAX_ECHO_CHARS: usize = 256;

/// The caller's string, escaped (control characters cannot forge text or
/// log lines) and cut to [`MAX_ECHO_CHARS`].
pub(crate) fn echo(text: &str) -> String {
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

/// The stable code of a tool error: a file-surface code
/// (`docs/error-codes.md`) or, for the agent tools, an Agent Bridge code
/// (`docs/bridge-error-codes.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCode {
    /// A file-surface code.
    File(ErrorCode),
    /// An Agent Bridge code, passed through from the Bridge or raised by
    /// the MCP-side checks of the agent tools.
    Bridge(BridgeErrorCode),
}

impl ToolCode {
    /// The wire string, e.g. `"PATH_NOT_FOUND"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolCode::File(code) => code.as_str(),
            ToolCode::Bridge(code) => code.as_str(),
        }
    }
}

impl From<ErrorCode> for ToolCode {
    fn from(code: ErrorCode) -> ToolCode {
        ToolCode::File(code)
    }
}

impl From<BridgeErrorCode> for ToolCode {
    fn from(code: BridgeErrorCode) -> ToolCode {
        ToolCode::Bridge(code)
    }
}

impl PartialEq<ErrorCode> for ToolCode {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == ToolCode::File(*other)
    }
}

/// A failed tool call, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Stable code.
    pub code: ToolCode,
    /// Human-readable detail; never a host path or file content.
    pub message: String,
}

impl ToolError {
    /// A kernel error about `path` in `workdir`. `path` is the normalized
    /// path when parsing succeeded, otherwise the caller's own string;
    /// both are echoed escaped (control characters cannot forge log or
    /// text lines) and bounded (a 5,000-byte path refused as too long must
    /// not come back whole).
    pub fn fs(error: FsError, workdir: &str, path: &str) -> ToolError {
        ToolError {
            code: error.code().into(),
            message: format!("{}:{} — {error}", echo(workdir), echo(path)),
        }
    }

    /// The alias names no configured workdir.
    pub fn workdir_not_found(alias: &str) -> ToolError {
        ToolError {
            code: ErrorCode::WorkdirNotFound.into(),
            message: format!(
                "'{}' is not a configured workdir; call list_workdirs",
                echo(alias)
            ),
        }
    }

    /// Arguments that do not fit the tool's schema or ranges.
    pub fn invalid_argument(message: impl Into<String>) -> ToolError {
        ToolError {
            code: ErrorCode::InvalidArgument.into(),
            message: message.into(),
        }
    }

    /// A failure that is the server's, not the caller's.
    pub fn internal(message: impl Into<String>) -> ToolError {
        ToolError {
            code: ErrorCode::InternalError.into(),
            message: message.into(),
        }
    }

    /// An error with an Agent Bridge code.
    pub fn bridge(code: BridgeErrorCode, message: impl Into<String>) -> ToolError {
        ToolError {
            code: code.into(),
            message: message.into(),
        }
    }

    /// The parts of the error as a JSON-RPC error carries it (the resource,
    /// the Tasks extension's methods): the message `CODE: message` and the
    /// data `{"error": {"code", "message"}}`.
    pub fn into_parts(self) -> (String, serde_json::Value) {
        let code = self.code.as_str();
        (
            format!("{code}: {}", self.message),
            json!({ "error": { "code": code, "message": self.message } }),
        )
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
