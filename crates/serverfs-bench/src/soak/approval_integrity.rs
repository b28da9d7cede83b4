//! What a human approves is what they are shown (issue 27, items 6 and 7),
//! through a running Bridge and `serverfs` with the `fake` runtime:
//!
//! - **display**: for every hidden character (each C0 control but `\n` and
//!   `\t`, DEL, C1 controls, the bidirectional controls, zero-width and
//!   other format characters, the line and paragraph separators) one
//!   approval whose command holds it, answered by the model, and one task
//!   whose agent text holds them all. Every string of every answer —
//!   `get_agent_task` while pending and after, `read_agent_task_events`,
//!   text blocks and structured content alike — is
//!   scanned: a **leak** is a hidden character that reached one raw.
//! - **models**: `submit_agent_task` with models a CLI could read as an
//!   option or split into words; an **accepted** one is a failure (each
//!   must be refused with `INVALID_REQUEST` before any runtime sees it).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::bridge::{Bridge, Layout};
use super::{Outcome, Setup};
use crate::stdio::StdioServer;

/// How long a task may take to reach a state.
const STATE_TIMEOUT: Duration = Duration::from_secs(30);

/// The hidden characters tried one by one (the list `docs/agent-bridge.md`
/// gives, spelled out here independently of the escaper).
fn hidden_characters() -> Vec<char> {
    let mut chars: Vec<char> = (0u32..0x20)
        .chain([0x7f])
        .chain(0x80..0xa0)
        .chain([0xad, 0x61c, 0x180e, 0xfeff, 0xe0001, 0xe0041, 0xe007f])
        .chain(0x200b..=0x200f)
        .chain(0x2028..=0x202e)
        .chain(0x2060..=0x2064)
        .chain(0x2066..=0x2069)
        .filter_map(char::from_u32)
        .collect();
    // A newline ends a directive line and a NUL is no text a provider
    // prints; `\t` and `\n` are shown as they are, by design.
    chars.retain(|c| !matches!(c, '\n' | '\t' | '\0'));
    chars
}

/// Whether `c` must never reach a display raw.
fn hidden(c: char) -> bool {
    let code = u32::from(c);
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            code,
            0xad | 0x61c
                | 0x180e
                | 0x200b..=0x200f
                | 0x2028..=0x202e
                | 0x2060..=0x2064
                | 0x2066..=0x206f
                | 0xfeff
                | 0xe0000..=0xe007f
        )
}

