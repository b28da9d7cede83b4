//! `session/update` → task events and the final response
//! (spec-adapters.md §5.4, seed 002 §13).
//!
//! | update | event |
//! |---|---|
//! | `agent_message_chunk` (text) | appended to the message being streamed; flushed as one `agent.message` when a tool call, tool call update or plan arrives, or the turn ends; an all-blank message is dropped |
//! | `tool_call` | `command.started` (kind `execute` with a command), `file_change.started` (`edit`, `delete`, `move`), else `tool.started`; inputs bounded |
//! | `tool_call_update` to `completed` or `failed` | `item.completed {type: "tool", tool_use_id, status}` |
//! | `plan` | `plan.updated {entries: [{content, status, priority}]}`, the whole plan as it now stands: at most [`MAX_PLAN_ENTRIES`] entries, each cut to [`MAX_PLAN_ENTRY_BYTES`], `truncated` when anything was left out |
//! | anything else (thoughts, the user's own chunks, usage, modes, commands, session info, extensions) | nothing |
//!
//! The final response is the agent's message text after its last tool
//! call: what it says once it has acted, not its narration on the way.
//! Raw ACP payloads, `_meta` included, never become events; host paths in
//! what is kept are the core's to redact.

use agent_client_protocol::v1::schema::{
    ContentBlock, Plan, PlanEntryPriority as AcpPriority, PlanEntryStatus as AcpStatus,
    SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use serde_json::{Map, Value, json};
use serverfs_agent_runtime::bounds::{bounded_json, bounded_text, utf8_prefix};
use serverfs_protocol::bridge::{EventPayload, PlanEntry, PlanEntryPriority, PlanEntryStatus};

use crate::interactions::{command_of, kind_name};

/// Most message text one turn keeps, in bytes: the Bridge keeps results up
/// to 8 MiB, so more would be refused anyway; the bound keeps an agent
/// that streams without end from growing the Bridge's memory.
pub(crate) const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// Most plan entries one `plan.updated` lists: with [`MAX_PLAN_ENTRY_BYTES`]
/// each, the event stays well under the core's 64 KiB event cap.
pub(crate) const MAX_PLAN_ENTRIES: usize = 32;

/// Longest plan entry kept, in bytes.
pub(crate) const MAX_PLAN_ENTRY_BYTES: usize = 1024;

/// The text of one turn, as it streams.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    /// The agent message being streamed.
    pending: String,
    /// The flushed message text since the last tool call.
    answer: String,
    /// Bytes kept this turn (pending and flushed), for the bound.
    kept: usize,
}

impl Transcript {
    /// The events for one update, in order (a flushed message first).
    pub(crate) fn update(&mut self, update: SessionUpdate) -> Vec<EventPayload> {
        let mut events = Vec::new();
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(text) = chunk.content {
                    self.append(&text.text);
                }
            }
            SessionUpdate::ToolCall(call) => {
                events.extend(self.flush());
                // What the agent says after acting is its answer.
                self.answer.clear();
                events.push(tool_started(call));
            }
            SessionUpdate::ToolCallUpdate(update) => {
                events.extend(self.flush());
                events.extend(tool_finished(&update));
            }
            SessionUpdate::Plan(plan) => {
                events.extend(self.flush());
                events.push(plan_updated(&plan));
            }
            // Thoughts, the user's own chunks (a `session/load` replay),
            // usage, modes, commands, config options, session info,
            // notices, compaction and variants added later: not events.
            _ => {}
        }
        events
    }

    /// The end of the turn: the last message's event, if any, and the final
    /// response.
    pub(crate) fn finish(&mut self) -> (Option<EventPayload>, String) {
        let last = self.flush();
        (last, std::mem::take(&mut self.answer))
    }

    fn append(&mut self, text: &str) {
        let room = MAX_TEXT_BYTES.saturating_sub(self.kept);
        let kept = utf8_prefix(text, room);
        self.pending.push_str(kept);
        self.kept += kept.len();
    }

    /// The streamed message as an event (the core cuts an oversized one to
    /// a prefix, with its size and digest), and into the answer.
    fn flush(&mut self) -> Option<EventPayload> {
        let text = std::mem::take(&mut self.pending);
        // Some agents open a message with an empty chunk.
        if text.trim().is_empty() {
            return None;
        }
        self.answer.push_str(&text);
        Some(EventPayload::AgentMessage {
            text,
            phase: None,
            truncated: false,
            size_bytes: None,
            sha256: None,
        })
    }
}

