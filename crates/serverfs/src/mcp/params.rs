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
    /// Each entry's size and modified_at (default true). false lists names and types only
    /// (size and modified_at null): a shorter answer with no stat per entry on most
    /// filesystems, for browsing big directories.
    #[serde(default = "yes")]
    pub metadata: bool,
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
    /// First line to return (1-based). Use at most one of `start_line`, `cursor` and
    /// `tail_lines`.
    #[schemars(range(min = 1), extend("default" = 1))]
    pub start_line: Option<u64>,
    /// Maximum number of lines to return (capped by the workdir's limit). Not with
    /// `tail_lines`, which is the page size itself.
    #[schemars(range(min = 1), extend("default" = 200))]
    pub max_lines: Option<u64>,
    /// `next_cursor` (the page after) or `prev_cursor` (the page before) of a previous
    /// page: continues exactly there, without rescanning the file. Refused as
    /// `CURSOR_STALE` once the file changes.
    pub cursor: Option<String>,
    /// Return the file's last N lines (capped by the workdir's limit), read backwards from
    /// its end: as fast for a huge log as for a small file. Page further back with
    /// `prev_cursor`.
    #[schemars(range(min = 1))]
    pub tail_lines: Option<u64>,
}

/// Arguments of `create_text_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTextFileParams {
    /// Workdir alias (must be read-write).
    pub workdir: String,
    /// New file's path; the parent directory must exist and nothing may exist at the path.
    pub path: String,
    /// The complete UTF-8 content, written byte for byte (no newline is added).
    pub content: String,
}

/// Arguments of `edit_text_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditTextFileParams {
    /// Workdir alias (must be read-write).
    pub workdir: String,
    /// File to edit.
    pub path: String,
    /// The file's current revision, from `stat_file` or `read_text_file`.
    pub expected_revision: String,
    /// Replacements applied in order, each to the result of the previous; all or nothing.
    #[schemars(length(min = 1))]
    pub edits: Vec<TextEditParam>,
    /// Compute the result and diff without changing the file.
    #[serde(default)]
    pub dry_run: bool,
}

/// One exact-text replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextEditParam {
    /// Exact text to find (not a pattern). Empty only to fill an empty file.
    pub old_text: String,
    /// Replacement text.
    pub new_text: String,
    /// Number of non-overlapping occurrences that must exist; all are replaced.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub expected_count: u64,
}

fn one() -> u64 {
    1
}

/// Arguments of `delete_file` and `delete_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteParams {
    /// Workdir alias (must be read-write).
    pub workdir: String,
    /// Object to delete.
    pub path: String,
    /// The object's current revision, from `stat_file` (or a read).
    pub expected_revision: String,
}

/// Arguments of `create_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDirectoryParams {
    /// Workdir alias (must be read-write).
    pub workdir: String,
    /// Directory to create (one level; the parent must exist).
    pub path: String,
}

/// Arguments of `download_binary_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DownloadBinaryFileParams {
    /// Workdir alias (binary transfer must be enabled there).
    pub workdir: String,
    /// File to download.
    pub path: String,
    /// First byte to return.
    #[serde(default)]
    pub offset: u64,
    /// Return at most this many bytes (capped by the workdir's limit). Without it the
    /// whole file is returned, and files over the limit are refused.
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
    /// For the second and later ranges: the `revision` of the first, so that pieces of
    /// different versions are never mixed (`REVISION_CONFLICT`).
    pub expected_revision: Option<String>,
}

/// Arguments of `upload_binary_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadBinaryFileParams {
    /// Workdir alias (read-write, binary transfer enabled).
    pub workdir: String,
    /// Destination path.
    pub path: String,
    /// The whole file, standard padded base64 (RFC 4648), no whitespace.
    pub data_base64: String,
    /// Replace an existing file (requires `expected_revision`).
    #[serde(default)]
    pub overwrite: bool,
    /// Current revision of the file being replaced; only with `overwrite: true`.
    pub expected_revision: Option<String>,
}

/// Arguments of `find_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindFilesParams {
    /// Workdir alias.
    pub workdir: String,
    /// Glob on file names (`*.rs`, `test_?.py`, `[ab]*`, `*.{js,ts}`); with a `/` it matches
    /// the workdir-relative path instead, `**` spanning directories (`src/**/mod.rs`).
    pub pattern: String,
    /// Directory to search under ("" or "." is the root).
    #[serde(default)]
    pub path: String,
    /// Maximum number of paths to return (capped by the server).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// How `search_text` interprets `query`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Exact text.
    #[default]
    Literal,
    /// A regular expression (Rust `regex` syntax; size-limited).
    Regex,
}

/// Arguments of `search_text`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchTextParams {
    /// Workdir alias.
    pub workdir: String,
    /// Text to find (literal unless `mode` is `regex`); matched within single lines.
    pub query: String,
    /// Directory to search under ("" or "." is the root).
    #[serde(default)]
    pub path: String,
    /// `literal` (default) or `regex`.
    #[serde(default)]
    pub mode: SearchMode,
    /// Match case exactly (default true).
    #[serde(default = "yes")]
    pub case_sensitive: bool,
    /// Only files whose name (glob without `/`) or path relative to `path` (glob with `/`)
    /// matches; a leading `!` excludes matching files instead.
    pub glob: Option<String>,
    /// Lines of context before and after each match (0-5).
    #[serde(default)]
    #[schemars(range(max = 5))]
    pub context_lines: u64,
    /// Also search files excluded by `.gitignore` / `.ignore` files.
    #[serde(default)]
    pub include_ignored: bool,
    /// Maximum number of matches to return (capped by the server).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

fn yes() -> bool {
    true
}
