//! One running turn: the scripted scenarios and the server requests they
//! send.
//!
//! A scenario is picked from the prompt text ([`Scenario::from_prompt`]).
//! Everything is message-driven: the turn reacts to client answers,
//! `turn/steer` and `turn/interrupt`, plus one timer (the `slow`,
//! `slow-start` and `slow-resolve` scenarios), so the engine needs no task
//! of its own.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Output;
use super::state::{MockState, now_ms};
use super::wire::{METHOD_NOT_FOUND, notification, request};

/// How long the `slow` scenario holds back its final messages, the
/// `slow-start` scenario its `turn/start` reply and the `slow-resolve`
/// scenario its own resolution.
pub const SLOW_DELAY: Duration = Duration::from_secs(4);

/// A model name containing this makes `thread/start` answer
/// [`SLOW_THREAD_DELAY`] late (a thread has no prompt to pick a scenario
/// from).
pub const SLOW_THREAD_MODEL: &str = "slow-thread";

/// How late `thread/start` answers for [`SLOW_THREAD_MODEL`]: long, so a
/// client that waits for it instead of acting on a cancel is easy to tell
/// from one that does not.
pub const SLOW_THREAD_DELAY: Duration = Duration::from_secs(8);

/// Bytes of the `huge-item` command line: more than a client keeps of one
/// string field (16 KiB), and a message larger than a WebSocket library's
/// usual frame limit (tungstenite's 16 MiB), which a client reading whole
/// diffs must raise.
pub const HUGE_COMMAND_BYTES: usize = 18_000_000;

/// Entries of the `huge-item` file change, each with a 1 KiB diff: more
/// than a client keeps of `changes` (32 KiB).
pub const HUGE_CHANGE_COUNT: usize = 200;

/// The scripted behaviours of a turn, chosen by a keyword in the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `agentMessage` `done:<prompt>`, then `turn/completed`.
    Default,
    /// A command approval with all four decisions → `approval:<decision>`.
    Approval,
    /// A command approval offering an object-shaped decision.
    ObjectDecisions,
    /// A file-change approval with `grantRoot` = cwd → `file:<decision>`.
    FileApproval,
    /// The same with `grantRoot` = the parent of cwd.
    FileOutside,
    /// A permissions request → `permission:<scope>:<granted keys>`.
    Permission,
    /// A user-input question → `question:<answers>`.
    Question,
    /// A secret question; the client must refuse it → `request-error:<code>`.
    SecretQuestion,
    /// An MCP elicitation the client must refuse with `-32601` →
    /// `done:unsupported`.
    Unsupported,
    /// Two command approvals before any answer → `approvals:<d1>,<d2>`.
    TwoApprovals,
    /// An approval the server resolves itself → `auto-done`.
    AutoResolve,
    /// An approval whose request id is the string `"req-7"`.
    StringId,
    /// Waits for `turn/steer` → `steered:<text>`.
    Steer,
    /// Waits for `turn/interrupt`.
    Wait,
    /// An `error` notification, then a failed turn.
    Fail,
    /// The server drops the connection mid-turn.
    Drop,
    /// Unrelated notifications first, then as [`Scenario::Default`].
    Noise,
    /// As [`Scenario::Default`], with the final messages [`SLOW_DELAY`]
    /// later.
    Slow,
    /// As [`Scenario::Wait`], with the `turn/start` reply (and
    /// `turn/started`) [`SLOW_DELAY`] late: a client's cancel lands before
    /// it knows the turn id.
    SlowStart,
    /// As [`Scenario::AutoResolve`], with the server resolving its own
    /// request [`SLOW_DELAY`] after sending it, so that the client has
    /// presented it by then → `auto-done`.
    SlowResolve,
    /// A line (or text frame) that is not JSON mid-turn, then as
    /// [`Scenario::Default`].
    Garbage,
    /// A command approval offering object-shaped decisions only; a client
    /// that cannot offer them refuses it → `request-error:<code>`.
    ObjectOnlyDecisions,
    /// A command item whose command is [`HUGE_COMMAND_BYTES`] long and a
    /// file change of [`HUGE_CHANGE_COUNT`] entries, then as
    /// [`Scenario::Default`].
    HugeItem,
    /// As [`Scenario::Fail`], with credentials in both error texts (a proxy
    /// URL with userinfo, a bearer token, an API key).
    LeakyError,
}

