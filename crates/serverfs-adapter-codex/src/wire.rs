//! The subset of the Codex App Server protocol the adapter reads and
//! writes, as types (spec-adapters.md §2; shapes as measured on
//! codex-cli 0.171.0).
//!
//! Our requests are [`Method`]s: a wire name, typed params and a typed
//! result. What Codex sends us is decoded from a method name and params
//! into [`Notification`] and [`ServerRequest`]; anything else is
//! `Other`/`Unsupported`, never an error. Every field is optional unless
//! the adapter cannot work without it, and fields whose shape drifted
//! between Codex releases are untagged enums ([`Tagged`], [`DecisionList`],
//! [`Field`]) so that every shape decodes. The enum values the adapter
//! acts on (item types, item, turn and thread statuses, message phases,
//! decisions) are enums whose `Unknown` variant takes the values a later
//! Codex adds. Values the adapter only bounds and passes on to clients
//! (file changes, a command's argv) stay JSON.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serverfs_agent_runtime::jsonrpc::RequestId;

/// One request of ours: its wire name, params and result.
pub trait Method {
    /// The JSON-RPC method.
    const NAME: &'static str;
    /// What we send.
    type Params: Serialize;
    /// What Codex answers.
    type Result: DeserializeOwned;
}

macro_rules! methods {
    ($($(#[$doc:meta])* $name:ident => $wire:literal ($params:ty) -> $result:ty;)*) => {$(
        $(#[$doc])*
        pub enum $name {}

        impl Method for $name {
            const NAME: &'static str = $wire;
            type Params = $params;
            type Result = $result;
        }
    )*};
}

methods! {
    /// Opens the connection.
    Initialize => "initialize" (InitializeParams) -> InitializeResult;
    /// Starts a thread (a new native session).
    ThreadStart => "thread/start" (ThreadStartParams) -> ThreadResult;
    /// Resumes a recorded thread (a continuation).
    ThreadResume => "thread/resume" (ThreadResumeParams) -> ThreadResult;
    /// Starts a turn on a thread.
    TurnStart => "turn/start" (TurnStartParams) -> TurnResult;
    /// Steers the running turn.
    TurnSteer => "turn/steer" (TurnSteerParams) -> Value;
    /// Interrupts the running turn.
    TurnInterrupt => "turn/interrupt" (TurnRef) -> Value;
    /// One page of the model catalog.
    ModelList => "model/list" (ModelListParams) -> ModelPage;
    /// What Codex knows of a thread (reconciliation).
    ThreadRead => "thread/read" (ThreadReadParams) -> ThreadResult;
}

/// The `initialized` notification that completes the handshake.
pub const INITIALIZED: &str = "initialized";

/// `initialize` params.
#[derive(Debug, Serialize)]
pub struct InitializeParams {
    /// Who we are.
    #[serde(rename = "clientInfo")]
    pub client_info: ClientInfo,
    /// What we accept.
    pub capabilities: ClientCapabilities,
}

/// `initialize.clientInfo`.
#[derive(Debug, Serialize)]
pub struct ClientInfo {
    /// Machine name.
    pub name: &'static str,
    /// Display name.
    pub title: &'static str,
    /// Our version.
    pub version: &'static str,
}

/// `initialize.capabilities`.
#[derive(Debug, Serialize)]
pub struct ClientCapabilities {
    /// Needed for `availableDecisions` and `additionalPermissions` on
    /// approvals.
    #[serde(rename = "experimentalApi")]
    pub experimental_api: bool,
}

/// The `initialize` result.
#[derive(Debug, Default, Deserialize)]
pub struct InitializeResult {
    /// `codex_app_server/<version> (…)`.
    #[serde(rename = "userAgent", default)]
    pub user_agent: Option<String>,
}

/// `thread/start` params: the cwd and, only when the task asks, a model —
/// never a sandbox, approval policy or configuration override (native
/// mode).
#[derive(Debug, Serialize)]
pub struct ThreadStartParams {
    /// The authorized working directory.
    pub cwd: String,
    /// A request-scoped model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `thread/resume` params.
#[derive(Debug, Serialize)]
pub struct ThreadResumeParams {
    /// The recorded thread.
    #[serde(rename = "threadId")]
    pub thread_id: String,
    /// The authorized working directory.
    pub cwd: String,
    /// A request-scoped model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A thread in a result (`thread/start`, `thread/resume`, `thread/read`).
#[derive(Debug, Deserialize)]
pub struct ThreadResult {
    /// The thread.
    pub thread: Thread,
}

/// What the adapter reads of a thread.
#[derive(Debug, Deserialize)]
pub struct Thread {
    /// Its id.
    pub id: String,
    /// A string, or since 0.171.0 an object with a `type` (and
    /// `activeFlags`).
    #[serde(default)]
    pub status: Option<Tagged<ThreadStatus>>,
}

/// A thread's status (reconciliation asks only whether it is active).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ThreadStatus {
    /// `idle`: no turn runs.
    Idle,
    /// `active`: a turn runs.
    Active,
    /// `notLoaded`: on disk, not in memory (resumable).
    NotLoaded,
    /// `systemError`.
    SystemError,
    /// A status this adapter does not know.
    #[serde(other)]
    Unknown,
}

/// One input item: the adapter only sends text.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "text")]
pub struct TextInput {
    /// The text.
    pub text: String,
}

/// `turn/start` params.
#[derive(Debug, Serialize)]
pub struct TurnStartParams {
    /// The thread.
    #[serde(rename = "threadId")]
    pub thread_id: String,
    /// The prompt.
    pub input: Vec<TextInput>,
    /// The authorized working directory.
    pub cwd: String,
}

/// The `turn/start` result.
#[derive(Debug, Deserialize)]
pub struct TurnResult {
    /// The turn.
    pub turn: TurnId,
}

/// A turn's id.
#[derive(Debug, Deserialize)]
pub struct TurnId {
    /// The id.
    pub id: String,
}

/// `turn/steer` params.
#[derive(Debug, Serialize)]
pub struct TurnSteerParams {
    /// The thread.
    #[serde(rename = "threadId")]
    pub thread_id: String,
    /// The steering message.
    pub input: Vec<TextInput>,
    /// The turn the message is for: Codex refuses it for another.
    #[serde(rename = "expectedTurnId")]
    pub expected_turn_id: String,
}

/// A thread's turn (`turn/interrupt` params).
#[derive(Debug, Clone, Serialize)]
pub struct TurnRef {
    /// The thread.
    #[serde(rename = "threadId")]
    pub thread_id: String,
    /// The turn.
    #[serde(rename = "turnId")]
    pub turn_id: String,
}

/// `model/list` params.
#[derive(Debug, Serialize)]
pub struct ModelListParams {
    /// Page size.
    pub limit: usize,
    /// Hidden models too (the catalog marks them).
    #[serde(rename = "includeHidden")]
    pub include_hidden: bool,
    /// The page after this cursor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One `model/list` page. Entries stay JSON until [`Model`] decodes each
/// alone: one odd entry must not cost the whole catalog.
#[derive(Debug, Deserialize)]
pub struct ModelPage {
    /// The models.
    #[serde(default)]
    pub data: Vec<Value>,
    /// The next page's cursor.
    #[serde(rename = "nextCursor", default)]
    pub next_cursor: Option<String>,
}

/// One catalog entry.
#[derive(Debug, Deserialize)]
pub struct Model {
    /// The model name to pass back (preferred over `id`).
    #[serde(default)]
    pub model: Option<String>,
    /// The entry's id.
    #[serde(default)]
    pub id: Option<String>,
    /// Display name.
    #[serde(rename = "displayName", default)]
    pub display_name: Option<String>,
    /// The default model.
    #[serde(rename = "isDefault", default)]
    pub is_default: Option<bool>,
    /// Hidden from pickers.
    #[serde(default)]
    pub hidden: Option<bool>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Input kinds (`text`, `image`).
    #[serde(rename = "inputModalities", default)]
    pub input_modalities: Option<Vec<Value>>,
    /// Reasoning efforts: names, or objects with a `reasoningEffort`.
    #[serde(rename = "supportedReasoningEfforts", default)]
    pub supported_reasoning_efforts: Option<Vec<Effort>>,
    /// The default effort, passed on as given.
    #[serde(rename = "defaultReasoningEffort", default)]
    pub default_reasoning_effort: Option<Value>,
}

/// A reasoning effort, in either spelling.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Effort {
    /// `"low"`.
    Name(String),
    /// `{"reasoningEffort": "low", "description": …}`.
    Described {
        /// The effort.
        #[serde(rename = "reasoningEffort")]
        reasoning_effort: String,
    },
    /// Anything else: skipped.
    Other(IgnoredAny),
}

/// `thread/read` params.
#[derive(Debug, Serialize)]
pub struct ThreadReadParams {
    /// The thread.
    #[serde(rename = "threadId")]
    pub thread_id: String,
    /// With its turns.
    #[serde(rename = "includeTurns")]
    pub include_turns: bool,
}

/// An enum value as a string, or (Codex 0.171.0 turned several enums
/// into tagged objects) an object with a `type`; both decode, and any
/// other shape is kept as sent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Tagged<T> {
    /// `{"type": "completed", …}`.
    Object {
        /// The value.
        #[serde(rename = "type")]
        kind: T,
    },
    /// `"completed"`.
    Name(T),
    /// Any other shape (`null`, a number, an object without a readable
    /// `type`): no value.
    Other(Value),
}

impl<T> Tagged<T> {
    /// The value, in either shape.
    pub fn value(&self) -> Option<&T> {
        match self {
            Tagged::Object { kind: value } | Tagged::Name(value) => Some(value),
            Tagged::Other(_) => None,
        }
    }
}

/// An enum of Codex's whose values the adapter passes on to clients by
/// name: the known values as variants, anything else kept by name in
/// `Unknown` (Codex adds values between releases). Decodes from a string
/// only.
macro_rules! named_values {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $wire:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
        #[serde(from = "String")]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A value this adapter does not know, as sent.
            Unknown(String),
        }

        impl From<String> for $name {
            fn from(name: String) -> Self {
                match name.as_str() {
                    $($wire => $name::$variant,)*
                    _ => $name::Unknown(name),
                }
            }
        }

        impl $name {
            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)*
                    $name::Unknown(name) => name,
                }
            }
        }
    };
}