/// The event of a plan: its entries, bounded (host paths in them are the
/// core's to redact, as in every event). An entry whose status or
/// priority this schema does not know is left out rather than guessed at.
fn plan_updated(plan: &Plan) -> EventPayload {
    let mut truncated = plan.entries.len() > MAX_PLAN_ENTRIES;
    let mut entries = Vec::with_capacity(plan.entries.len().min(MAX_PLAN_ENTRIES));
    for entry in plan.entries.iter().take(MAX_PLAN_ENTRIES) {
        let (Some(status), Some(priority)) =
            (status_of(&entry.status), priority_of(&entry.priority))
        else {
            truncated = true;
            continue;
        };
        let content = utf8_prefix(&entry.content, MAX_PLAN_ENTRY_BYTES);
        truncated |= content.len() < entry.content.len();
        entries.push(PlanEntry {
            content: content.to_owned(),
            status,
            priority,
        });
    }
    EventPayload::PlanUpdated { entries, truncated }
}

fn status_of(status: &AcpStatus) -> Option<PlanEntryStatus> {
    match status {
        AcpStatus::Pending => Some(PlanEntryStatus::Pending),
        AcpStatus::InProgress => Some(PlanEntryStatus::InProgress),
        AcpStatus::Completed => Some(PlanEntryStatus::Completed),
        // Non-exhaustive: a status added later.
        _ => None,
    }
}

fn priority_of(priority: &AcpPriority) -> Option<PlanEntryPriority> {
    match priority {
        AcpPriority::High => Some(PlanEntryPriority::High),
        AcpPriority::Medium => Some(PlanEntryPriority::Medium),
        AcpPriority::Low => Some(PlanEntryPriority::Low),
        // Non-exhaustive: a priority added later.
        _ => None,
    }
}

/// The event of a new tool call.
fn tool_started(call: ToolCall) -> EventPayload {
    let tool_use_id = call.tool_call_id.0.to_string();
    let input = call.raw_input.as_ref().map(|input| bounded_json(input).0);
    match call.kind {
        ToolKind::Execute => match command_of(call.raw_input.as_ref()) {
            Some(command) => EventPayload::CommandStarted {
                command: bounded_text(&command).0.to_owned(),
                tool_use_id,
            },
            None => EventPayload::ToolStarted {
                tool: kind_name(call.kind),
                tool_use_id,
                input,
            },
        },
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move => EventPayload::FileChangeStarted {
            tool: kind_name(call.kind),
            tool_use_id,
            input: input.or_else(|| locations(&call)),
        },
        _ => EventPayload::ToolStarted {
            // `other` says nothing; the agent's title says what it does.
            tool: if call.kind == ToolKind::Other {
                bounded_text(&call.title).0.to_owned()
            } else {
                kind_name(call.kind)
            },
            tool_use_id,
            input,
        },
    }
}

/// The files a change touches, when the agent gave no input.
fn locations(call: &ToolCall) -> Option<Value> {
    (!call.locations.is_empty()).then(|| {
        let paths: Vec<String> = call
            .locations
            .iter()
            .map(|location| location.path.to_string_lossy().into_owned())
            .collect();
        bounded_json(&json!({ "paths": paths })).0
    })
}