/// The `leaky-error` scenario's `error` notification message.
pub const LEAKY_NOTIFICATION: &str =
    "proxy http://alice:s3cret@proxy.internal:3128 refused Authorization: Bearer abc.DEF-123";

/// The `leaky-error` scenario's failed-turn error message.
pub const LEAKY_TURN_ERROR: &str = "invalid api key sk-proj-0123456789abcdefXYZ";

/// Keywords in match order: a longer keyword containing a shorter one
/// (`two-approvals` ⊃ `approval`, `secret-question` ⊃ `question`) comes
/// first, so the first hit is the intended scenario.
const KEYWORDS: [(&str, Scenario); 23] = [
    ("two-approvals", Scenario::TwoApprovals),
    ("object-only-decisions", Scenario::ObjectOnlyDecisions),
    ("garbage", Scenario::Garbage),
    ("huge-item", Scenario::HugeItem),
    ("leaky-error", Scenario::LeakyError),
    ("object-decisions", Scenario::ObjectDecisions),
    ("auto-resolve", Scenario::AutoResolve),
    ("string-id", Scenario::StringId),
    ("file-approval", Scenario::FileApproval),
    ("file-outside", Scenario::FileOutside),
    ("secret-question", Scenario::SecretQuestion),
    ("question", Scenario::Question),
    ("permission", Scenario::Permission),
    ("unsupported", Scenario::Unsupported),
    ("approval", Scenario::Approval),
    ("steer", Scenario::Steer),
    ("wait", Scenario::Wait),
    ("fail", Scenario::Fail),
    ("drop", Scenario::Drop),
    ("noise", Scenario::Noise),
    ("slow-start", Scenario::SlowStart),
    ("slow-resolve", Scenario::SlowResolve),
    ("slow", Scenario::Slow),
];

impl Scenario {
    /// The scenario of the first keyword (in a fixed order, most specific
    /// first) found anywhere in `prompt`; [`Scenario::Default`] if none.
    pub fn from_prompt(prompt: &str) -> Scenario {
        KEYWORDS
            .iter()
            .find(|(keyword, _)| prompt.contains(keyword))
            .map_or(Scenario::Default, |(_, scenario)| *scenario)
    }
}

/// Allocates server → client request ids (integers from 0, as 0.171.0 does)
/// and remembers the ids the server resolved by itself.
#[derive(Default)]
pub(crate) struct RequestIds {
    next: i64,
    /// Answers to these are expected late and are ignored quietly.
    pub(crate) self_resolved: Vec<Value>,
}

impl RequestIds {
    fn next(&mut self) -> Value {
        let id = self.next;
        self.next += 1;
        Value::from(id)
    }
}

/// The kind of a server request, which decides how its answer is rendered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RequestKind {
    Command,
    FileChange,
    Permissions,
    UserInput,
    Elicitation,
}

struct PendingRequest {
    id: Value,
    kind: RequestKind,
    /// The command item this approval is about, completed on the answer.
    item_id: Option<&'static str>,
    /// Send order within the turn.
    seq: usize,
    /// Names of the `availableDecisions` offered (empty: no such list).
    offered: Vec<String>,
}

/// How the client answered a server request.
enum Answer {
    /// The rendered `result` (a decision, `scope:keys`, answers, …).
    Result(String),
    /// The `error.code` of an error response.
    Error(i64),
}

/// What a turn produced in reaction to one input.
pub(crate) struct Step {
    pub(crate) out: Vec<Output>,
    /// The turn sent `turn/completed` and is over.
    pub(crate) finished: bool,
}

/// The running turn of one session.
pub(crate) struct ActiveTurn {
    pub(crate) thread_id: String,
    pub(crate) turn_id: String,
    number: u64,
    cwd: String,
    prompt: String,
    scenario: Scenario,
    pending: Vec<PendingRequest>,
    /// Server requests sent so far.
    asked: usize,
    /// Answers with their request's send order: `two-approvals` reports
    /// both in the order the requests were sent, whatever order they were
    /// answered in.
    answers: Vec<(usize, Answer)>,
    /// `slow`: when the final messages are due.
    due: Option<Instant>,
}

