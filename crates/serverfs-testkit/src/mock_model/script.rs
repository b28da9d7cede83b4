//! What the mock model answers: a [`Script`] of trigger rules, read the same
//! way for both wire dialects.

use std::time::Duration;

use serde_json::Value;

/// One model reply. The server renders it in the dialect of the request
/// (OpenAI Responses or Anthropic Messages).
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Final assistant text; ends the turn (`response.completed`, or
    /// `stop_reason: "end_turn"`).
    Text(String),
    /// One tool call. The agent runs the tool and sends the result back in
    /// its next request, which then counts as one more tool result.
    ToolCall {
        /// The tool's name as the agent offered it (`exec_command` for
        /// Codex, `Bash` for Claude Code), within `namespace` when set.
        name: String,
        /// The namespace the agent offered the tool in: Codex 0.171 offers
        /// each MCP server's tools as one namespace `mcp__<server>`, and a
        /// call names both. Responses sends it as the call's `namespace`;
        /// Anthropic has no namespaces and gets `<namespace>__<name>`, the
        /// name Claude Code gives the same MCP tool.
        namespace: Option<String>,
        /// The tool's arguments. Responses carries them as a JSON *string*
        /// (`arguments`), Anthropic as one `input_json_delta`; both are
        /// serialized from this value.
        arguments: Value,
    },
    /// A model-side failure: `response.failed` with `error.code = code`
    /// (Responses), or an Anthropic `error` event (status code of the error
    /// type when not streaming) whose `error.type` is `code`.
    Fail {
        /// Machine-readable code (`rate_limit_exceeded`,
        /// `invalid_request_error`, …).
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// Waits, then sends the inner reply. Nothing reaches the client during
    /// the wait, so a slow model makes steer, interrupt and cancel tests
    /// deterministic. The wait ends early when the server stops.
    Delayed(Duration, Box<Reply>),
}

impl Reply {
    /// A final text reply.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// A tool call with JSON arguments.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Reply {
        Reply::ToolCall {
            name: name.into(),
            namespace: None,
            arguments,
        }
    }

    /// A call of the tool `tool` of the MCP server the agent knows as
    /// `server`, named as each dialect's client names it: Codex's namespace
    /// `mcp__<server>` and `tool`, or Claude Code's
    /// `mcp__<server>__<tool>`.
    pub fn mcp_tool_call(server: &str, tool: impl Into<String>, arguments: Value) -> Reply {
        Reply::ToolCall {
            name: tool.into(),
            namespace: Some(format!("mcp__{server}")),
            arguments,
        }
    }

    /// A model failure.
    pub fn fail(code: impl Into<String>, message: impl Into<String>) -> Reply {
        Reply::Fail {
            code: code.into(),
            message: message.into(),
        }
    }

    /// This reply, sent after `delay`.
    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delayed(delay, Box::new(self))
    }

    /// The total wait before this reply and the reply to render after it
    /// (nested delays add up), so renderers never see a `Delayed`.
    pub(crate) fn split_delay(&self) -> (Duration, &Reply) {
        let mut delay = Duration::ZERO;
        let mut reply = self;
        while let Reply::Delayed(d, inner) = reply {
            delay = delay.saturating_add(*d);
            reply = inner;
        }
        (delay, reply)
    }
}

/// A trigger and the replies for each step of its exchange.
///
/// An *exchange* starts at the latest user message; step `i` answers a
/// request in which `i` tool results follow that message. So
/// `Rule::steps("t", vec![call_a, call_b, text])` calls `a`, then `b` once
/// `a`'s result is back, then finishes with `text`. A request past the last
/// step gets the script's fallback, so an agent that keeps calling tools
/// cannot loop forever on a repeated tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    trigger: String,
    steps: Vec<Reply>,
}

impl Rule {
    /// A rule firing when the latest user text contains `trigger` (an empty
    /// trigger matches every request), answering step `i` with `steps[i]`.
    pub fn steps(trigger: impl Into<String>, steps: Vec<Reply>) -> Rule {
        Rule {
            trigger: trigger.into(),
            steps,
        }
    }
}

