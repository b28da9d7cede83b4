//! Tool arguments. Unknown arguments are refused (`INVALID_ARGUMENT`), so a
//! misspelt option never silently does nothing. Doc comments become the
//! published `inputSchema` descriptions.

use schemars::JsonSchema;
use serde::Deserialize;

/// `list_workdirs` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWorkdirsParams {}

/// Arguments of `list_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryParams {
    /// Workdir alias, as reported by `list_workdirs`.
    pub workdir: String,
    /// Directory to list, relative to the workdir root ("" or "." is the root).
    #[serde(default)]
    pub path: String,
    /// Number of entries to skip (entries are sorted by name).
    #[serde(default)]
    pub offset: u64,
    /// Maximum number of entries to return (capped by the server).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// Arguments of `stat_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatFileParams {
    /// Workdir alias, as reported by `list_workdirs`.
    pub workdir: String,
    /// Object to describe, relative to the workdir root ("" or "." is the root).
    pub path: String,
}

/// Arguments of `read_text_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadTextFileParams {
    /// Workdir alias, as reported by `list_workdirs`.
    pub workdir: String,
    /// File to read, relative to the workdir root.
    pub path: String,
    /// First line to return (1-based). Do not combine with `cursor`.
    #[schemars(range(min = 1), extend("default" = 1))]
    pub start_line: Option<u64>,
    /// Maximum number of lines to return (capped by the workdir's limit).
    #[schemars(range(min = 1), extend("default" = 200))]
    pub max_lines: Option<u64>,
    /// `next_cursor` of the previous page: continues exactly where it ended,
    /// without rescanning the file. Refused as `CURSOR_STALE` once the file
    /// changes.
    pub cursor: Option<String>,
}
