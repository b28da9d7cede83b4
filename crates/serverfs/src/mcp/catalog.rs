//! The tool table: every tool ServerFS can serve, declared once, in the
//! fixed order `tools/list` reports them.
//!
//! [`tools!`] turns the table below into [`ToolName`] (names and listing
//! order), [`ToolKind`] (which decides when a tool is listed and which
//! service runs it), each tool's `tools/list` entry (description,
//! annotations, input and output schemas) and [`ToolName::call`] (decode
//! the arguments into the row's parameter type, run the row's handler), so
//! none of them can drift from the others. Every match is exhaustive: a new
//! row without a handler, or whose handler takes other parameters or
//! returns another result than the row declares, does not compile.

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::json;
use serverfs_config::ServerSettings;
use serverfs_protocol::bridge::{
    InteractionResolved, ModelCatalog, TaskCancelResult, TaskEventsResult, TaskMessageSendResult,
    TaskResultChunk, TaskSubmitResult,
};

use super::ToolOutput;
use super::agent_params::{
    AnswerAgentQuestionParams, CancelAgentTaskParams, GetAgentTaskParams, ListAgentModelsParams,
    ListAgentRuntimesParams, ReadAgentTaskEventsParams, ReadAgentTaskResultParams,
    RespondAgentApprovalParams, SendAgentMessageParams, SubmitAgentTaskParams,
};
use super::agent_results::{AgentRuntimeList, AgentTaskView};
use super::error::ToolError;
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
use super::schema::{SchemaUse, portable};
use super::text::TextContent;
use crate::audit::AuditRecord;
use crate::service::{AgentService, CallControl, FileService};

/// Which part of the surface a tool belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Always listed; runs on the file service.
    File,
    /// Listed only when some workdir enables binary transfer; runs on the
    /// file service.
    Binary,
    /// Listed only when the Bridge is enabled and some workdir allows
    /// agents; runs on the agent service.
    Agent,
}

/// The service a tool of kind `$kind` runs on. Agent tools are listed only
/// with an agent service, so a missing one ends the call as an unknown
/// tool.
macro_rules! kind_service {
    (File, $files:ident, $agent:ident) => {
        $files
    };
    (Binary, $files:ident, $agent:ident) => {
        $files
    };
    (Agent, $files:ident, $agent:ident) => {
        $agent?
    };
}

/// The `[control]` mark of a row, as the handler's last argument.
macro_rules! call_control {
    (control, $control:ident) => {
        $control
    };
}

/// One row per tool:
///
/// ```text
/// Variant => "wire_name" (ParamsType) -> ResultType {
///     kind: File | Binary | Agent,
///     hints: HINTS,
///     handler: path::to::handler,          // fn(&Service, ParamsType, &AuditRecord)
///     handler: path::to::handler [control], // … , &CallControl) for long calls
///     default limit: fn(&ServerSettings) -> u64,   // optional, repeatable
///     description: "…",
/// },
/// ```
///
/// `ResultType` is the published `outputSchema`; the handler's output must
/// render as exactly that type ([`ToolOutput::Structured`]). A handler
/// marked `[control]` also gets the call's [`CallControl`] (cancellation
/// and progress). A `default` line writes a server-configured default into
/// that input property.
macro_rules! tools {
    ($(
        $variant:ident => $wire:literal ($params:ty) -> $result:ty {
            kind: $kind:ident,
            hints: $hints:expr,
            handler: $handler:path $( [$control:ident] )?,
            $( default $property:ident: $default:path, )*
            description: $description:literal,
        },
    )+) => {
        /// Every tool ServerFS can serve, in `tools/list` order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ToolName {
            $( #[doc = $description] $variant, )+
        }

        impl ToolName {
            /// All tools in listing order.
            pub const ALL: &'static [ToolName] = &[ $( ToolName::$variant, )+ ];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( ToolName::$variant => $wire, )+
                }
            }

            /// The part of the surface the tool belongs to.
            pub const fn kind(self) -> ToolKind {
                match self {
                    $( ToolName::$variant => ToolKind::$kind, )+
                }
            }

            /// Whether the tool declares itself read-only (its
            /// `readOnlyHint`): what the OAuth `read` scope allows.
            pub const fn is_read_only(self) -> bool {
                match self {
                    $( ToolName::$variant => $hints.0, )+
                }
            }

            /// The tool of a wire name.
            pub fn from_wire(name: &str) -> Option<ToolName> {
                ToolName::ALL.iter().copied().find(|tool| tool.as_str() == name)
            }

            fn definition(self, settings: &ServerSettings) -> Tool {
                match self {
                    $( ToolName::$variant => {
                        let tool = tool::<$params, $result>(self, $hints, $description);
                        $(
                            let tool =
                                with_default(tool, stringify!($property), $default(settings));
                        )*
                        tool
                    } )+
                }
            }

            /// Decodes `arguments` into the tool's parameter type and runs
            /// its handler on the service of its kind; `None` for an agent
            /// tool without an agent service.
            pub(super) async fn call(
                self,
                files: &FileService,
                agent: Option<&AgentService>,
                arguments: Option<JsonObject>,
                audit: &AuditRecord,
                control: &CallControl,
                text: TextContent,
            ) -> Option<Result<CallToolResult, ToolError>> {
                Some(match self {
                    $( ToolName::$variant => {
                        let service = kind_service!($kind, files, agent);
                        run::<$params, $result, _, _, _>(arguments, text, |params| {
                            $handler(service, params, audit $(, call_control!($control, control))?)
                        })
                        .await
                    } )+
                })
            }
        }
    };
}