/// The mock model's behaviour: rules tried in the order they were added,
/// and a fallback for requests no rule answers.
///
/// ```
/// use serde_json::json;
/// use serverfs_testkit::{Reply, Rule, Script};
///
/// let script = Script::new()
///     // Tool call first; text once the tool result is back.
///     .on(
///         "make-file",
///         Reply::tool_call("exec_command", json!({"cmd": "echo hi > f.txt"})),
///         Reply::text("DONE"),
///     )
///     .rule(Rule::steps("two-steps", vec![
///         Reply::tool_call("exec_command", json!({"cmd": "ls"})),
///         Reply::tool_call("exec_command", json!({"cmd": "pwd"})),
///         Reply::text("LISTED"),
///     ]))
///     .fallback(Reply::text("MOCK_DONE"));
/// # let _ = script;
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    rules: Vec<Rule>,
    fallback: Reply,
}

impl Script {
    /// A script with no rules whose fallback is `Reply::text("MOCK_DONE")`.
    pub fn new() -> Script {
        Script {
            rules: Vec::new(),
            fallback: Reply::text("MOCK_DONE"),
        }
    }

    /// Adds a two-step rule: `first` before any tool result, `then` after
    /// one (see [`Rule::steps`]).
    pub fn on(self, trigger: impl Into<String>, first: Reply, then: Reply) -> Script {
        self.rule(Rule::steps(trigger, vec![first, then]))
    }

    /// Adds a rule after the existing ones (the first matching rule wins).
    pub fn rule(mut self, rule: Rule) -> Script {
        self.rules.push(rule);
        self
    }

    /// Sets the reply for requests no rule answers (default
    /// `Reply::text("MOCK_DONE")`).
    pub fn fallback(mut self, reply: Reply) -> Script {
        self.fallback = reply;
        self
    }

    /// The reply for a request at `exchange`.
    pub(crate) fn reply_for(&self, exchange: &Exchange) -> &Reply {
        self.rules
            .iter()
            .find(|rule| exchange.user_text.contains(&rule.trigger))
            .and_then(|rule| rule.steps.get(exchange.tool_results))
            .unwrap_or(&self.fallback)
    }
}

impl Default for Script {
    fn default() -> Self {
        Script::new()
    }
}

/// What a [`Script`] looks at in a request, whichever the dialect.
#[derive(Debug, PartialEq)]
pub(crate) struct Exchange {
    /// Text of the latest user message (its text parts, joined by `\n` so
    /// a trigger never matches across two parts).
    pub(crate) user_text: String,
    /// Tool results after that message.
    pub(crate) tool_results: usize,
}

impl Exchange {
    /// Reads an OpenAI Responses request body: the last `input` item with
    /// role `user` and the `function_call_output` items after it. A string
    /// `input` (allowed by the API) is one user message.
    pub(crate) fn from_responses(body: &Value) -> Exchange {
        let input = &body["input"];
        if let Some(text) = input.as_str() {
            return Exchange {
                user_text: text.to_owned(),
                tool_results: 0,
            };
        }
        let items = input.as_array().map(Vec::as_slice).unwrap_or_default();
        // An item without `type` is a message too (the API's shorthand).
        let is_user_message = |item: &Value| {
            item["role"] == "user" && matches!(item["type"].as_str(), None | Some("message"))
        };
        let last_user = items.iter().rposition(is_user_message);
        let user_text = last_user
            .map(|i| text_of(&items[i]["content"], &["input_text", "text"]))
            .unwrap_or_default();
        let after = last_user.map_or(0, |i| i + 1);
        let tool_results = items[after..]
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .count();
        Exchange {
            user_text,
            tool_results,
        }
    }

    /// Reads an OpenAI Chat Completions request body: the last `user`
    /// message and the `tool` messages (tool results) after it.
    pub(crate) fn from_chat(body: &Value) -> Exchange {
        let messages = body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let last_user = messages
            .iter()
            .rposition(|message| message["role"] == "user");
        let user_text = last_user
            .map(|i| text_of(&messages[i]["content"], &["text"]))
            .unwrap_or_default();
        let after = last_user.map_or(0, |i| i + 1);
        let tool_results = messages[after..]
            .iter()
            .filter(|message| message["role"] == "tool")
            .count();
        Exchange {
            user_text,
            tool_results,
        }
    }