named_values! {
    /// An item's type: the event summary keeps different fields of each.
    ItemType {
        /// Text from the agent.
        AgentMessage => "agentMessage",
        /// A command run.
        CommandExecution => "commandExecution",
        /// File edits.
        FileChange => "fileChange",
    }
}

named_values! {
    /// An item's status (`status` on commands, file changes, tool calls).
    ItemStatus {
        /// Still running.
        InProgress => "inProgress",
        /// Done.
        Completed => "completed",
        /// Failed.
        Failed => "failed",
        /// Declined by the approver.
        Declined => "declined",
    }
}

named_values! {
    /// An agent message's phase. (With a custom provider Codex sends
    /// `null`: measured on 0.171.0.)
    MessagePhase {
        /// Working notes on the way.
        Commentary => "commentary",
        /// The turn's answer.
        FinalAnswer => "final_answer",
    }
}

named_values! {
    /// How a turn ended (`turn/completed`); a status the adapter does not
    /// know is a failure that names it.
    TurnStatus {
        /// It finished.
        Completed => "completed",
        /// It was interrupted (`turn/interrupt`).
        Interrupted => "interrupted",
        /// It failed (`error` says why).
        Failed => "failed",
        /// Still running (never in `turn/completed`).
        InProgress => "inProgress",
    }
}