/// How many hidden characters the strings of `value` hold.
fn leaks(value: &Value) -> u64 {
    match value {
        Value::String(text) => text.chars().filter(|c| hidden(*c)).count() as u64,
        Value::Array(items) => items.iter().map(leaks).sum(),
        Value::Object(fields) => fields
            .iter()
            .map(|(key, field)| key.chars().filter(|c| hidden(*c)).count() as u64 + leaks(field))
            .sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// The models that must be refused at submit.
fn hostile_models() -> Vec<String> {
    vec![
        "--dangerously-skip-permissions".to_owned(),
        "-x".to_owned(),
        "--permission-mode=bypassPermissions".to_owned(),
        "a b".to_owned(),
        "a\nb".to_owned(),
        "a\tb".to_owned(),
        String::new(),
        "opus\u{202e}".to_owned(),
        "a=b".to_owned(),
        "m".repeat(4096),
    ]
}

/// The tally of one run.
#[derive(Default)]
struct Tally {
    strings: u64,
    answers: u64,
    leaks: u64,
    accepted: u64,
}

impl Tally {
    /// Counts the hidden characters of one whole answer (`result`, text
    /// blocks and structured content alike).
    fn scan(&mut self, answer: &Value) {
        self.answers += 1;
        self.leaks += leaks(answer);
    }
}

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let layout = Layout::create()?;
    let _bridge = Bridge::start(setup, &layout)?;
    let mut server = layout.serverfs(setup)?;
    let started = Instant::now();
    let mut tally = Tally::default();
    let chars = hidden_characters();
    for c in &chars {
        approval(&mut server, &format!("echo safe{c}rm -rf ~"), &mut tally)?;
    }
    agent_text(&mut server, &chars, &mut tally)?;
    let models = hostile_models();
    for model in &models {
        let answer = server.call_any(
            "submit_agent_task",
            json!({"runtime": "fake", "workdir": "w", "prompt": "fake: complete hi", "model": model}),
        )?;
        if answer["structuredContent"]["error"]["code"] != "INVALID_REQUEST" {
            tally.accepted += 1;
        }
    }
    let figures = format!(
        "{} hidden characters in {} strings, {} answers scanned, {} hostile models, {:.1} s",
        chars.len(),
        tally.strings,
        tally.answers,
        models.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(vec![Outcome {
        check: "approval integrity (hidden characters, hostile models)",
        attempts: tally.strings + models.len() as u64,
        failures: vec![
            ("raw hidden characters shown", tally.leaks),
            ("hostile models accepted", tally.accepted),
        ],
        figures,
    }])
}

/// One approval of `command`: looked at while pending, approved by the
/// model, looked at again with its events.
fn approval(server: &mut StdioServer, command: &str, tally: &mut Tally) -> Result<(), String> {
    tally.strings += 1;
    let task = submit(server, &format!("fake: approval {command}"))?;
    let view = wait_for(server, &task, &["waiting_for_approval"], tally)?;
    let request = view["structuredContent"]["pending_request_id"].clone();
    let answer = server.call_any(
        "respond_agent_approval",
        json!({"task_id": task, "request_id": request, "decision": "approve_once"}),
    )?;
    tally.scan(&answer);
    wait_for(server, &task, &["succeeded"], tally)?;
    looked_at(server, &task, tally)
}

/// One task whose agent text holds every hidden character, one line each.
fn agent_text(server: &mut StdioServer, chars: &[char], tally: &mut Tally) -> Result<(), String> {
    let lines: Vec<String> = chars
        .iter()
        .map(|c| format!("fake: complete line{c}end"))
        .collect();
    tally.strings += lines.len() as u64;
    let task = submit(server, &lines.join("\n"))?;
    wait_for(server, &task, &["succeeded"], tally)?;
    looked_at(server, &task, tally)
}

/// The task's events, scanned.
fn looked_at(server: &mut StdioServer, task: &str, tally: &mut Tally) -> Result<(), String> {
    let events = server.call_any(
        "read_agent_task_events",
        json!({"task_id": task, "limit": 500}),
    )?;
    tally.scan(&events);
    Ok(())
}

/// Submits `prompt`; retried while the previous task's runner still holds
/// the workdir's writer lease (`WORKDIR_BUSY` right after it ended).
fn submit(server: &mut StdioServer, prompt: &str) -> Result<String, String> {
    let started = Instant::now();
    loop {
        let answer = server.call_any(
            "submit_agent_task",
            json!({"runtime": "fake", "workdir": "w", "prompt": prompt}),
        )?;
        if let Some(task) = answer["structuredContent"]["task_id"].as_str() {
            return Ok(task.to_owned());
        }
        let busy = answer["structuredContent"]["error"]["code"] == "WORKDIR_BUSY";
        if !busy || started.elapsed() > STATE_TIMEOUT {
            return Err(format!("submit_agent_task failed: {answer}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `get_agent_task` (each answer scanned) until the status is one of
/// `wanted`; returns that answer.
fn wait_for(
    server: &mut StdioServer,
    task: &str,
    wanted: &[&str],
    tally: &mut Tally,
) -> Result<Value, String> {
    let started = Instant::now();
    loop {
        let view = server.call_any("get_agent_task", json!({"task_id": task}))?;
        tally.scan(&view);
        let status = view["structuredContent"]["status"].as_str().unwrap_or("");
        if wanted.contains(&status) {
            return Ok(view);
        }
        if started.elapsed() > STATE_TIMEOUT {
            return Err(format!("task {task} never reached {wanted:?}: {view}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