impl ActiveTurn {
    /// A new `inProgress` turn `turn-<number>`.
    pub(crate) fn new(thread_id: String, number: u64, cwd: String, prompt: String) -> ActiveTurn {
        ActiveTurn {
            thread_id,
            turn_id: format!("turn-{number}"),
            number,
            cwd,
            scenario: Scenario::from_prompt(&prompt),
            prompt,
            pending: Vec::new(),
            asked: 0,
            answers: Vec::new(),
            due: None,
        }
    }

    /// How late the `turn/start` reply is to be sent, if at all.
    pub(crate) fn reply_delay(&self) -> Option<Duration> {
        (self.scenario == Scenario::SlowStart).then_some(SLOW_DELAY)
    }

    /// The turn object of `turn/start`'s result and `turn/started`.
    pub(crate) fn turn_json(&self) -> Value {
        json!({ "id": self.turn_id, "status": "inProgress", "items": [], "error": null })
    }

    /// `turn/started`, then the scenario's opening messages.
    pub(crate) fn begin(&mut self, state: &MockState, ids: &mut RequestIds) -> Step {
        let mut out = vec![Output::Send(notification(
            "turn/started",
            json!({ "threadId": self.thread_id, "turn": self.turn_json() }),
        ))];
        let finished = match self.scenario {
            Scenario::Default => {
                out.extend(self.complete(state, &format!("done:{}", self.prompt)));
                true
            }
            Scenario::Noise => {
                out.extend(self.noise().into_iter().map(Output::Send));
                out.extend(self.complete(state, &format!("done:{}", self.prompt)));
                true
            }
            Scenario::Approval => {
                let decisions = json!(["accept", "acceptForSession", "decline", "cancel"]);
                out.extend(self.command_approval(ids.next(), "call_1", decisions));
                false
            }
            Scenario::Garbage => {
                out.push(Output::Send(
                    self.item("item/started", self.agent_message("")),
                ));
                out.push(Output::Raw(
                    "mock-codex: a stray line that is not JSON {".to_owned(),
                ));
                out.extend(self.complete(state, &format!("done:{}", self.prompt)));
                true
            }
            Scenario::HugeItem => {
                out.extend(self.huge_items().into_iter().map(Output::Send));
                out.extend(self.complete(state, &format!("done:{}", self.prompt)));
                true
            }
            Scenario::ObjectOnlyDecisions => {
                let decisions = json!([
                    { "acceptWithExecpolicyAmendment": { "execpolicy_amendment": ["pytest"] } },
                    { "applyNetworkPolicyAmendment": { "host": "example.com" } },
                ]);
                out.extend(self.command_approval(ids.next(), "call_1", decisions));
                false
            }
            Scenario::ObjectDecisions => {
                let decisions = json!([
                    "accept",
                    { "acceptWithExecpolicyAmendment": { "execpolicy_amendment": ["pytest"] } },
                    "cancel",
                ]);
                out.extend(self.command_approval(ids.next(), "call_1", decisions));
                false
            }
            Scenario::StringId => {
                let decisions = json!(["accept", "acceptForSession", "decline", "cancel"]);
                out.extend(self.command_approval(json!("req-7"), "call_1", decisions));
                false
            }
            Scenario::TwoApprovals => {
                let decisions = json!(["accept", "acceptForSession", "decline", "cancel"]);
                out.extend(self.command_approval(ids.next(), "call_1", decisions.clone()));
                out.extend(self.command_approval(ids.next(), "call_2", decisions));
                false
            }
            Scenario::AutoResolve => {
                let id = ids.next();
                let decisions = json!(["accept", "acceptForSession", "decline", "cancel"]);
                out.extend(self.command_approval(id.clone(), "call_1", decisions));
                // The server withdraws its own request (as Codex does when a
                // reviewer or a timeout settles it); the client must drop the
                // pending interaction without answering.
                self.pending.clear();
                out.push(self.resolved(&id));
                ids.self_resolved.push(id);
                out.extend(self.complete(state, "auto-done"));
                true
            }
            Scenario::FileApproval | Scenario::FileOutside => {
                let grant_root = if self.scenario == Scenario::FileApproval {
                    self.cwd.clone()
                } else {
                    parent_of(&self.cwd)
                };
                let id = ids.next();
                let params = json!({
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "itemId": "call_1",
                    "startedAtMs": now_ms(),
                    "reason": "apply the patch",
                    "grantRoot": grant_root,
                });
                out.push(self.ask(id, RequestKind::FileChange, None, params));
                false
            }
            Scenario::Permission => {
                let params = json!({
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "itemId": "call_1",
                    "startedAtMs": now_ms(),
                    "cwd": self.cwd,
                    "reason": "needs more access",
                    "permissions": {
                        "fileSystem": { "read": [self.cwd, "/etc"], "write": [self.cwd] },
                        "network": { "enabled": true },
                    },
                });
                out.push(self.ask(ids.next(), RequestKind::Permissions, None, params));
                false
            }
            Scenario::Question | Scenario::SecretQuestion => {
                let params = json!({
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "itemId": "call_1",
                    "questions": [{
                        "id": "q1",
                        "header": "Choice",
                        "question": "Pick one",
                        "isOther": true,
                        "isSecret": self.scenario == Scenario::SecretQuestion,
                        "options": [
                            { "label": "A", "description": "first" },
                            { "label": "B", "description": "second" },
                        ],
                    }],
                    "isBlocking": true,
                });
                out.push(self.ask(ids.next(), RequestKind::UserInput, None, params));
                false
            }
            Scenario::Unsupported => {
                let params = json!({
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "serverName": "mock-mcp",
                    "mode": "form",
                    "message": "Provide a value",
                    "requestedSchema": {
                        "type": "object",
                        "properties": { "value": { "type": "string" } },
                        "required": ["value"],
                    },
                    "_meta": null,
                });
                out.push(self.ask(ids.next(), RequestKind::Elicitation, None, params));
                false
            }
            Scenario::SlowResolve => {
                let decisions = json!(["accept", "acceptForSession", "decline", "cancel"]);
                out.extend(self.command_approval(ids.next(), "call_1", decisions));
                self.due = Some(Instant::now() + SLOW_DELAY);
                false
            }
            Scenario::Steer | Scenario::Wait | Scenario::SlowStart => false,
            Scenario::Fail | Scenario::LeakyError => {
                let (notified, failure) = if self.scenario == Scenario::Fail {
                    ("model overloaded", "mock failure")
                } else {
                    (LEAKY_NOTIFICATION, LEAKY_TURN_ERROR)
                };
                out.push(Output::Send(notification(
                    "error",
                    json!({
                        "error": { "message": notified, "codexErrorInfo": null, "additionalDetails": null },
                        "willRetry": true,
                        "threadId": self.thread_id,
                        "turnId": self.turn_id,
                    }),
                )));
                out.push(self.turn_completed(state, "failed", json!({ "message": failure })));
                true
            }
            Scenario::Drop => {
                // After `turn/started`, so the client has recorded its ids
                // and sees the loss mid-turn (its "connection was lost"
                // path). The turn stays `inProgress` in the shared state.
                out.push(Output::Close);
                false
            }
            Scenario::Slow => {
                out.push(Output::Send(
                    self.item("item/started", self.agent_message("")),
                ));
                self.due = Some(Instant::now() + SLOW_DELAY);
                false
            }
        };
        Step { out, finished }
    }