/// The thread and turn a message belongs to, when it says: on a shared
/// daemon other threads' traffic arrives on the same connection. Decoded
/// leniently from any params (unknown fields ignored, odd shapes mean
/// "does not say").
#[derive(Debug, Default, Deserialize)]
pub struct Scope {
    /// `threadId`.
    #[serde(rename = "threadId", default)]
    pub thread_id: Option<String>,
    /// `turnId`.
    #[serde(rename = "turnId", default)]
    pub turn_id: Option<String>,
    /// `turn.id`.
    #[serde(default)]
    pub turn: Option<ScopeTurn>,
}

/// `turn.id` of a [`Scope`].
#[derive(Debug, Default, Deserialize)]
pub struct ScopeTurn {
    /// The id.
    #[serde(default)]
    pub id: Option<String>,
}

impl Scope {
    /// The scope of `params`.
    pub fn of(params: &Value) -> Scope {
        Scope::deserialize(params).unwrap_or_default()
    }

    /// Whether the message names another thread or turn than ours.
    pub fn is_foreign(&self, thread_id: &str, turn_id: &str) -> bool {
        let other =
            |theirs: &Option<String>, ours: &str| theirs.as_deref().is_some_and(|t| t != ours);
        other(&self.thread_id, thread_id)
            || other(&self.turn_id, turn_id)
            || self
                .turn
                .as_ref()
                .is_some_and(|turn| other(&turn.id, turn_id))
    }
}

