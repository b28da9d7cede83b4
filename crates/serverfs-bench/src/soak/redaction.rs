//! Host-path redaction (issue 27 item 8): a corpus of agent output with
//! the workdir's host path glued to every kind of preceding byte, percent-
//! and JSON-escaped, with doubled slashes and `/./`, in `file:` URIs and
//! behind `/proc/self/root`, plus another workdir and its parents, the
//! Bridge user's home above the workdirs, other users' homes and a systemd
//! user slice. The fake runtime says each batch of forms as an approval's
//! command and as its final text; serverfs's agent tools then read the
//! pending approval (`approval_paths = "informative"`), the task, its
//! result and its events.
//!
//! A **leaking rendering** is one form as one answer string shows it (an
//! answer holds each form in its text and its structured content) that still
//! shows the temporary directory's name (every host path here lies in it),
//! another user's name or a uid slice. A task whose approval or final
//! response does not hold all its forms counts too: no leak could be seen
//! there.

use serde_json::{Value, json};

use super::bridge::{Bridge, Layout, task_id, wait_status};
use super::{Outcome, Rng, Setup, text};
use crate::stdio::StdioServer;

/// Between two forms of one batch, and how the rendering is cut back into
/// forms.
const SEPARATOR: &str = " ;; ";

/// Forms per task.
const BATCH: usize = 40;

/// Bytes a path may follow: the reported ones, word characters, joiners
/// and unicode punctuation.
const BEFORE: [&str; 34] = [
    "", " ", "@", "f=@", "|", "cd|", "(", "'", "\"", ":", ";", ",", ">", "<", "`", "[", "{", "$",
    "\\", "=", "&", "!", "?", "^", "%", "x", "_", "-", ".", "~", ")", "«", "→", "é",
];

/// Bytes that end a glued word: only these precede another user's home,
/// which glued to a word is a relative path (`pages/home/index.tsx`).
const STARTS_ONLY: usize = 25;

/// Host paths of the deployment, in `{root}` (the temporary directory).
const DEPLOYMENT: [&str; 9] = [
    "{root}/work",
    "{root}/work/secret.txt",
    "{root}/work/sub/../a",
    "{root}/projects/other",
    "{root}/projects/other/notes.txt",
    "{root}/projects",
    "{root}",
    "{root}/.ssh/id_rsa",
    "/proc/self/root{root}/work/b",
];

/// Other users' places.
const USERS: [&str; 5] = [
    "/home/bob",
    "/home/bob/notes.txt",
    "/Users/carol",
    "/run/user/1000",
    "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope",
];

/// `path` in encoding number `encoding` (of 9).
fn encode(path: &str, encoding: u64) -> String {
    match encoding {
        0 => path.to_owned(),
        1 => path.replace('/', "%2F"),
        2 => path.replace('/', "\\/"),
        3 => path.replace('/', "\\u002f"),
        4 => path.replace('/', "//"),
        5 => path.replace('/', "/./"),
        6 => format!("file://localhost{path}"),
        7 => format!("file://{path}"),
        _ => format!("{path}/x/.."),
    }
}

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let layout = Layout::create_with(
        "\n[[workdirs]]\nalias = \"other\"\npath = \"{root}/projects/other\"\n",
    )?;
    let root = layout
        .work
        .parent()
        .ok_or("the workdir has no parent")?
        .to_path_buf();
    std::fs::create_dir_all(root.join("projects").join("other")).map_err(|e| e.to_string())?;
    let name = root
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or("the temporary directory's name is not UTF-8")?
        .to_owned();
    let forms = corpus(text(&root)?, setup.profile.pick(1, 4));
    let bridge = Bridge::start(setup, &layout)?;
    let mut server = layout.serverfs(setup)?;
    let forbidden = [name.as_str(), "bob", "carol", "user-1000", "/user/1000"];
    let mut leaks = 0u64;
    let mut answers = 0u64;
    let mut unread = 0u64;
    for batch in forms.chunks(BATCH) {
        let (leaked, read, missing) = one_task(&mut server, batch, &forbidden)?;
        leaks += leaked;
        answers += read;
        unread += missing;
    }
    drop(bridge);
    Ok(vec![Outcome {
        check: "host-path redaction (glued, encoded, /proc, other workdirs, users)",
        attempts: forms.len() as u64,
        failures: vec![
            ("leaking renderings", leaks),
            ("tasks whose forms did not come back", unread),
        ],
        figures: format!(
            "{} forms in {} tasks, {answers} answers read (approval, task, result, events)",
            forms.len(),
            forms.len().div_ceil(BATCH)
        ),
    }])
}