tools! {
    ListWorkdirs => "list_workdirs" (ListWorkdirsParams) -> ListWorkdirsResult {
        kind: File,
        hints: READ,
        handler: list_workdirs,
        description: "List the configured workdirs with their aliases, descriptions, access \
            (read-only or read-write) and capabilities. Call this first.",
    },
    ListDirectory => "list_directory" (ListDirectoryParams) -> ListDirectoryResult {
        kind: File,
        hints: READ,
        handler: FileService::list_directory,
        default limit: list_default,
        description: "List one page of a directory's entries, sorted by name: name, path, type \
            (file/directory/symlink/other), size and modification time (names and types \
            only with metadata: false, cheaper on big directories). Hidden and denied \
            entries are not shown; symlinks are listed but never followed.",
    },
    FindFiles => "find_files" (FindFilesParams) -> FindFilesResult {
        kind: File,
        hints: READ,
        handler: FileService::find_files [control],
        default limit: search_default,
        description: "Find regular files by glob: on names (`*.rs`, `*.{js,ts}`) or, with a \
            `/`, on workdir-relative paths (`src/**/mod.rs`). Results are sorted; \
            symlinks, hidden and denied entries are never returned or entered.",
    },
    SearchText => "search_text" (SearchTextParams) -> SearchTextResult {
        kind: File,
        hints: READ,
        handler: FileService::search_text [control],
        default limit: search_default,
        description: "Search file contents line by line, like ripgrep: literal text by \
            default or mode: regex; optional glob filter, case folding and context \
            lines. Honours .gitignore/.ignore unless include_ignored; skips binary \
            and huge files. Caps return partial results with truncated: true.",
    },
    ReadTextFile => "read_text_file" (ReadTextFileParams) -> ReadTextFileResult {
        kind: File,
        hints: READ,
        handler: FileService::read_text_file,
        description: "Read a page of a UTF-8 text file by line (start_line, max_lines), or its \
            last lines (tail_lines, fast even on huge logs), line endings untouched. When \
            has_more is true, continue with next_cursor (fast, exact) or next_start_line; \
            prev_cursor reads the page before. Returns the file's revision token.",
    },
    StatFile => "stat_file" (StatFileParams) -> StatFileResult {
        kind: File,
        hints: READ,
        handler: FileService::stat_file,
        description: "Describe one file, directory or symlink without following it: type, size, \
            modification time, MIME type and revision token.",
    },
    CreateTextFile => "create_text_file" (CreateTextFileParams) -> CreateTextFileResult {
        kind: File,
        hints: CREATE,
        handler: FileService::create_text_file,
        description: "Create a new UTF-8 text file with exactly the given content. Never \
            overwrites: fails with PATH_ALREADY_EXISTS if anything exists at the path. \
            The parent directory must exist. Read-write workdirs only.",
    },
    EditTextFile => "edit_text_file" (EditTextFileParams) -> EditTextFileResult {
        kind: File,
        hints: DESTRUCTIVE,
        handler: FileService::edit_text_file,
        description: "Apply exact-text replacements to a text file, in order, all or nothing. \
            Needs the file's current revision (expected_revision); each edit's \
            old_text must occur exactly expected_count times. BOM and line endings are \
            kept. Returns a unified diff; dry_run: true previews without writing.",
    },
    DeleteFile => "delete_file" (DeleteParams) -> DeleteFileResult {
        kind: File,
        hints: DESTRUCTIVE,
        handler: FileService::delete_file,
        description: "Delete one regular file whose current revision is expected_revision. \
            Permanent; symlinks and directories are refused.",
    },
    CreateDirectory => "create_directory" (CreateDirectoryParams) -> CreateDirectoryResult {
        kind: File,
        hints: CREATE_IDEMPOTENT,
        handler: FileService::create_directory,
        description: "Create one directory level (not recursive: the parent must exist).",
    },
    DeleteDirectory => "delete_directory" (DeleteParams) -> DeleteDirectoryResult {
        kind: File,
        hints: DESTRUCTIVE,
        handler: FileService::delete_directory,
        description: "Delete one empty directory whose current revision (from stat_file) is \
            expected_revision.",
    },
    DownloadBinaryFile => "download_binary_file"
        (DownloadBinaryFileParams) -> DownloadBinaryFileResult {
        kind: Binary,
        hints: READ,
        handler: FileService::download_binary_file [control],
        description: "Download a file's raw bytes as an embedded base64 blob with size, MIME \
            type, SHA-256 and revision. Large files: pass max_bytes and offset to \
            fetch ranges, and the first range's revision as expected_revision.",
    },
    UploadBinaryFile => "upload_binary_file" (UploadBinaryFileParams) -> UploadBinaryFileResult {
        kind: Binary,
        hints: CREATE,
        handler: FileService::upload_binary_file [control],
        description: "Upload a whole file as standard base64. Creates a new file, or with \
            overwrite: true and expected_revision replaces an existing one atomically.",
    },
    ListAgentRuntimes => "list_agent_runtimes" (ListAgentRuntimesParams) -> AgentRuntimeList {
        kind: Agent,
        hints: READ,
        handler: list_agent_runtimes [control],
        description: "List the coding-agent runtimes the workdirs allow, with availability, \
            version and capabilities (live steering, approvals, questions, recovery), and \
            who answers agents' approvals in each workdir (you or your user). Never starts \
            an agent.",
    },
    ListAgentModels => "list_agent_models" (ListAgentModelsParams) -> ModelCatalog {
        kind: Agent,
        hints: READ_OPEN_WORLD,
        handler: AgentService::list_agent_models,
        description: "List a runtime's models. Give workdir and task_prompt (and optionally path \
            and profile) for advice on which model suits a task; advice is never \
            applied by itself.",
    },
    SubmitAgentTask => "submit_agent_task" (SubmitAgentTaskParams) -> TaskSubmitResult {
        kind: Agent,
        hints: AGENT_SUBMIT,
        handler: AgentService::submit_agent_task,
        description: "Delegate a task to a coding agent in a workdir and return its task_id at \
            once. Then poll get_agent_task (wait_seconds long-polls). A pending_request is \
            your user's decision: show it to them and answer with their choice, or let them \
            answer in their client, as its `answering` says. Read the final_response when \
            status is succeeded.",
    },
    GetAgentTask => "get_agent_task" (GetAgentTaskParams) -> AgentTaskView {
        kind: Agent,
        hints: READ,
        handler: AgentService::get_agent_task [control],
        description: "A task's status, pending approval or question (with the decisions on \
            offer, and who answers it), final response and error. wait_seconds (up to \
            45) waits for the next change instead of answering at once.",
    },
    ReadAgentTaskEvents => "read_agent_task_events"
        (ReadAgentTaskEventsParams) -> TaskEventsResult {
        kind: Agent,
        hints: READ,
        handler: AgentService::read_agent_task_events [control],
        description: "Read a task's events in order, one page at a time: pass \
            next_after_event_id as after_event_id. wait_seconds (up to 45) waits for a \
            new event.",
    },
    ReadAgentTaskResult => "read_agent_task_result" (ReadAgentTaskResultParams) -> TaskResultChunk {
        kind: Agent,
        hints: READ,
        handler: AgentService::read_agent_task_result,
        description: "Read a large final response in chunks (when get_agent_task says \
            final_response_truncated): pass next_offset_bytes as offset_bytes until \
            eof; check the whole against result.sha256.",
    },
    RespondAgentApproval => "respond_agent_approval"
        (RespondAgentApprovalParams) -> InteractionResolved {
        kind: Agent,
        hints: AGENT_DESTRUCTIVE_IDEMPOTENT,
        handler: AgentService::respond_agent_approval [control],
        description: "Answer a task's pending approval with one of its available_decisions, as \
            your user decided (never on your own): approve_once, approve_session, deny or \
            cancel_task. When the request lists options, also pass the option_id your user \
            chose. Refused with APPROVAL_REQUIRES_HUMAN where your user answers in their \
            client.",
    },
    AnswerAgentQuestion => "answer_agent_question"
        (AnswerAgentQuestionParams) -> InteractionResolved {
        kind: Agent,
        hints: AGENT_IDEMPOTENT,
        handler: AgentService::answer_agent_question [control],
        description: "Answer a task's pending question with your user's answers: one per \
            question, with selected_option_ids and/or text as the question allows. Refused \
            with APPROVAL_REQUIRES_HUMAN where your user answers in their client.",
    },
    SendAgentMessage => "send_agent_message" (SendAgentMessageParams) -> TaskMessageSendResult {
        kind: Agent,
        hints: AGENT_STEER,
        handler: AgentService::send_agent_message,
        description: "Send guidance to a running task's agent (runtimes with live steering).",
    },
    CancelAgentTask => "cancel_agent_task" (CancelAgentTaskParams) -> TaskCancelResult {
        kind: Agent,
        hints: AGENT_DESTRUCTIVE_IDEMPOTENT,
        handler: AgentService::cancel_agent_task,
        description: "Cancel a task: it is marked cancelled at once and its agent is stopped. \
            Safe to repeat.",
    },
}