/// The notifications the turn loop acts on.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum Notification {
    /// The turn began (its params are not read).
    #[serde(rename = "turn/started")]
    TurnStarted(IgnoredAny),
    /// An item began.
    #[serde(rename = "item/started")]
    ItemStarted(ItemParams),
    /// An item finished.
    #[serde(rename = "item/completed")]
    ItemCompleted(ItemParams),
    /// A provider error (maybe retried).
    #[serde(rename = "error")]
    Error(ErrorParams),
    /// The turn ended.
    #[serde(rename = "turn/completed")]
    TurnCompleted(TurnCompletedParams),
    /// Codex resolved one of its requests itself.
    #[serde(rename = "serverRequest/resolved")]
    ServerRequestResolved(ResolvedParams),
    /// Token usage, rate limits, deltas, warnings and the like.
    #[serde(other)]
    Other,
}

impl Notification {
    /// Decodes notification `method` with `params`; one the adapter does
    /// not act on, or cannot read, is [`Notification::Other`].
    pub fn decode(method: String, params: Value) -> Notification {
        decode_tagged(method, params).unwrap_or(Notification::Other)
    }
}

/// `item/started` and `item/completed` params.
#[derive(Debug, Deserialize)]
pub struct ItemParams {
    /// The item.
    pub item: Item,
}

/// What the adapter reads of an item: its type, what makes an agent
/// message the answer, and the fields the event summary passes on to
/// clients. A field that is present is kept even when `null` (the summary
/// shows it as sent); one of an unexpected shape is kept as sent
/// ([`Field::Sent`], [`Tagged::Other`]) rather than costing the item.
#[derive(Debug, Deserialize)]
pub struct Item {
    /// `agentMessage`, `commandExecution`, `fileChange`, …
    #[serde(rename = "type", default)]
    pub kind: Option<Tagged<ItemType>>,
    /// The item's id.
    #[serde(default, deserialize_with = "present")]
    pub id: Option<Field<String>>,
    /// An agent message's text.
    #[serde(default, deserialize_with = "present")]
    pub text: Option<Field<String>>,
    /// An agent message's phase.
    #[serde(default, deserialize_with = "present")]
    pub phase: Option<Tagged<MessagePhase>>,
    /// A command's line (a string since 0.171.0; an argv list before).
    #[serde(default, deserialize_with = "present")]
    pub command: Option<Field<String>>,
    /// Where a command runs (a host path; the core redacts it).
    #[serde(default, deserialize_with = "present")]
    pub cwd: Option<Field<String>>,
    /// The item's status.
    #[serde(default, deserialize_with = "present")]
    pub status: Option<Tagged<ItemStatus>>,
    /// A command's exit code.
    #[serde(rename = "exitCode", default, deserialize_with = "present")]
    pub exit_code: Option<Field<i64>>,
    /// A file change's entries, passed on (bounded) as sent.
    #[serde(default, deserialize_with = "present")]
    pub changes: Option<Value>,
}

impl Item {
    /// The item's type, when it has a readable one.
    pub fn item_type(&self) -> Option<&ItemType> {
        self.kind.as_ref().and_then(Tagged::value)
    }

    /// The text of an agent message (`""` when it has none).
    pub fn message_text(&self) -> &str {
        match &self.text {
            Some(Field::Read(text)) => text,
            Some(Field::Sent(_)) | None => "",
        }
    }

    /// Whether this agent message is the turn's answer (phase
    /// `final_answer`).
    pub fn is_final_answer(&self) -> bool {
        self.phase.as_ref().and_then(Tagged::value) == Some(&MessagePhase::FinalAnswer)
    }
}

