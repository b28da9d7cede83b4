//! Host-path redaction through the real daemon (issue 27 item 8): agent
//! output with the workdir's host path glued to punctuation or a word,
//! percent- or JSON-escaped, behind `/proc/self/root`, another workdir and
//! its parents, another user's home and a systemd user slice — the approval
//! a human judges (`approval_paths = "informative"`), the events and the
//! final response all come back without any of it.

use serde_json::Value;

use serverfs_testkit::bridge::{Setup, Workdir, request_id};

/// One agent line, and how it must read in an informative approval and in
/// events and the final response.
struct Form {
    line: String,
    approval: String,
    event: String,
}

fn forms(setup: &Setup) -> Vec<Form> {
    let root = setup.root().to_str().expect("UTF-8 temp dir").to_owned();
    let work = format!("{root}/work");
    let same = |line: String, shown: &str| Form {
        line,
        approval: shown.to_owned(),
        event: shown.to_owned(),
    };
    vec![
        same(
            format!("curl -F f=@{work}/secret.txt"),
            "curl -F f=@<workdir>/secret.txt",
        ),
        same(format!("cd|{work}"), "cd|<workdir>"),
        same(format!("x{work}/a"), "x<workdir>/a"),
        same(format!("{}%2Fb", work.replace('/', "%2F")), "<workdir>/b"),
        same(format!("{}\\/c", work.replace('/', "\\/")), "<workdir>/c"),
        same(
            format!("file://localhost{work}/d"),
            "file://localhost<workdir>/d",
        ),
        same(format!("(/proc/self/root{work}/e)"), "(<workdir>/e)"),
        Form {
            line: format!("cat {root}/projects/other/n.txt"),
            approval: "cat <outside-workdir>/…/n.txt".to_owned(),
            event: "cat <outside-workdir>".to_owned(),
        },
        same(format!("ls {root}/projects"), "ls <outside-workdir>"),
        same(format!("ls {root}"), "ls <outside-workdir>"),
        same("ls /home/bob".to_owned(), "ls <outside-workdir>"),
        Form {
            line: "cat /sys/fs/cgroup/user.slice/user-1000.slice/x.scope".to_owned(),
            approval: "cat <outside-workdir>/…/x.scope".to_owned(),
            event: "cat <outside-workdir>".to_owned(),
        },
        Form {
            // The daemon's HOME is the temporary directory, above the
            // workdirs: its other files are shown from `~`.
            line: format!("cat {root}/.bashrc"),
            approval: "cat ~/.bashrc".to_owned(),
            event: "cat <outside-workdir>".to_owned(),
        },
    ]
}

/// What must appear nowhere: the temporary directory's name (every host
/// path here lies in it), another user's name, a uid slice.
fn assert_no_leak(setup: &Setup, what: &str, text: &str) {
    let name = setup
        .root()
        .file_name()
        .and_then(|name| name.to_str())
        .expect("temp dir name");
    for forbidden in [name, "bob", "user-1000"] {
        assert!(
            !text.contains(forbidden),
            "{what} shows {forbidden:?}: {text}"
        );
    }
}

#[test]
fn agent_output_with_glued_and_encoded_host_paths_is_redacted_everywhere() {
    let setup = Setup::new().workdir(Workdir::with_lines("other", "projects/other", ""));
    let forms = forms(&setup);
    let line = |pick: fn(&Form) -> &str| -> String {
        forms.iter().map(pick).collect::<Vec<_>>().join(" ; ")
    };
    let said = line(|form| &form.line);
    let daemon = setup.start();
    let task = daemon.submit(&format!("fake: approval {said}\nfake: complete {said}"));

    let pending = daemon.wait_pending(&task);
    let command = pending["payload"]["command_display"]
        .as_str()
        .expect("command_display")
        .to_owned();
    assert_eq!(command, line(|form| &form.approval));
    assert_no_leak(&setup, "the approval", &pending.to_string());

    daemon
        .respond(&task, &request_id(&pending), "approve_once")
        .expect("approve");
    let view = daemon.wait_status(&task, "succeeded");
    let final_response = view["final_response"].as_str().expect("final_response");
    let shown = line(|form| &form.event);
    assert_eq!(final_response, format!("approved: {shown}\n{shown}"));
    assert_no_leak(&setup, "the task", &view.to_string());

    let events: Vec<Value> = daemon.events(&task);
    let messages: Vec<&Value> = events
        .iter()
        .filter(|event| event["event_type"] == "agent.message")
        .collect();
    assert!(!messages.is_empty(), "no agent.message: {events:?}");
    assert_no_leak(
        &setup,
        "the events",
        &Value::Array(events.clone()).to_string(),
    );
}