    /// When the turn next wants [`ActiveTurn::on_deadline`].
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.due
    }

    /// Sends the `slow` scenario's final messages, or `slow-resolve`'s
    /// resolution and final messages, once they are due.
    pub(crate) fn on_deadline(&mut self, state: &MockState, now: Instant) -> Step {
        match self.due {
            Some(due) if due <= now && self.scenario == Scenario::SlowResolve => {
                self.due = None;
                // Withdrawn without an answer, as by a reviewer or a
                // timeout; an answer arriving later is to a resolved id.
                let mut out: Vec<Output> = self
                    .pending
                    .iter()
                    .map(|pending| self.resolved(&pending.id))
                    .collect();
                self.pending.clear();
                out.extend(self.complete(state, "auto-done"));
                Step {
                    out,
                    finished: true,
                }
            }
            Some(due) if due <= now => {
                self.due = None;
                let text = format!("done:{}", self.prompt);
                let out = vec![
                    Output::Send(self.item("item/completed", self.agent_message(&text))),
                    self.turn_completed(state, "completed", Value::Null),
                ];
                Step {
                    out,
                    finished: true,
                }
            }
            Some(_) | None => Step {
                out: Vec::new(),
                finished: false,
            },
        }
    }

    /// Handles the client's answer to one of this turn's server requests;
    /// `None` if `id` is not pending here.
    pub(crate) fn on_response(
        &mut self,
        state: &MockState,
        id: &Value,
        outcome: &Result<Value, Value>,
    ) -> Option<Step> {
        // Exact JSON equality: an integer id echoed as a string (or the
        // reverse) is a different id, which is what the tests must catch.
        let index = self.pending.iter().position(|p| &p.id == id)?;
        let pending = self.pending.remove(index);
        let answer = match outcome {
            Ok(result) => {
                let rendered = render_result(pending.kind, result);
                // A client must never answer a decision it was not offered
                // (spec-adapters §2.5); make that visible in the final text.
                if pending.offered.is_empty() || pending.offered.contains(&rendered) {
                    Answer::Result(rendered)
                } else {
                    Answer::Result(format!("not-offered:{rendered}"))
                }
            }
            Err(error) => Answer::Error(error.get("code").and_then(Value::as_i64).unwrap_or(0)),
        };
        let mut out = vec![self.resolved(id)];
        if let Some(item_id) = pending.item_id {
            let status = match &answer {
                Answer::Result(decision) if decision.starts_with("accept") => "completed",
                Answer::Result(_) | Answer::Error(_) => "declined",
            };
            let mut item = self.command_item(item_id);
            item["status"] = json!(status);
            out.push(Output::Send(self.item("item/completed", item)));
        }
        self.answers.push((pending.seq, answer));
        if !self.pending.is_empty() {
            return Some(Step {
                out,
                finished: false,
            });
        }
        let text = self.final_text(pending.kind);
        out.extend(self.complete(state, &text));
        Some(Step {
            out,
            finished: true,
        })
    }

    /// Accepts a `turn/steer`; only the `steer` scenario completes on it.
    pub(crate) fn steer(&mut self, state: &MockState, text: &str) -> Step {
        if self.scenario != Scenario::Steer {
            return Step {
                out: Vec::new(),
                finished: false,
            };
        }
        // Codex shows steered input as an extra userMessage item in the
        // same turn (measured on 0.171.0).
        let user = json!({
            "type": "userMessage",
            "id": format!("user-{}", self.number),
            "content": [{ "type": "text", "text": text, "text_elements": [] }],
        });
        let mut out = vec![
            Output::Send(self.item("item/started", user.clone())),
            Output::Send(self.item("item/completed", user)),
        ];
        out.extend(self.complete(state, &format!("steered:{text}")));
        Step {
            out,
            finished: true,
        }
    }

    /// Ends the turn as `interrupted`, withdrawing open server requests.
    pub(crate) fn interrupt(&mut self, state: &MockState) -> Vec<Output> {
        self.due = None;
        let mut out: Vec<Output> = self
            .pending
            .iter()
            .map(|pending| self.resolved(&pending.id))
            .collect();
        self.pending.clear();
        out.push(self.turn_completed(state, "interrupted", Value::Null));
        out
    }

    /// The text of the final agent message once every request is answered.
    fn final_text(&self, last_kind: RequestKind) -> String {
        if self.scenario == Scenario::TwoApprovals {
            let mut answers: Vec<&(usize, Answer)> = self.answers.iter().collect();
            answers.sort_by_key(|(seq, _)| *seq);
            let parts: Vec<String> = answers
                .into_iter()
                .map(|(_, answer)| match answer {
                    Answer::Result(decision) => decision.clone(),
                    Answer::Error(code) => format!("request-error:{code}"),
                })
                .collect();
            return format!("approvals:{}", parts.join(","));
        }
        match self.answers.last().map(|(_, answer)| answer) {
            Some(Answer::Error(code))
                if *code == METHOD_NOT_FOUND && self.scenario == Scenario::Unsupported =>
            {
                "done:unsupported".to_owned()
            }
            Some(Answer::Error(code)) => format!("request-error:{code}"),
            Some(Answer::Result(text)) => {
                let prefix = match last_kind {
                    RequestKind::Command => "approval",
                    RequestKind::FileChange => "file",
                    RequestKind::Permissions => "permission",
                    RequestKind::UserInput => "question",
                    RequestKind::Elicitation => "elicitation",
                };
                format!("{prefix}:{text}")
            }
            None => String::new(),
        }
    }

    /// A pending server request (recorded so its answer can be matched).
    fn ask(
        &mut self,
        id: Value,
        kind: RequestKind,
        item_id: Option<&'static str>,
        params: Value,
    ) -> Output {
        let method = match kind {
            RequestKind::Command => "item/commandExecution/requestApproval",
            RequestKind::FileChange => "item/fileChange/requestApproval",
            RequestKind::Permissions => "item/permissions/requestApproval",
            RequestKind::UserInput => "item/tool/requestUserInput",
            RequestKind::Elicitation => "mcpServer/elicitation/request",
        };
        let offered = params
            .get("availableDecisions")
            .and_then(Value::as_array)
            .map(|decisions| decisions.iter().map(decision_name).collect())
            .unwrap_or_default();
        let msg = request(id.clone(), method, params);
        self.pending.push(PendingRequest {
            id,
            kind,
            item_id,
            seq: self.asked,
            offered,
        });
        self.asked += 1;
        Output::Send(msg)
    }

    /// `item/started` for a command, then its approval request.
    fn command_approval(
        &mut self,
        id: Value,
        item_id: &'static str,
        decisions: Value,
    ) -> [Output; 2] {
        let started = Output::Send(self.item("item/started", self.command_item(item_id)));
        let params = json!({
            "threadId": self.thread_id,
            "turnId": self.turn_id,
            "itemId": item_id,
            "startedAtMs": now_ms(),
            "kind": "command",
            "command": "pytest -q",
            "cwd": self.cwd,
            "commandActions": [],
            "reason": "run tests",
            "availableDecisions": decisions,
        });
        [
            started,
            self.ask(id, RequestKind::Command, Some(item_id), params),
        ]
    }

    fn command_item(&self, item_id: &str) -> Value {
        json!({
            "type": "commandExecution",
            "id": item_id,
            "command": "pytest -q",
            "cwd": self.cwd,
            "commandActions": [],
            "status": "inProgress",
        })
    }

    fn agent_message(&self, text: &str) -> Value {
        json!({
            "type": "agentMessage",
            "id": format!("msg-{}", self.number),
            "text": text,
            "phase": null,
        })
    }

    /// `item/started` or `item/completed` for this turn.
    fn item(&self, method: &str, item: Value) -> Value {
        let stamp = if method == "item/started" {
            "startedAtMs"
        } else {
            "completedAtMs"
        };
        notification(
            method,
            json!({ "threadId": self.thread_id, "turnId": self.turn_id, stamp: now_ms(), "item": item }),
        )
    }

    fn resolved(&self, id: &Value) -> Output {
        Output::Send(notification(
            "serverRequest/resolved",
            json!({ "threadId": self.thread_id, "requestId": id }),
        ))
    }

    /// The final agent message and a completed turn.
    fn complete(&self, state: &MockState, text: &str) -> [Output; 3] {
        [
            Output::Send(self.item("item/started", self.agent_message(""))),
            Output::Send(self.item("item/completed", self.agent_message(text))),
            self.turn_completed(state, "completed", Value::Null),
        ]
    }

    /// `turn/completed` with `status`, recorded in the shared state.
    fn turn_completed(&self, state: &MockState, status: &'static str, error: Value) -> Output {
        state.finish_turn(&self.thread_id, &self.turn_id, status);
        Output::Send(notification(
            "turn/completed",
            json!({
                "threadId": self.thread_id,
                "turn": { "id": self.turn_id, "status": status, "items": [], "error": error },
            }),
        ))
    }

    /// The `huge-item` items: a command whose line is
    /// [`HUGE_COMMAND_BYTES`] of `€` (three bytes each, so a cut at a byte
    /// bound lands inside a character unless the client takes care), and
    /// a file change of [`HUGE_CHANGE_COUNT`] entries.
    fn huge_items(&self) -> Vec<Value> {
        let mut command = self.command_item("call_huge");
        command["command"] = json!("€".repeat(HUGE_COMMAND_BYTES / 3));
        command["status"] = json!("completed");
        let changes: Vec<Value> = (0..HUGE_CHANGE_COUNT)
            .map(|n| {
                json!({
                    "path": format!("{}/file-{n}.txt", self.cwd),
                    "kind": { "type": "update", "move_path": null },
                    "diff": "+".repeat(1024),
                })
            })
            .collect();
        let change = json!({
            "type": "fileChange",
            "id": "patch_huge",
            "changes": changes,
            "status": "completed",
        });
        vec![
            self.item("item/completed", command),
            self.item("item/completed", change),
        ]
    }

    /// Notifications a client must tolerate and ignore (spec-adapters §2.4
    /// step 8), plus an item of another turn that it must filter out.
    fn noise(&self) -> Vec<Value> {
        let usage = json!({
            "totalTokens": 30, "inputTokens": 20, "cachedInputTokens": 0,
            "outputTokens": 10, "reasoningOutputTokens": 0,
        });
        vec![
            notification(
                "thread/tokenUsage/updated",
                json!({
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "tokenUsage": { "total": usage, "last": usage, "modelContextWindow": 200_000 },
                }),
            ),
            notification(
                "account/rateLimits/updated",
                json!({
                    "rateLimits": {
                        "limitId": "codex",
                        "primary": { "usedPercent": 12, "windowDurationMins": 300, "resetsAt": null },
                        "secondary": null,
                    },
                }),
            ),
            notification(
                "item/agentMessage/delta",
                json!({
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "itemId": format!("msg-{}", self.number),
                    "delta": "do",
                }),
            ),
            notification(
                "warning",
                json!({ "threadId": self.thread_id, "message": "mock warning" }),
            ),
            notification(
                "configWarning",
                json!({ "summary": "mock config warning", "details": null }),
            ),
            notification(
                "item/completed",
                json!({
                    "threadId": self.thread_id,
                    "turnId": "turn-other",
                    "completedAtMs": now_ms(),
                    "item": {
                        "type": "agentMessage",
                        "id": "msg-other",
                        "text": "from another turn: ignore me",
                        "phase": "final_answer",
                    },
                }),
            ),
        ]
    }
}