/// A field read as `T`, or, in a shape another Codex release sends, kept
/// as sent (and passed on unread).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Field<T> {
    /// The expected shape.
    Read(T),
    /// Any other.
    Sent(Value),
}

/// Deserializes a field that is present, `null` included: with `default`,
/// an absent field is `None` and a `null` one `Some` (a plain `Option`
/// would make both `None`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// `error` params: the message in one of three places.
#[derive(Debug, Deserialize)]
pub struct ErrorParams {
    /// `error.message`, or `error` as a string.
    #[serde(default)]
    pub error: Option<ErrorField>,
    /// `message`.
    #[serde(default)]
    pub message: Option<String>,
    /// Codex retries by itself.
    #[serde(rename = "willRetry", default)]
    pub will_retry: Option<bool>,
}

/// `error.error`, in either shape.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ErrorField {
    /// `{"message": …}`.
    Object {
        /// The message.
        #[serde(default)]
        message: Option<String>,
    },
    /// A bare string.
    Text(String),
}

impl ErrorParams {
    /// The provider's message, wherever it is.
    pub fn message(&self) -> Option<&str> {
        let nested = match &self.error {
            Some(ErrorField::Object { message }) => message.as_deref(),
            Some(ErrorField::Text(text)) => Some(text.as_str()),
            None => None,
        };
        nested.or(self.message.as_deref())
    }
}

/// `turn/completed` params.
#[derive(Debug, Deserialize)]
pub struct TurnCompletedParams {
    /// The finished turn.
    #[serde(default)]
    pub turn: Option<FinishedTurn>,
}

/// A finished turn.
#[derive(Debug, Deserialize)]
pub struct FinishedTurn {
    /// How it ended.
    #[serde(default)]
    pub status: Option<Tagged<TurnStatus>>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<TurnError>,
}

/// A failed turn's error.
#[derive(Debug, Deserialize)]
pub struct TurnError {
    /// Provider text (scrubbed before use).
    #[serde(default)]
    pub message: Option<String>,
}

/// `serverRequest/resolved` params.
#[derive(Debug, Deserialize)]
pub struct ResolvedParams {
    /// The request Codex settled.
    #[serde(rename = "requestId")]
    pub request_id: RequestId,
}

/// The server requests the Bridge serves; anything else is refused at
/// once as unsupported.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum ServerRequest {
    /// Run a command? (Boxed: by far the largest variant, more so with
    /// serde_json's order-preserving maps, which the workspace's ACP crate
    /// turns on.)
    #[serde(rename = "item/commandExecution/requestApproval")]
    CommandApproval(Box<CommandApprovalParams>),
    /// Apply file changes?
    #[serde(rename = "item/fileChange/requestApproval")]
    FileChangeApproval(FileChangeApprovalParams),
    /// Grant permissions?
    #[serde(rename = "item/permissions/requestApproval")]
    PermissionsApproval(PermissionsApprovalParams),
    /// Questions for the user.
    #[serde(rename = "item/tool/requestUserInput")]
    UserInput(UserInputParams),
    /// A request kind the Bridge does not serve.
    #[serde(other)]
    Unsupported,
}

/// A server request that could not be read: its method is served, its
/// params are not what the adapter understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

impl ServerRequest {
    /// Decodes server request `method` with `params`.
    ///
    /// # Errors
    ///
    /// [`Malformed`] when a served method's params do not decode.
    pub fn decode(method: String, params: Value) -> Result<ServerRequest, Malformed> {
        // The method alone tells an unsupported request (serde's `other`
        // takes no params); only a served one must have readable params.
        let mut tag = Map::new();
        tag.insert("method".to_owned(), Value::String(method.clone()));
        if let Ok(ServerRequest::Unsupported) = serde_json::from_value(Value::Object(tag)) {
            return Ok(ServerRequest::Unsupported);
        }
        decode_tagged(method, params).map_err(|_| Malformed)
    }
}

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Deserialize)]
pub struct CommandApprovalParams {
    /// Why Codex asks.
    #[serde(default)]
    pub reason: Option<String>,
    /// A shell string or an argv list.
    #[serde(default)]
    pub command: Option<Value>,
    /// Where it runs (a host path; the core redacts it).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The decisions Codex offers.
    #[serde(rename = "availableDecisions", default)]
    pub available_decisions: Option<DecisionList>,
    /// Network access the command needs.
    #[serde(rename = "networkApprovalContext", default)]
    pub network_approval_context: Option<Value>,
    /// Permissions beyond the sandbox it needs.
    #[serde(rename = "additionalPermissions", default)]
    pub additional_permissions: Option<Value>,
}

