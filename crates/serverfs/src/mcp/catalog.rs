//! The tool catalog: names, descriptions, annotations and schemas, in the
//! fixed order `tools/list` reports them.

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::json;
use serverfs_config::ServerSettings;
use serverfs_protocol::bridge::{
    InteractionResolved, ModelCatalog, RuntimeListResult, TaskCancelResult, TaskEventsResult,
    TaskMessageSendResult, TaskResultChunk, TaskSubmitResult, TaskView,
};

use super::agent_params::{
    AnswerAgentQuestionParams, CancelAgentTaskParams, GetAgentTaskParams, ListAgentModelsParams,
    ListAgentRuntimesParams, ReadAgentTaskEventsParams, ReadAgentTaskResultParams,
    RespondAgentApprovalParams, SendAgentMessageParams, SubmitAgentTaskParams,
};
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
    /// `list_agent_runtimes`
    ListAgentRuntimes,
    /// `list_agent_models`
    ListAgentModels,
    /// `submit_agent_task`
    SubmitAgentTask,
    /// `get_agent_task`
    GetAgentTask,
    /// `read_agent_task_events`
    ReadAgentTaskEvents,
    /// `read_agent_task_result`
    ReadAgentTaskResult,
    /// `respond_agent_approval`
    RespondAgentApproval,
    /// `answer_agent_question`
    AnswerAgentQuestion,
    /// `send_agent_message`
    SendAgentMessage,
    /// `cancel_agent_task`
    CancelAgentTask,
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
        ToolName::ListAgentRuntimes,
        ToolName::ListAgentModels,
        ToolName::SubmitAgentTask,
        ToolName::GetAgentTask,
        ToolName::ReadAgentTaskEvents,
        ToolName::ReadAgentTaskResult,
        ToolName::RespondAgentApproval,
        ToolName::AnswerAgentQuestion,
        ToolName::SendAgentMessage,
        ToolName::CancelAgentTask,
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
            ToolName::ListAgentRuntimes => "list_agent_runtimes",
            ToolName::ListAgentModels => "list_agent_models",
            ToolName::SubmitAgentTask => "submit_agent_task",
            ToolName::GetAgentTask => "get_agent_task",
            ToolName::ReadAgentTaskEvents => "read_agent_task_events",
            ToolName::ReadAgentTaskResult => "read_agent_task_result",
            ToolName::RespondAgentApproval => "respond_agent_approval",
            ToolName::AnswerAgentQuestion => "answer_agent_question",
            ToolName::SendAgentMessage => "send_agent_message",
            ToolName::CancelAgentTask => "cancel_agent_task",
        }
    }

    /// Binary tools are listed only when some workdir enables binary transfer.
    pub const fn is_binary(self) -> bool {
        matches!(
            self,
            ToolName::DownloadBinaryFile | ToolName::UploadBinaryFile
        )
    }

    /// Agent tools are listed only when the Bridge is enabled and some
    /// workdir allows agents.
    pub const fn is_agent(self) -> bool {
        matches!(
            self,
            ToolName::ListAgentRuntimes
                | ToolName::ListAgentModels
                | ToolName::SubmitAgentTask
                | ToolName::GetAgentTask
                | ToolName::ReadAgentTaskEvents
                | ToolName::ReadAgentTaskResult
                | ToolName::RespondAgentApproval
                | ToolName::AnswerAgentQuestion
                | ToolName::SendAgentMessage
                | ToolName::CancelAgentTask
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
            ToolName::ListAgentRuntimes => tool::<ListAgentRuntimesParams, RuntimeListResult>(
                self,
                READ,
                "List the coding-agent runtimes the workdirs allow, with availability, \
                 version and capabilities (live steering, approvals, questions, recovery). \
                 Never starts an agent.",
            ),
            ToolName::ListAgentModels => tool::<ListAgentModelsParams, ModelCatalog>(
                self,
                READ_OPEN_WORLD,
                "List a runtime's models. Give workdir and task_prompt (and optionally path \
                 and profile) for advice on which model suits a task; advice is never \
                 applied by itself.",
            ),
            ToolName::SubmitAgentTask => tool::<SubmitAgentTaskParams, TaskSubmitResult>(
                self,
                AGENT_SUBMIT,
                "Delegate a task to a coding agent in a workdir and return its task_id at \
                 once. Then poll get_agent_task (wait_seconds long-polls): relay a \
                 pending_request to your user and answer it with respond_agent_approval or \
                 answer_agent_question; read the final_response when status is succeeded.",
            ),
            ToolName::GetAgentTask => tool::<GetAgentTaskParams, TaskView>(
                self,
                READ,
                "A task's status, pending approval or question (with the decisions on \
                 offer), final response and error. wait_seconds (up to 45) waits for the \
                 next change instead of answering at once.",
            ),
            ToolName::ReadAgentTaskEvents => tool::<ReadAgentTaskEventsParams, TaskEventsResult>(
                self,
                READ,
                "Read a task's events in order, one page at a time: pass \
                 next_after_event_id as after_event_id. wait_seconds (up to 45) waits for a \
                 new event.",
            ),
            ToolName::ReadAgentTaskResult => tool::<ReadAgentTaskResultParams, TaskResultChunk>(
                self,
                READ,
                "Read a large final response in chunks (when get_agent_task says \
                     final_response_truncated): pass next_offset_bytes as offset_bytes until \
                     eof; check the whole against result.sha256.",
            ),
            ToolName::RespondAgentApproval => {
                tool::<RespondAgentApprovalParams, InteractionResolved>(
                    self,
                    AGENT_DESTRUCTIVE_IDEMPOTENT,
                    "Answer a task's pending approval with one of its available_decisions, as \
                     your user decided: approve_once, approve_session, deny or cancel_task. When \
                     the request lists options, also pass the option_id your user chose.",
                )
            }
            ToolName::AnswerAgentQuestion => {
                tool::<AnswerAgentQuestionParams, InteractionResolved>(
                    self,
                    AGENT_IDEMPOTENT,
                    "Answer a task's pending question: one answer per question, with \
                     selected_option_ids and/or text as the question allows.",
                )
            }
            ToolName::SendAgentMessage => tool::<SendAgentMessageParams, TaskMessageSendResult>(
                self,
                AGENT_STEER,
                "Send guidance to a running task's agent (runtimes with live steering).",
            ),
            ToolName::CancelAgentTask => tool::<CancelAgentTaskParams, TaskCancelResult>(
                self,
                AGENT_DESTRUCTIVE_IDEMPOTENT,
                "Cancel a task: it is marked cancelled at once and its agent is stopped. \
                 Safe to repeat.",
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

/// Hints as `(read_only, destructive, idempotent, open_world)`. File tools
/// are closed-world; agent tools that reach a provider are open-world
/// (spec-agent-bridge.md §1.3). Hints only, never authorization.
type Hints = (bool, Option<bool>, Option<bool>, bool);
const READ: Hints = (true, None, None, false);
const READ_OPEN_WORLD: Hints = (true, None, None, true);
const CREATE: Hints = (false, Some(false), Some(false), false);
const CREATE_IDEMPOTENT: Hints = (false, Some(false), Some(true), false);
const DESTRUCTIVE: Hints = (false, Some(true), Some(true), false);
const AGENT_SUBMIT: Hints = (false, Some(true), Some(false), true);
const AGENT_DESTRUCTIVE_IDEMPOTENT: Hints = (false, Some(true), Some(true), true);
const AGENT_IDEMPOTENT: Hints = (false, Some(false), Some(true), true);
const AGENT_STEER: Hints = (false, Some(true), Some(false), true);

/// Builds the catalog for this configuration. Server-configured defaults
/// (such as the default `limit`) are written into the input schemas.
pub fn tools(settings: &ServerSettings, binary_enabled: bool, agent_enabled: bool) -> Vec<Tool> {
    ToolName::ALL
        .iter()
        .filter(|t| binary_enabled || !t.is_binary())
        .filter(|t| agent_enabled || !t.is_agent())
        .map(|t| t.definition(settings))
        .collect()
}

fn tool<P: JsonSchema + 'static, R: JsonSchema + 'static>(
    name: ToolName,
    (read_only, destructive, idempotent, open_world): Hints,
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
            Some(open_world),
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
