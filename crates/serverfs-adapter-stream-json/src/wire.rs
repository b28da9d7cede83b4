//! The subset of the stream-json control protocol the engine reads and
//! writes (spec-adapters.md §3.2–§3.7; Claude Code 2.1.197 and qodercli
//! 1.1.76 as measured).
//!
//! Every message is one JSON object per line with a `type`. What the CLI
//! sends is decoded into [`Message`]; a type the engine does not act on is
//! [`Message::Other`], never an error. Fields are optional unless the
//! engine cannot work without them; tool inputs and permission
//! suggestions stay JSON, since they are echoed back to the CLI as given.

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A message from the CLI.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum Message {
    /// `system` messages; only `init` matters.
    #[serde(rename = "system")]
    System(SystemMessage),
    /// The model's output of one step.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    /// The end of the turn.
    #[serde(rename = "result")]
    Result(ResultMessage),
    /// A request of the CLI: must be answered.
    #[serde(rename = "control_request")]
    ControlRequest(IncomingRequest),
    /// An answer to one of our requests.
    #[serde(rename = "control_response")]
    ControlResponse(ControlResponse),
    /// The CLI gave up one of its requests.
    #[serde(rename = "control_cancel_request")]
    ControlCancel(CancelRequest),
    /// `user` echoes, rate limits, transcripts and the like.
    #[serde(other)]
    Other,
}

/// A `system` message.
#[derive(Debug, Deserialize)]
pub struct SystemMessage {
    /// `init`, `task_started`, …
    #[serde(default)]
    pub subtype: Option<String>,
    /// The native session (on `init`).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// An `assistant` message.
#[derive(Debug, Deserialize)]
pub struct AssistantMessage {
    /// The model's message.
    pub message: AssistantBody,
    /// The native session (Qoder reports it here too).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// The content of an `assistant` message.
#[derive(Debug, Deserialize)]
pub struct AssistantBody {
    /// The blocks, in order.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
}

/// One block of an assistant message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// Text for the user.
    #[serde(rename = "text")]
    Text {
        /// The text.
        text: String,
    },
    /// A tool the model calls.
    #[serde(rename = "tool_use")]
    ToolUse {
        /// The tool-use id.
        id: String,
        /// The tool.
        name: String,
        /// Its input, as given.
        #[serde(default)]
        input: Value,
    },
    /// Thinking, server tools and the like.
    #[serde(other)]
    Other,
}

/// The `result` message that ends a turn.
#[derive(Debug, Deserialize)]
pub struct ResultMessage {
    /// `success`, `error_during_execution`, `error_max_turns`, …
    #[serde(default)]
    pub subtype: Option<String>,
    /// Whether the turn failed. Qoder answers `success` with `is_error`
    /// when not logged in: this, not `subtype`, decides.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// The final text (absent on errors).
    #[serde(default)]
    pub result: Option<String>,
    /// The native session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The native turn id.
    #[serde(default)]
    pub uuid: Option<String>,
    /// Error texts.
    #[serde(default)]
    pub errors: Option<Vec<Value>>,
}

impl ResultMessage {
    /// Whether the turn failed.
    pub fn failed(&self) -> bool {
        self.is_error == Some(true)
    }