/// `item/fileChange/requestApproval` params.
#[derive(Debug, Deserialize)]
pub struct FileChangeApprovalParams {
    /// Why Codex asks.
    #[serde(default)]
    pub reason: Option<String>,
    /// The root the change needs (a host path; the core redacts it).
    #[serde(rename = "grantRoot", default)]
    pub grant_root: Option<String>,
    /// The decisions Codex offers.
    #[serde(rename = "availableDecisions", default)]
    pub available_decisions: Option<DecisionList>,
}

/// `item/permissions/requestApproval` params.
#[derive(Debug, Deserialize)]
pub struct PermissionsApprovalParams {
    /// Why Codex asks.
    #[serde(default)]
    pub reason: Option<String>,
    /// The permission entries, by name, each passed back as given when
    /// granted.
    #[serde(default)]
    pub permissions: Option<Map<String, Value>>,
}

/// `availableDecisions`: a list of names and (unsupported) objects, or
/// whatever else a Codex release sends.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum DecisionList {
    /// The list.
    List(Vec<Decision>),
    /// Not a list: nothing can be offered from it.
    Other(Value),
}

/// One offered decision.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Decision {
    /// A decision by name.
    Name(NativeDecision),
    /// An object-shaped decision (`acceptWithExecpolicyAmendment`), or
    /// any other value: never offered.
    Object(IgnoredAny),
}

named_values! {
    /// A decision Codex offers by name, and the one the Bridge answers; a
    /// name the Bridge does not know is never offered.
    NativeDecision {
        /// Run it.
        Accept => "accept",
        /// Run it, and the like for the rest of the session.
        AcceptForSession => "acceptForSession",
        /// Do not run it; the turn goes on.
        Decline => "decline",
        /// Do not run it, and stop the turn.
        Cancel => "cancel",
    }
}

/// `item/tool/requestUserInput` params.
#[derive(Debug, Deserialize)]
pub struct UserInputParams {
    /// The questions.
    pub questions: Vec<UserQuestion>,
}

/// One question.
#[derive(Debug, Deserialize)]
pub struct UserQuestion {
    /// Its id (the answer's key).
    pub id: String,
    /// Its text.
    pub question: String,
    /// Choices.
    #[serde(default)]
    pub options: Option<Vec<UserOption>>,
    /// Free text is allowed beside the choices.
    #[serde(rename = "isOther", default)]
    pub is_other: Option<bool>,
    /// The answer is a secret.
    #[serde(rename = "isSecret", default)]
    pub is_secret: Option<bool>,
}

/// One choice; entries without a label are skipped.
#[derive(Debug, Deserialize)]
pub struct UserOption {
    /// What the user sees and what is answered.
    #[serde(default)]
    pub label: Option<String>,
    /// More about it.
    #[serde(default)]
    pub description: Option<String>,
}

