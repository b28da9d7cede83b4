//! The tool catalog: names, descriptions, annotations and schemas, in the
//! fixed order `tools/list` reports them.

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::json;
use serverfs_config::ServerSettings;

use super::params::{
    CreateDirectoryParams, CreateTextFileParams, DeleteParams, DownloadBinaryFileParams,
    EditTextFileParams, FindFilesParams, ListDirectoryParams, ListWorkdirsParams,
    ReadTextFileParams, SearchTextParams, StatFileParams, UploadBinaryFileParams,
};
use super::results::{
    CreateDirectoryResult, CreateTextFileResult, DeleteDirectoryResult, DeleteFileResult,
    DownloadBinaryFileResult, EditTextFileResult, FindFilesResult, ListDirectoryResult,
    ListWorkdirsResult, ReadTextFileResult, SearchTextResult, StatFileResult,
    UploadBinaryFileResult,
};

/// Every tool ServerFS can serve, in `tools/list` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    /// `list_workdirs`
    ListWorkdirs,
    /// `list_directory`
    ListDirectory,
    /// `find_files`
    FindFiles,
    /// `search_text`
    SearchText,
    /// `read_text_file`
    ReadTextFile,
    /// `stat_file`
    StatFile,
    /// `create_text_file`
    CreateTextFile,
    /// `edit_text_file`
    EditTextFile,
    /// `delete_file`
    DeleteFile,
    /// `create_directory`
    CreateDirectory,
    /// `delete_directory`
    DeleteDirectory,
    /// `download_binary_file`
    DownloadBinaryFile,
    /// `upload_binary_file`
    UploadBinaryFile,
}

impl ToolName {
    /// All tools in listing order.
    pub const ALL: &'static [ToolName] = &[
        ToolName::ListWorkdirs,
        ToolName::ListDirectory,
        ToolName::FindFiles,
        ToolName::SearchText,
        ToolName::ReadTextFile,
        ToolName::StatFile,
        ToolName::CreateTextFile,
        ToolName::EditTextFile,
        ToolName::DeleteFile,
        ToolName::CreateDirectory,
        ToolName::DeleteDirectory,
        ToolName::DownloadBinaryFile,
        ToolName::UploadBinaryFile,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::ListWorkdirs => "list_workdirs",
            ToolName::ListDirectory => "list_directory",
            ToolName::FindFiles => "find_files",
            ToolName::SearchText => "search_text",
            ToolName::ReadTextFile => "read_text_file",
            ToolName::StatFile => "stat_file",
            ToolName::CreateTextFile => "create_text_file",
            ToolName::EditTextFile => "edit_text_file",
            ToolName::DeleteFile => "delete_file",
            ToolName::CreateDirectory => "create_directory",
            ToolName::DeleteDirectory => "delete_directory",
            ToolName::DownloadBinaryFile => "download_binary_file",
            ToolName::UploadBinaryFile => "upload_binary_file",
        }
    }

    /// Binary tools are listed only when some workdir enables binary transfer.
    pub const fn is_binary(self) -> bool {
        matches!(
            self,
            ToolName::DownloadBinaryFile | ToolName::UploadBinaryFile
        )
    }

    fn definition(self, settings: &ServerSettings) -> Tool {
        match self {
            ToolName::ListWorkdirs => tool::<ListWorkdirsParams, ListWorkdirsResult>(
                self,
                READ,
                "List the configured workdirs with their aliases, descriptions, access \
                 (read-only or read-write) and capabilities. Call this first.",
            ),
            ToolName::ListDirectory => {
                let mut t = tool::<ListDirectoryParams, ListDirectoryResult>(
                    self,
                    READ,
                    "List one page of a directory's entries, sorted by name: name, path, type \
                     (file/directory/symlink/other), size and modification time. Hidden and \
                     denied entries are not shown; symlinks are listed but never followed.",
                );
                let default = settings.default_list_limit.min(settings.max_list_entries);
                set_default(&mut t, "limit", u64::from(default));
                t
            }
            ToolName::FindFiles => {
                let mut t = tool::<FindFilesParams, FindFilesResult>(
                    self,
                    READ,
                    "Find regular files by glob: on names (`*.rs`, `*.{js,ts}`) or, with a \
                     `/`, on workdir-relative paths (`src/**/mod.rs`). Results are sorted; \
                     symlinks, hidden and denied entries are never returned or entered.",
                );
                set_default(&mut t, "limit", search_default(settings));
                t
            }
            ToolName::SearchText => {
                let mut t = tool::<SearchTextParams, SearchTextResult>(
                    self,
                    READ,
                    "Search file contents line by line, like ripgrep: literal text by \
                     default or mode: regex; optional glob filter, case folding and context \
                     lines. Honours .gitignore/.ignore unless include_ignored; skips binary \
                     and huge files. Caps return partial results with truncated: true.",
                );
                set_default(&mut t, "limit", search_default(settings));
                t
            }
            ToolName::ReadTextFile => tool::<ReadTextFileParams, ReadTextFileResult>(
                self,
                READ,
                "Read a page of a UTF-8 text file by line (start_line, max_lines), line \
                 endings untouched. When has_more is true, continue with next_cursor (fast, \
                 exact) or next_start_line. Returns the file's revision token.",
            ),
            ToolName::StatFile => tool::<StatFileParams, StatFileResult>(
                self,
                READ,
                "Describe one file, directory or symlink without following it: type, size, \
                 modification time, MIME type and revision token.",
            ),
            ToolName::CreateTextFile => tool::<CreateTextFileParams, CreateTextFileResult>(
                self,
                CREATE,
                "Create a new UTF-8 text file with exactly the given content. Never \
                 overwrites: fails with PATH_ALREADY_EXISTS if anything exists at the path. \
                 The parent directory must exist. Read-write workdirs only.",
            ),
            ToolName::EditTextFile => tool::<EditTextFileParams, EditTextFileResult>(
                self,
                DESTRUCTIVE,
                "Apply exact-text replacements to a text file, in order, all or nothing. \
                 Needs the file's current revision (expected_revision); each edit's \
                 old_text must occur exactly expected_count times. BOM and line endings are \
                 kept. Returns a unified diff; dry_run: true previews without writing.",
            ),
            ToolName::DeleteFile => tool::<DeleteParams, DeleteFileResult>(
                self,
                DESTRUCTIVE,
                "Delete one regular file whose current revision is expected_revision. \
                 Permanent; symlinks and directories are refused.",
            ),
            ToolName::CreateDirectory => tool::<CreateDirectoryParams, CreateDirectoryResult>(
                self,
                CREATE_IDEMPOTENT,
                "Create one directory level (not recursive: the parent must exist).",
            ),
            ToolName::DeleteDirectory => tool::<DeleteParams, DeleteDirectoryResult>(
                self,
                DESTRUCTIVE,
                "Delete one empty directory whose current revision (from stat_file) is \
                 expected_revision.",
            ),
            ToolName::DownloadBinaryFile => {
                tool::<DownloadBinaryFileParams, DownloadBinaryFileResult>(
                    self,
                    READ,
                    "Download a file's raw bytes as an embedded base64 blob with size, MIME \
                     type, SHA-256 and revision. Large files: pass max_bytes and offset to \
                     fetch ranges, and the first range's revision as expected_revision.",
                )
            }
            ToolName::UploadBinaryFile => tool::<UploadBinaryFileParams, UploadBinaryFileResult>(
                self,
                CREATE,
                "Upload a whole file as standard base64. Creates a new file, or with \
                 overwrite: true and expected_revision replaces an existing one atomically.",
            ),
        }
    }
}