    /// Reads an Anthropic Messages request body. Tool results travel in
    /// `user` messages too, and Claude Code may add text (reminders) beside
    /// them, so a user message holding a `tool_result` block never starts
    /// an exchange: the latest user text is that of the last user message
    /// without one, and the tool results are the `tool_result` blocks after
    /// it.
    pub(crate) fn from_anthropic(body: &Value) -> Exchange {
        let messages = body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let tool_result_blocks = |message: &Value| {
            message["content"].as_array().map_or(0, |blocks| {
                blocks
                    .iter()
                    .filter(|block| block["type"] == "tool_result")
                    .count()
            })
        };
        let is_prompt =
            |message: &Value| message["role"] == "user" && tool_result_blocks(message) == 0;
        let last_prompt = messages.iter().rposition(is_prompt);
        let user_text = last_prompt
            .map(|i| text_of(&messages[i]["content"], &["text"]))
            .unwrap_or_default();
        let after = last_prompt.map_or(0, |i| i + 1);
        let tool_results = messages[after..]
            .iter()
            .filter(|message| message["role"] == "user")
            .map(tool_result_blocks)
            .sum();
        Exchange {
            user_text,
            tool_results,
        }
    }
}

/// The text of a message `content`: a plain string, or its parts whose
/// `type` is one of `part_types`, joined by `\n`.
fn text_of(content: &Value, part_types: &[&str]) -> String {
    if let Some(text) = content.as_str() {
        return text.to_owned();
    }
    let parts = content.as_array().map(Vec::as_slice).unwrap_or_default();
    parts
        .iter()
        .filter(|part| {
            part["type"]
                .as_str()
                .is_some_and(|t| part_types.contains(&t))
        })
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool call's name in a dialect without namespaces (Anthropic
/// Messages, Chat Completions): `<namespace>__<name>`, or the name alone.
pub(super) fn flat_tool_name(name: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}__{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn exchange(user_text: &str, tool_results: usize) -> Exchange {
        Exchange {
            user_text: user_text.to_owned(),
            tool_results,
        }
    }

    #[test]
    fn responses_exchange_starts_at_the_last_user_message() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "please"}, {"type": "input_text", "text": "make-file"}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
            {"type": "function_call", "call_id": "call_2", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_2", "output": "ok"},
        ]});
        assert_eq!(
            Exchange::from_responses(&body),
            exchange("please\nmake-file", 2)
        );
    }

    #[test]
    fn responses_new_user_message_resets_the_tool_count() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
            {"role": "user", "content": "steer: second"},
        ]});
        assert_eq!(
            Exchange::from_responses(&body),
            exchange("steer: second", 0)
        );
        assert_eq!(
            Exchange::from_responses(&json!({"input": "plain"})),
            exchange("plain", 0)
        );
        assert_eq!(Exchange::from_responses(&json!({})), exchange("", 0));
    }

    #[test]
    fn anthropic_tool_result_messages_do_not_start_an_exchange() {
        let body = json!({"messages": [
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                {"type": "text", "text": "make-file"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                {"type": "text", "text": "<system-reminder>y</system-reminder>"}]},
        ]});
        assert_eq!(
            Exchange::from_anthropic(&body),
            exchange("<system-reminder>x</system-reminder>\nmake-file", 1)
        );
        assert_eq!(
            Exchange::from_anthropic(&json!({"messages": [{"role": "user", "content": "hi"}]})),
            exchange("hi", 0)
        );
    }

    #[test]
    fn first_matching_rule_wins_and_exhausted_steps_fall_back() {
        let script = Script::new()
            .on("make", Reply::text("A0"), Reply::text("A1"))
            .rule(Rule::steps("make-file", vec![Reply::text("B0")]))
            .fallback(Reply::text("FB"));
        assert_eq!(
            script.reply_for(&exchange("make-file", 0)),
            &Reply::text("A0")
        );
        assert_eq!(
            script.reply_for(&exchange("make-file", 1)),
            &Reply::text("A1")
        );
        assert_eq!(
            script.reply_for(&exchange("make-file", 2)),
            &Reply::text("FB")
        );
        assert_eq!(script.reply_for(&exchange("other", 0)), &Reply::text("FB"));
        assert_eq!(
            Script::new().reply_for(&exchange("", 0)),
            &Reply::text("MOCK_DONE")
        );
    }

    #[test]
    fn nested_delays_add_up() {
        let reply = Reply::text("x")
            .delayed(Duration::from_millis(5))
            .delayed(Duration::from_millis(7));
        assert_eq!(
            reply.split_delay(),
            (Duration::from_millis(12), &Reply::text("x"))
        );
    }
}