/// Decodes an adjacently tagged enum from a method name and its params.
fn decode_tagged<T: DeserializeOwned>(method: String, params: Value) -> serde_json::Result<T> {
    let mut message = Map::new();
    message.insert("method".to_owned(), Value::String(method));
    message.insert("params".to_owned(), params);
    serde_json::from_value(Value::Object(message))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn thread_status(status: Value) -> Option<Tagged<ThreadStatus>> {
        serde_json::from_value::<Thread>(json!({ "id": "t", "status": status }))
            .unwrap()
            .status
    }

    fn turn_status(turn: Value) -> Option<Tagged<TurnStatus>> {
        serde_json::from_value::<TurnCompletedParams>(json!({ "turn": turn }))
            .unwrap()
            .turn
            .and_then(|turn| turn.status)
    }

    #[test]
    fn a_thread_status_decodes_as_a_string_or_an_object() {
        assert_eq!(
            thread_status(json!("idle")),
            Some(Tagged::Name(ThreadStatus::Idle))
        );
        // 0.171.0: an object with a `type` and flags.
        assert_eq!(
            thread_status(json!({ "type": "active", "activeFlags": [] })),
            Some(Tagged::Object {
                kind: ThreadStatus::Active
            })
        );
        assert_eq!(
            thread_status(json!({ "type": "notLoaded" })),
            Some(Tagged::Object {
                kind: ThreadStatus::NotLoaded
            })
        );
        // A status of a later Codex, in either shape.
        assert_eq!(
            thread_status(json!("archived")),
            Some(Tagged::Name(ThreadStatus::Unknown))
        );
        assert_eq!(
            thread_status(json!({ "type": "archived" })),
            Some(Tagged::Object {
                kind: ThreadStatus::Unknown
            })
        );
        // Unreadable shapes are kept, without a value.
        assert_eq!(thread_status(json!(3)), Some(Tagged::Other(json!(3))));
        let odd = thread_status(json!({ "kind": "active" })).unwrap();
        assert_eq!(odd.value(), None);
        let absent: Thread = serde_json::from_value(json!({ "id": "t" })).unwrap();
        assert_eq!(absent.status, None);
    }

    #[test]
    fn a_turn_status_decodes_as_a_string_or_an_object_and_keeps_unknown_names() {
        assert_eq!(
            turn_status(json!({ "status": "completed" })),
            Some(Tagged::Name(TurnStatus::Completed))
        );
        assert_eq!(
            turn_status(json!({ "status": { "type": "interrupted" } })),
            Some(Tagged::Object {
                kind: TurnStatus::Interrupted
            })
        );
        let unknown = turn_status(json!({ "status": "cancelledByPolicy" })).unwrap();
        assert_eq!(
            unknown.value(),
            Some(&TurnStatus::Unknown("cancelledByPolicy".to_owned()))
        );
        assert_eq!(
            unknown.value().map(TurnStatus::as_str),
            Some("cancelledByPolicy")
        );
        assert_eq!(
            turn_status(json!({ "status": 5 })),
            Some(Tagged::Other(json!(5)))
        );
        assert_eq!(turn_status(json!({ "status": null })), None);
        assert_eq!(turn_status(json!({ "id": "u" })), None);
    }

    fn item(value: Value) -> Item {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn item_types_decode_in_both_shapes_and_keep_unknown_names() {
        let message = item(json!({ "type": "agentMessage", "id": "m" }));
        assert_eq!(message.item_type(), Some(&ItemType::AgentMessage));
        let object = item(json!({ "type": { "type": "fileChange" } }));
        assert_eq!(object.item_type(), Some(&ItemType::FileChange));
        let reasoning = item(json!({ "type": "reasoning" }));
        assert_eq!(
            reasoning.item_type(),
            Some(&ItemType::Unknown("reasoning".to_owned()))
        );
        assert_eq!(
            reasoning.item_type().map(ItemType::as_str),
            Some("reasoning")
        );
        assert_eq!(item(json!({ "id": "x" })).item_type(), None);
        assert_eq!(item(json!({ "type": 7 })).item_type(), None);
    }

    #[test]
    fn message_phases_decode_absent_null_named_and_unknown() {
        let phase = |phase: Value| item(json!({ "type": "agentMessage", "phase": phase }));
        assert!(phase(json!("final_answer")).is_final_answer());
        assert!(phase(json!({ "type": "final_answer" })).is_final_answer());
        assert!(!phase(json!("commentary")).is_final_answer());
        // A custom provider's `null` is there, with no value (0.171.0).
        let null = phase(Value::Null);
        assert_eq!(null.phase, Some(Tagged::Other(Value::Null)));
        assert!(!null.is_final_answer());
        let later = phase(json!("summary"));
        assert_eq!(
            later.phase,
            Some(Tagged::Name(MessagePhase::Unknown("summary".to_owned())))
        );
        assert_eq!(item(json!({ "type": "agentMessage" })).phase, None);
    }

    #[test]
    fn item_fields_of_another_shape_are_kept_as_sent() {
        // The argv list of earlier releases, a string exit code, a numeric
        // id: the item still decodes, each field as it came.
        let command = item(json!({
            "type": "commandExecution", "id": 5, "command": ["cargo", "test"],
            "exitCode": "0", "status": { "type": "completed" }, "text": null,
        }));
        assert_eq!(command.id, Some(Field::Sent(json!(5))));
        assert_eq!(command.command, Some(Field::Sent(json!(["cargo", "test"]))));
        assert_eq!(command.exit_code, Some(Field::Sent(json!("0"))));
        assert_eq!(
            command.status,
            Some(Tagged::Object {
                kind: ItemStatus::Completed
            })
        );
        assert_eq!(command.text, Some(Field::Sent(Value::Null)));
        assert_eq!(command.message_text(), "");
        let typed = item(json!({ "type": "commandExecution", "command": "ls", "exitCode": 1 }));
        assert_eq!(typed.command, Some(Field::Read("ls".to_owned())));
        assert_eq!(typed.exit_code, Some(Field::Read(1)));
        assert_eq!(typed.cwd, None);
        let text = item(json!({ "type": "agentMessage", "text": "hi" }));
        assert_eq!(text.message_text(), "hi");
    }

    #[test]
    fn decisions_decode_by_name_and_object_shaped_ones_are_kept_apart() {
        let list: DecisionList = serde_json::from_value(json!([
            "accept",
            "acceptForSession",
            "decline",
            "cancel",
            "somethingNew",
            { "acceptWithExecpolicyAmendment": { "execpolicy_amendment": ["pytest"] } },
            7,
        ]))
        .unwrap();
        let DecisionList::List(decisions) = list else {
            panic!("a list");
        };
        let names: Vec<Option<NativeDecision>> = decisions
            .into_iter()
            .map(|decision| match decision {
                Decision::Name(name) => Some(name),
                Decision::Object(_) => None,
            })
            .collect();
        assert_eq!(
            names,
            vec![
                Some(NativeDecision::Accept),
                Some(NativeDecision::AcceptForSession),
                Some(NativeDecision::Decline),
                Some(NativeDecision::Cancel),
                Some(NativeDecision::Unknown("somethingNew".to_owned())),
                None,
                None,
            ]
        );
        assert!(matches!(
            serde_json::from_value::<DecisionList>(json!("accept")).unwrap(),
            DecisionList::Other(_)
        ));
    }

    #[test]
    fn unknown_and_unreadable_notifications_are_other() {
        assert!(matches!(
            Notification::decode("thread/tokenUsage/updated".into(), json!({})),
            Notification::Other
        ));
        assert!(matches!(
            Notification::decode("serverRequest/resolved".into(), json!({ "requestId": [] })),
            Notification::Other
        ));
        assert!(matches!(
            Notification::decode("serverRequest/resolved".into(), json!({ "requestId": "7" })),
            Notification::ServerRequestResolved(ResolvedParams {
                request_id: RequestId::String(id)
            }) if id == "7"
        ));
        assert!(matches!(
            Notification::decode("turn/started".into(), json!({ "turn": {} })),
            Notification::TurnStarted(_)
        ));
    }

    #[test]
    fn requests_we_send_carry_only_what_native_mode_allows() {
        let start = ThreadStartParams {
            cwd: "/w".into(),
            model: None,
        };
        assert_eq!(serde_json::to_value(start).unwrap(), json!({ "cwd": "/w" }));
        let turn = TurnStartParams {
            thread_id: "t".into(),
            input: vec![TextInput { text: "hi".into() }],
            cwd: "/w".into(),
        };
        assert_eq!(
            serde_json::to_value(turn).unwrap(),
            json!({ "threadId": "t", "input": [{ "type": "text", "text": "hi" }], "cwd": "/w" })
        );
    }

    #[test]
    fn scopes_tell_foreign_traffic() {
        let scope = Scope::of(&json!({ "threadId": "t1", "turn": { "id": "u2" } }));
        assert!(!scope.is_foreign("t1", "u2"));
        assert!(scope.is_foreign("t1", "u1"));
        assert!(scope.is_foreign("t2", "u2"));
        assert!(!Scope::of(&json!({ "threadId": 5 })).is_foreign("t", "u"));
    }
}