// `list_workdirs` and `list_agent_runtimes` take no arguments (their
// parameter types only refuse unknown ones), so their service methods take
// none; these give them the table's handler shape.

async fn list_workdirs(
    files: &FileService,
    _: ListWorkdirsParams,
    audit: &AuditRecord,
) -> Result<ListWorkdirsResult, ToolError> {
    Ok(files.list_workdirs(audit))
}

async fn list_agent_runtimes(
    agent: &AgentService,
    _: ListAgentRuntimesParams,
    audit: &AuditRecord,
    call: &CallControl,
) -> Result<AgentRuntimeList, ToolError> {
    agent.list_agent_runtimes(audit, call).await
}

/// The published default page size of `list_directory`.
fn list_default(settings: &ServerSettings) -> u64 {
    u64::from(settings.default_list_limit.min(settings.max_list_entries))
}

/// The published default result count of `find_files` and `search_text`.
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
        .filter(|t| match t.kind() {
            ToolKind::File => true,
            ToolKind::Binary => binary_enabled,
            ToolKind::Agent => agent_enabled,
        })
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
    let input = schema_for_input::<P>().map_or_else(
        |_| {
            let mut open = JsonObject::new();
            open.insert("type".into(), json!("object"));
            open
        },
        |generated| portable((*generated).clone(), SchemaUse::Input),
    );
    let output = portable((*schema_for_output::<R>()).clone(), SchemaUse::Output);
    Tool::new(name.as_str(), description, input)
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(ToolAnnotations::from_raw(
            None,
            Some(read_only),
            destructive,
            idempotent,
            Some(open_world),
        ))
}