fn search_default(settings: &ServerSettings) -> u64 {
    u64::from(
        settings
            .default_search_results
            .min(settings.max_search_results),
    )
}

/// Hints as `(read_only, destructive, idempotent)`; every tool is closed-world.
type Hints = (bool, Option<bool>, Option<bool>);
const READ: Hints = (true, None, None);
const CREATE: Hints = (false, Some(false), Some(false));
const CREATE_IDEMPOTENT: Hints = (false, Some(false), Some(true));
const DESTRUCTIVE: Hints = (false, Some(true), Some(true));

/// Builds the catalog for this configuration. Server-configured defaults
/// (such as the default `limit`) are written into the input schemas.
pub fn tools(settings: &ServerSettings, binary_enabled: bool) -> Vec<Tool> {
    ToolName::ALL
        .iter()
        .filter(|t| binary_enabled || !t.is_binary())
        .map(|t| t.definition(settings))
        .collect()
}

fn tool<P: JsonSchema + 'static, R: JsonSchema + 'static>(
    name: ToolName,
    (read_only, destructive, idempotent): Hints,
    description: &'static str,
) -> Tool {
    // The parameter types are plain structs, so their schemas are objects;
    // should that ever break, publish an open object rather than refuse to
    // start.
    let input = schema_for_input::<P>().unwrap_or_else(|_| {
        let mut open = JsonObject::new();
        open.insert("type".into(), json!("object"));
        open.into()
    });
    Tool::new(name.as_str(), description, input)
        .with_raw_output_schema(schema_for_output::<R>())
        .with_annotations(ToolAnnotations::from_raw(
            None,
            Some(read_only),
            destructive,
            idempotent,
            Some(false),
        ))
}

fn set_default(tool: &mut Tool, property: &str, value: u64) {
    let mut schema = (*tool.input_schema).clone();
    if let Some(prop) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut(property))
        .and_then(|p| p.as_object_mut())
    {
        prop.insert("default".into(), json!(value));
    }
    tool.input_schema = schema.into();
}