/// Every form: each deployment path after each preceding byte, and each
/// other user's place after each byte that starts a path, in an encoding
/// (all of them in turn, `rounds` times with different draws).
fn corpus(root: &str, rounds: u64) -> Vec<String> {
    let mut rng = Rng::new(0x5eed_0027);
    let mut forms = Vec::new();
    for round in 0..rounds {
        for (at, before) in BEFORE.iter().enumerate() {
            let users = if at < STARTS_ONLY { &USERS[..] } else { &[] };
            for path in DEPLOYMENT.iter().chain(users) {
                let encoding = if round == 0 {
                    (at as u64) % 9
                } else {
                    rng.below(9)
                };
                let path = path.replace("{root}", root);
                forms.push(format!("{before}{} end", encode(&path, encoding)));
            }
        }
    }
    forms
}

/// Runs one task saying `batch`; returns the leaks found, the answers
/// read, and 1 when the forms did not all come back.
fn one_task(
    server: &mut StdioServer,
    batch: &[String],
    forbidden: &[&str],
) -> Result<(u64, u64, u64), String> {
    let said = batch.join(SEPARATOR);
    let prompt = format!("fake: approval {said}\nfake: complete {said}");
    let submitted = server.call_any(
        "submit_agent_task",
        json!({"workdir": "w", "runtime": "fake", "prompt": prompt}),
    )?;
    let task = task_id(&submitted).ok_or_else(|| format!("submission refused: {submitted}"))?;
    wait_status(server, &task, &["waiting_for_approval"])?;
    let pending = server.call_any("get_agent_task", json!({"task_id": task}))?;
    let request = pending["structuredContent"]["pending_request"]["request_id"]
        .as_str()
        .ok_or_else(|| format!("no pending request: {pending}"))?
        .to_owned();
    let mut leaks = leaks_in(&pending, forbidden);
    // The forms must come back, one per separator, or no leak could be
    // seen: the approval's command says them once, the final text twice.
    let mut shown =
        forms_in(&pending["structuredContent"]["pending_request"]["payload"]["command_display"])
            == batch.len();
    server.call(
        "respond_agent_approval",
        json!({"task_id": task, "request_id": request, "decision": "approve_once"}),
    )?;
    wait_status(server, &task, &["succeeded"])?;
    let mut answers = 1;
    for (tool, arguments) in [
        ("get_agent_task", json!({"task_id": task})),
        ("read_agent_task_result", json!({"task_id": task})),
        (
            "read_agent_task_events",
            json!({"task_id": task, "limit": 500}),
        ),
    ] {
        let answer = server.call_any(tool, arguments)?;
        if tool == "get_agent_task" {
            shown &= forms_in(&answer["structuredContent"]["final_response"]) > batch.len();
        }
        leaks += leaks_in(&answer, forbidden);
        answers += 1;
    }
    Ok((leaks, answers, u64::from(!shown)))
}

/// How many separated forms the string `value` holds (0 if none).
fn forms_in(value: &Value) -> usize {
    value
        .as_str()
        .map_or(0, |text| text.split(SEPARATOR).count())
}

/// How many separated forms in the strings of `answer` show a forbidden
/// name.
fn leaks_in(answer: &Value, forbidden: &[&str]) -> u64 {
    let mut strings = Vec::new();
    collect_strings(answer, &mut strings);
    strings
        .iter()
        .flat_map(|string| string.split(SEPARATOR))
        .filter(|form| forbidden.iter().any(|name| form.contains(name)))
        .count() as u64
}

fn collect_strings<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.iter().for_each(|(key, item)| {
            out.push(key);
            collect_strings(item, out);
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