/// Renders a client's `result` for the final agent message.
fn render_result(kind: RequestKind, result: &Value) -> String {
    match kind {
        RequestKind::Command | RequestKind::FileChange => result
            .get("decision")
            .map_or_else(|| "<missing>".to_owned(), decision_name),
        RequestKind::Permissions => {
            // The schema's default scope is "turn".
            let scope = result
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("turn");
            let mut keys: Vec<&str> = result
                .get("permissions")
                .and_then(Value::as_object)
                .map(|perms| perms.keys().map(String::as_str).collect())
                .unwrap_or_default();
            keys.sort_unstable();
            format!("{scope}:{}", keys.join(","))
        }
        RequestKind::UserInput => result
            .pointer("/answers/q1/answers")
            .and_then(Value::as_array)
            .map(|answers| {
                answers
                    .iter()
                    .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        RequestKind::Elicitation => result
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("<missing>")
            .to_owned(),
    }
}

/// A decision's name: the string, or the variant name of an object
/// decision (`{"acceptWithExecpolicyAmendment": …}`).
fn decision_name(decision: &Value) -> String {
    match decision {
        Value::String(name) => name.clone(),
        Value::Object(obj) if obj.len() == 1 => obj.keys().cloned().collect(),
        other => other.to_string(),
    }
}

/// The parent directory of an absolute path (itself for `/`).
fn parent_of(path: &str) -> String {
    std::path::Path::new(path)
        .parent()
        .map_or_else(|| path.to_owned(), |p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::Scenario;

    #[test]
    fn specific_keywords_win_over_their_substrings() {
        assert_eq!(
            Scenario::from_prompt("two-approvals please"),
            Scenario::TwoApprovals
        );
        assert_eq!(
            Scenario::from_prompt("secret-question"),
            Scenario::SecretQuestion
        );
        assert_eq!(
            Scenario::from_prompt("file-approval"),
            Scenario::FileApproval
        );
        assert_eq!(Scenario::from_prompt("approval"), Scenario::Approval);
        assert_eq!(Scenario::from_prompt("slow-start"), Scenario::SlowStart);
        assert_eq!(Scenario::from_prompt("slow-resolve"), Scenario::SlowResolve);
        assert_eq!(Scenario::from_prompt("slow"), Scenario::Slow);
        assert_eq!(
            Scenario::from_prompt("object-only-decisions"),
            Scenario::ObjectOnlyDecisions
        );
        assert_eq!(
            Scenario::from_prompt("object-decisions"),
            Scenario::ObjectDecisions
        );
        assert_eq!(Scenario::from_prompt("leaky-error"), Scenario::LeakyError);
        assert_eq!(Scenario::from_prompt("garbage"), Scenario::Garbage);
        assert_eq!(Scenario::from_prompt("huge-item"), Scenario::HugeItem);
        assert_eq!(Scenario::from_prompt("hello"), Scenario::Default);
    }
}