/// `tool` with `value` as the `default` of input property `property`.
fn with_default(mut tool: Tool, property: &str, value: u64) -> Tool {
    let mut schema = (*tool.input_schema).clone();
    if let Some(prop) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut(property))
        .and_then(|p| p.as_object_mut())
    {
        prop.insert("default".into(), json!(value));
    }
    tool.input_schema = schema.into();
    tool
}

/// Decodes the arguments as `P`, runs the handler, and renders its output,
/// whose structured content is `R`, the published output schema, with its
/// text block as `text` says.
async fn run<P, R, O, F, Fut>(
    arguments: Option<JsonObject>,
    text: TextContent,
    handler: F,
) -> Result<CallToolResult, ToolError>
where
    P: DeserializeOwned,
    O: ToolOutput<Structured = R>,
    F: FnOnce(P) -> Fut,
    Fut: Future<Output = Result<O, ToolError>>,
{
    handler(decode(arguments)?).await?.into_tool_result(text)
}

/// A tool's `arguments` decoded as its parameter type `P`.
///
/// # Errors
///
/// `INVALID_ARGUMENT` naming what does not fit.
pub(super) fn decode<P: DeserializeOwned>(arguments: Option<JsonObject>) -> Result<P, ToolError> {
    serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default()))
        .map_err(|e| ToolError::invalid_argument(format!("invalid arguments: {e}")))
}