/// The event of a tool call that ended.
fn tool_finished(update: &ToolCallUpdate) -> Option<EventPayload> {
    let status = match update.fields.status? {
        ToolCallStatus::Completed => "completed",
        ToolCallStatus::Failed => "failed",
        // Pending, in progress, and statuses added later: not an end.
        _ => return None,
    };
    let mut item = Map::new();
    item.insert("type".to_owned(), json!("tool"));
    item.insert(
        "tool_use_id".to_owned(),
        json!(update.tool_call_id.0.to_string()),
    );
    item.insert("status".to_owned(), json!(status));
    Some(EventPayload::ItemCompleted(item))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(value: Value) -> SessionUpdate {
        serde_json::from_value(value).unwrap()
    }

    fn chunk(text: &str) -> SessionUpdate {
        update(json!({ "sessionUpdate": "agent_message_chunk",
                       "content": { "type": "text", "text": text } }))
    }

    fn message(text: &str) -> EventPayload {
        EventPayload::AgentMessage {
            text: text.to_owned(),
            phase: None,
            truncated: false,
            size_bytes: None,
            sha256: None,
        }
    }

    #[test]
    fn chunks_are_flushed_as_messages_and_the_answer_follows_the_last_tool() {
        let mut transcript = Transcript::default();
        assert!(transcript.update(chunk("")).is_empty());
        assert!(transcript.update(chunk("Let me ")).is_empty());
        assert!(transcript.update(chunk("look.")).is_empty());
        let call = update(json!({
            "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls",
            "kind": "execute", "rawInput": { "command": "ls -la" },
        }));
        assert_eq!(
            transcript.update(call),
            [
                message("Let me look."),
                EventPayload::CommandStarted {
                    command: "ls -la".to_owned(),
                    tool_use_id: "t1".to_owned()
                }
            ]
        );
        let done = update(json!({
            "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
        }));
        let mut item = Map::new();
        item.insert("type".to_owned(), json!("tool"));
        item.insert("tool_use_id".to_owned(), json!("t1"));
        item.insert("status".to_owned(), json!("completed"));
        assert_eq!(transcript.update(done), [EventPayload::ItemCompleted(item)]);
        let running = update(json!({
            "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress",
        }));
        assert!(transcript.update(running).is_empty());
        // Metadata never splits a message, and is no event.
        transcript.update(chunk("Done"));
        let usage = update(json!({ "sessionUpdate": "usage_update", "used": 1, "size": 2 }));
        assert!(transcript.update(usage).is_empty());
        let thought = update(json!({ "sessionUpdate": "agent_thought_chunk",
                                     "content": { "type": "text", "text": "hmm" } }));
        assert!(transcript.update(thought).is_empty());
        transcript.update(chunk("."));
        assert_eq!(
            transcript.finish(),
            (Some(message("Done.")), "Done.".to_owned())
        );
    }

    #[test]
    fn tool_kinds_map_to_their_events() {
        let mut transcript = Transcript::default();
        let edit = update(json!({
            "sessionUpdate": "tool_call", "toolCallId": "e1", "title": "Edit a.txt",
            "kind": "edit", "locations": [{ "path": "/w/a.txt" }],
        }));
        assert_eq!(
            transcript.update(edit),
            [EventPayload::FileChangeStarted {
                tool: "edit".to_owned(),
                tool_use_id: "e1".to_owned(),
                input: Some(json!({ "paths": ["/w/a.txt"] })),
            }]
        );
        let other = update(json!({
            "sessionUpdate": "tool_call", "toolCallId": "o1", "title": "webfetch",
            "rawInput": { "url": "https://example.com" },
        }));
        assert_eq!(
            transcript.update(other),
            [EventPayload::ToolStarted {
                tool: "webfetch".to_owned(),
                tool_use_id: "o1".to_owned(),
                input: Some(json!({ "url": "https://example.com" })),
            }]
        );
        let no_command = update(json!({
            "sessionUpdate": "tool_call", "toolCallId": "x1", "title": "bash", "kind": "execute",
        }));
        assert_eq!(
            transcript.update(no_command),
            [EventPayload::ToolStarted {
                tool: "execute".to_owned(),
                tool_use_id: "x1".to_owned(),
                input: None,
            }]
        );
    }

    #[test]
    fn a_plan_is_an_event_of_its_own_and_bounded() {
        let mut transcript = Transcript::default();
        transcript.update(chunk("Planning."));
        let plan = update(
            json!({ "sessionUpdate": "plan", "_meta": { "secret": 1 }, "entries": [
                { "content": "read", "priority": "high", "status": "completed" },
                { "content": "write", "priority": "low", "status": "in_progress", "_meta": {} },
            ]}),
        );
        assert_eq!(
            transcript.update(plan),
            [
                message("Planning."),
                EventPayload::PlanUpdated {
                    entries: vec![
                        PlanEntry {
                            content: "read".to_owned(),
                            status: PlanEntryStatus::Completed,
                            priority: PlanEntryPriority::High,
                        },
                        PlanEntry {
                            content: "write".to_owned(),
                            status: PlanEntryStatus::InProgress,
                            priority: PlanEntryPriority::Low,
                        },
                    ],
                    truncated: false,
                }
            ]
        );
        // Too many entries, a long one, one of a status the schema does
        // not know (dropped by the schema itself): cut, and said so.
        let mut entries: Vec<Value> = (0..40)
            .map(|n| json!({ "content": format!("step {n}"), "priority": "medium", "status": "pending" }))
            .collect();
        entries[0]["content"] = json!("é".repeat(MAX_PLAN_ENTRY_BYTES));
        entries[1]["status"] = json!("skipped");
        let big = update(json!({ "sessionUpdate": "plan", "entries": entries }));
        let events = transcript.update(big);
        let [EventPayload::PlanUpdated { entries, truncated }] = events.as_slice() else {
            panic!("not one plan event");
        };
        assert!(truncated);
        assert_eq!(entries.len(), MAX_PLAN_ENTRIES);
        assert_eq!(entries[0].content.len(), MAX_PLAN_ENTRY_BYTES);
        assert_eq!(
            entries[1].content, "step 2",
            "the unknown status is left out"
        );
        let event = serde_json::to_string(&EventPayload::PlanUpdated {
            entries: entries.clone(),
            truncated: true,
        })
        .unwrap();
        assert!(event.len() < 48 * 1024, "{}", event.len());
        assert_eq!(transcript.finish().1, "Planning.");
    }

    #[test]
    fn a_huge_stream_is_bounded() {
        let mut transcript = Transcript::default();
        let piece = "é".repeat(1024 * 1024);
        for _ in 0..6 {
            transcript.update(chunk(&piece));
        }
        let (_, answer) = transcript.finish();
        assert!(answer.len() <= MAX_TEXT_BYTES, "{}", answer.len());
        assert!(answer.len() > MAX_TEXT_BYTES - 4);
        assert!(answer.chars().all(|c| c == 'é'));
    }
}