    /// What went wrong, as the CLI says it: the result text, else the
    /// error texts joined, else the subtype (provider text: scrubbed
    /// before use).
    pub fn failure_detail(&self) -> String {
        if let Some(text) = self.result.as_deref().filter(|t| !t.trim().is_empty()) {
            return text.to_owned();
        }
        let errors: Vec<String> = self
            .errors
            .iter()
            .flatten()
            .map(|error| match error {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect();
        if !errors.is_empty() {
            return errors.join("; ");
        }
        self.subtype
            .clone()
            .unwrap_or_else(|| "an error result".to_owned())
    }
}

/// A CLI → client request; its `request` is decoded on its own, so that a
/// malformed one is still answered by id.
#[derive(Debug, Deserialize)]
pub struct IncomingRequest {
    /// Echoed in the answer.
    pub request_id: String,
    /// The request body.
    #[serde(default)]
    pub request: Value,
}

/// The requests the engine serves; every other one is answered with an
/// error at once.
#[derive(Debug, Deserialize)]
#[serde(tag = "subtype")]
pub enum CliRequest {
    /// May the model use this tool? (Boxed: the only variant with data,
    /// and a large one with serde_json's order-preserving maps, which the
    /// workspace's ACP crate turns on.)
    #[serde(rename = "can_use_tool")]
    CanUseTool(Box<CanUseTool>),
    /// `hook_callback`, `mcp_message` (never configured by the Bridge) and
    /// anything newer.
    #[serde(other)]
    Unsupported,
}

/// A request the engine cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

impl CliRequest {
    /// Decodes a request body.
    ///
    /// # Errors
    ///
    /// [`Malformed`] when a served request's fields do not decode.
    pub fn decode(body: Value) -> Result<CliRequest, Malformed> {
        // The subtype alone tells an unsupported request (serde's `other`
        // takes no fields); only a served one must be readable.
        let subtype = body.get("subtype").cloned().unwrap_or(Value::Null);
        if let Ok(CliRequest::Unsupported) = serde_json::from_value(json!({ "subtype": subtype })) {
            return Ok(CliRequest::Unsupported);
        }
        serde_json::from_value(body).map_err(|_| Malformed)
    }
}

/// `can_use_tool`.
#[derive(Debug, Deserialize)]
pub struct CanUseTool {
    /// The tool (`Bash`, `Write`, `AskUserQuestion`, `mcp__…`).
    pub tool_name: String,
    /// Its input, echoed back on allow.
    #[serde(default)]
    pub input: Value,
    /// Suggested permission updates (only session-scoped ones are ever
    /// applied).
    #[serde(default)]
    pub permission_suggestions: Option<Vec<Value>>,
    /// The path that needs permission.
    #[serde(default)]
    pub blocked_path: Option<String>,
    /// Why the CLI asks.
    #[serde(default)]
    pub decision_reason: Option<String>,
    /// A title for the human.
    #[serde(default)]
    pub title: Option<String>,
    /// The tool's display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// What the call does.
    #[serde(default)]
    pub description: Option<String>,
}

/// Where a permission suggestion would be stored.
#[derive(Debug, Deserialize)]
pub struct SuggestionScope {
    /// `session`, `localSettings`, `projectSettings`, `userSettings`.
    #[serde(default)]
    pub destination: Option<String>,
}

/// `control_response`.
#[derive(Debug, Deserialize)]
pub struct ControlResponse {
    /// The answer.
    pub response: ControlReply,
}

/// The body of a `control_response`.
#[derive(Debug, Clone, Deserialize)]
pub struct ControlReply {
    /// `success` or `error`.
    pub subtype: String,
    /// The request answered.
    pub request_id: String,
    /// The result of a success.
    #[serde(default)]
    pub response: Option<Value>,
    /// The reason of an error.
    #[serde(default)]
    pub error: Option<String>,
}

/// `control_cancel_request`.
#[derive(Debug, Deserialize)]
pub struct CancelRequest {
    /// The request the CLI gave up.
    pub request_id: String,
}

/// AskUserQuestion's input.
#[derive(Debug, Deserialize)]
pub struct QuestionsInput {
    /// The questions.
    pub questions: Vec<QuestionInput>,
}

/// One question of AskUserQuestion.
#[derive(Debug, Deserialize)]
pub struct QuestionInput {
    /// Its text (answers are keyed by it).
    pub question: String,
    /// The choices.
    #[serde(default)]
    pub options: Vec<OptionInput>,
    /// Several choices allowed.
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

/// One choice of a question.
#[derive(Debug, Deserialize)]
pub struct OptionInput {
    /// What is shown and answered.
    pub label: String,
    /// More about it.
    #[serde(default)]
    pub description: Option<String>,
    /// A preview (Qoder).
    #[serde(default)]
    pub preview: Option<String>,
}

/// An entry of the models a CLI reports (Claude's `initialize` answer,
/// Qoder's `get_models`).
#[derive(Debug, Deserialize)]
pub struct ModelEntry {
    /// The id to pass as `--model`.
    pub value: String,
    /// A name for people.
    #[serde(rename = "displayName", default)]
    pub display_name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the account may use it (Qoder).
    #[serde(rename = "isEnabled", default)]
    pub is_enabled: Option<bool>,
    /// Free to use (Qoder).
    #[serde(rename = "isFree", default)]
    pub is_free: Option<bool>,
    /// Relative price (Qoder).
    #[serde(rename = "priceFactor", default)]
    pub price_factor: Option<f64>,
    /// New (Qoder).
    #[serde(rename = "isNew", default)]
    pub is_new: Option<bool>,
}

/// Where a list of models sits in an answer: `{"models": [...]}`. Entries
/// stay JSON until each decodes alone, so one odd entry costs only itself.
#[derive(Debug, Default, Deserialize)]
pub struct ModelsAnswer {
    /// The entries.
    #[serde(default)]
    pub models: Vec<Value>,
}

/// Our `control_request` carrying `body`.
pub fn control_request(request_id: &str, body: Value) -> Value {
    json!({ "type": "control_request", "request_id": request_id, "request": body })
}

/// Our successful answer to the CLI's request `request_id`.
pub fn control_success(request_id: &str, response: Value) -> Value {
    json!({
        "type": "control_response",
        "response": { "subtype": "success", "request_id": request_id, "response": response },
    })
}

/// Our refusal of the CLI's request `request_id`.
pub fn control_error(request_id: &str, error: &str) -> Value {
    json!({
        "type": "control_response",
        "response": { "subtype": "error", "request_id": request_id, "error": error },
    })
}

/// The user message carrying the prompt; `priority` for Qoder.
pub fn user_message(prompt: &str, priority: Option<&str>) -> Value {
    let mut message = Map::new();
    message.insert("type".to_owned(), json!("user"));
    message.insert(
        "message".to_owned(),
        json!({ "role": "user", "content": prompt }),
    );
    message.insert("parent_tool_use_id".to_owned(), Value::Null);
    // Wire metadata, not the native session id.
    message.insert("session_id".to_owned(), json!("default"));
    if let Some(priority) = priority {
        message.insert("priority".to_owned(), json!(priority));
    }
    Value::Object(message)
}

/// Decodes `value` ignoring what does not fit (`None`).
pub fn lenient<T: serde::de::DeserializeOwned>(value: &Value) -> Option<T> {
    T::deserialize(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(value: Value) -> Message {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn messages_decode_and_unknown_types_are_other() {
        let Message::System(init) = decode(json!({
            "type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash"]
        })) else {
            panic!("not system");
        };
        assert_eq!(init.session_id.as_deref(), Some("s1"));
        assert!(matches!(
            decode(json!({ "type": "rate_limit_event", "x": 1 })),
            Message::Other
        ));
        let Message::Assistant(message) = decode(json!({
            "type": "assistant",
            "message": { "content": [
                { "type": "text", "text": "hi" },
                { "type": "thinking", "thinking": "…" },
                { "type": "tool_use", "id": "t1", "name": "Bash", "input": { "command": "ls" } }
            ]}
        })) else {
            panic!("not assistant");
        };
        assert_eq!(message.message.content.len(), 3);
        assert!(matches!(message.message.content[1], ContentBlock::Other));
    }

    #[test]
    fn requests_are_served_unsupported_or_malformed() {
        assert!(matches!(
            CliRequest::decode(json!({ "subtype": "hook_callback", "callback_id": "x" })),
            Ok(CliRequest::Unsupported)
        ));
        assert!(matches!(
            CliRequest::decode(json!({ "subtype": "can_use_tool" })),
            Err(Malformed)
        ));
        assert!(matches!(
            CliRequest::decode(
                json!({ "subtype": "can_use_tool", "tool_name": "Bash", "input": {} })
            ),
            Ok(CliRequest::CanUseTool(_))
        ));
    }

    #[test]
    fn failure_details_prefer_the_result_then_errors_then_subtype() {
        let result = |value: Value| serde_json::from_value::<ResultMessage>(value).unwrap();
        assert_eq!(
            result(json!({ "is_error": true, "result": "Not logged in" })).failure_detail(),
            "Not logged in"
        );
        assert_eq!(
            result(json!({ "is_error": true, "errors": ["a", "b"] })).failure_detail(),
            "a; b"
        );
        assert_eq!(
            result(json!({ "is_error": true, "subtype": "error_max_turns" })).failure_detail(),
            "error_max_turns"
        );
    }

    #[test]
    fn user_messages_carry_the_priority_only_when_given() {
        assert_eq!(
            user_message("hi", None),
            json!({ "type": "user", "message": { "role": "user", "content": "hi" },
                    "parent_tool_use_id": null, "session_id": "default" })
        );
        assert_eq!(user_message("hi", Some("next"))["priority"], "next");
    }
}
