//! The subset of the Codex App Server protocol the adapter reads and
//! writes, as types (spec-adapters.md §2; shapes as measured on
//! codex-cli 0.171.0).
//!
//! Our requests are [`Method`]s: a wire name, typed params and a typed
//! result. What Codex sends us is decoded from a method name and params
//! into [`Notification`] and [`ServerRequest`]; anything else is
//! `Other`/`Unsupported`, never an error. Every field is optional unless
//! the adapter cannot work without it, and fields whose shape drifted
//! between Codex releases are untagged enums ([`Tag`], [`DecisionList`])
//! so that both shapes decode. Values the adapter only bounds and passes
//! on to clients (a command line, file changes) stay JSON.

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
    /// `idle`, `active`, … (a string, or since 0.171.0 an object with a
    /// `type`).
    #[serde(default)]
    pub status: Option<Tag>,
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

/// A string enum value, or (Codex 0.171.0 turned several enums into
/// tagged objects) an object with a `type`; both decode.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Tag {
    /// `"completed"`.
    Name(String),
    /// `{"type": "completed", …}`.
    Object {
        /// The tag.
        #[serde(rename = "type")]
        kind: String,
    },
    /// Any other shape: no tag.
    Other(IgnoredAny),
}

impl Tag {
    /// The tag's name, if it has one.
    pub fn name(&self) -> Option<&str> {
        match self {
            Tag::Name(name) | Tag::Object { kind: name } => Some(name),
            Tag::Other(_) => None,
        }
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

/// An item: its type, and every field as sent (the event summary passes
/// a chosen few on to clients, bounded, as they came).
#[derive(Debug, Deserialize)]
pub struct Item {
    /// `agentMessage`, `commandExecution`, `fileChange`, …
    #[serde(rename = "type", default)]
    pub kind: Option<Tag>,
    /// Every other field.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl Item {
    /// The message text, on agent messages.
    pub fn text(&self) -> Option<&str> {
        self.fields.get("text")?.as_str()
    }

    /// The phase (`commentary`, `final_answer`) of an agent message.
    pub fn phase(&self) -> Option<Tag> {
        Tag::deserialize(self.fields.get("phase")?).ok()
    }
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
    /// `completed`, `interrupted`, `failed`, …
    #[serde(default)]
    pub status: Option<Tag>,
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
    /// `"accept"`, `"acceptForSession"`, `"decline"`, `"cancel"`, or a name
    /// the Bridge does not know.
    Name(String),
    /// An object-shaped decision (`acceptWithExecpolicyAmendment`), or
    /// any other value: never offered.
    Object(IgnoredAny),
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

    #[test]
    fn tags_accept_strings_and_objects() {
        let thread: Thread =
            serde_json::from_value(json!({ "id": "t", "status": "idle" })).unwrap();
        assert_eq!(thread.status.as_ref().and_then(Tag::name), Some("idle"));
        let thread: Thread = serde_json::from_value(
            json!({ "id": "t", "status": { "type": "active", "activeFlags": [] } }),
        )
        .unwrap();
        assert_eq!(thread.status.as_ref().and_then(Tag::name), Some("active"));
        let thread: Thread = serde_json::from_value(json!({ "id": "t", "status": 3 })).unwrap();
        assert_eq!(thread.status.as_ref().and_then(Tag::name), None);
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
