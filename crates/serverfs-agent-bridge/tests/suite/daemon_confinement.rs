//! A task's working directory cannot be redirected after submit: swapping
//! any component of its path (the workdir root included) for a symlink to
//! an outside directory while the task runs leaves every write in the
//! directory that was authorized.

use std::fs;
use std::path::Path;

use serde_json::json;
use serverfs_testkit::bridge::{Daemon, Setup};

/// The cwd, below the `demo` workdir.
const CWD: &str = "a/b/c";

/// A fake turn that holds until steered, then writes once itself and once
/// through a shell it starts in the cwd.
const PROMPT: &str = "fake: steer\nfake: write direct.txt A\nfake: shell-write shell.txt B";

/// Creates `work/a/b/c` and a mirror `outside/a/b/c`, so that a swapped
/// component leads to an existing directory, as an attacker would make it.
fn layout(setup: &Setup) {
    fs::create_dir_all(setup.work_dir().join(CWD)).unwrap();
    fs::create_dir_all(setup.root().join("outside").join(CWD)).unwrap();
}

/// Moves `work/<prefix>` aside (to `<name>.moved`) and puts a symlink to
/// the matching outside directory in its place; returns where the cwd is
/// now.
fn swap(setup: &Setup, prefix: &str) -> std::path::PathBuf {
    let work = setup.work_dir();
    let (original, target) = if prefix.is_empty() {
        (work.clone(), setup.root().join("outside"))
    } else {
        (work.join(prefix), setup.root().join("outside").join(prefix))
    };
    let moved = original.with_extension("moved");
    fs::rename(&original, &moved).unwrap();
    std::os::unix::fs::symlink(&target, &original).unwrap();
    let rest = CWD.strip_prefix(prefix).unwrap().trim_start_matches('/');
    moved.join(rest)
}

/// Every regular file below `dir`.
fn files_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_below(&entry.path()));
        } else {
            found.push(entry.path().display().to_string());
        }
    }
    found
}

/// Releases the held turn and asserts both writes landed in `cwd_now` and
/// nothing outside.
fn release_and_check(daemon: &Daemon, task: &str, cwd_now: &Path, case: &str) {
    daemon.ok(
        "task.message.send",
        json!({ "task_id": task, "message": "go" }),
    );
    let view = daemon.wait_status(task, "succeeded");
    assert_eq!(
        view["final_response"], "steered=go\nwrote direct.txt\nwrote shell.txt",
        "{case}"
    );
    assert_eq!(
        fs::read_to_string(cwd_now.join("direct.txt")).unwrap(),
        "A",
        "{case}"
    );
    assert_eq!(
        fs::read_to_string(cwd_now.join("shell.txt")).unwrap(),
        "B",
        "{case}"
    );
    let outside = daemon.setup().root().join("outside");
    assert_eq!(
        files_below(&outside),
        Vec::<String>::new(),
        "{case}: escaped"
    );
}

#[test]
fn daemon_swapping_any_cwd_component_while_the_task_runs_redirects_nothing() {
    for prefix in ["", "a", "a/b", "a/b/c"] {
        let setup = Setup::new();
        layout(&setup);
        let daemon = setup.start_serving();
        let task = daemon
            .submit_with(json!({ "path": CWD, "prompt": PROMPT }))
            .unwrap()["task_id"]
            .as_str()
            .unwrap()
            .to_owned();
        daemon.wait_event(&task, "turn.started");
        let cwd_now = swap(&setup, prefix);
        release_and_check(&daemon, &task, &cwd_now, &format!("swapped {prefix:?}"));
    }
}
