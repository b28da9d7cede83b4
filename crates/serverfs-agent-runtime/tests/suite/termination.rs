//! Stopping a provider stops its whole process group, and every
//! descendant that left it, provably.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use rustix::process::{Pid, test_kill_process_group};
use serverfs_agent_runtime::{
    ProcessGroupId, ProviderCommand, TASK_MARKER_VAR, WorkingDir, is_group_alive, is_task_alive,
};

use serverfs_testkit::process::{await_escaped, is_running, runs_in_group, session_of, stat};

use serverfs_testkit::within;

use super::support::{await_members, first_line};

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

fn start(script: &str) -> serverfs_agent_runtime::ProviderChild {
    let workdir = std::env::temp_dir();
    ProviderCommand::new("/bin/sh", workdir)
        .args(["-c", script])
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn terminate_ends_the_shell_and_its_grandchildren() {
    let mut child = start("sleep 300 & sleep 300 & echo ready; wait");
    let group = child.process_group();
    let (ready, _stdout) = first_line(&mut child).await;
    assert_eq!(ready, "ready\n");
    let members = await_members(group.as_raw(), 3).await;
    assert!(
        members
            .iter()
            .all(|pid| runs_in_group(*pid, group.as_raw()))
    );
    assert!(is_group_alive(group));

    let outcome = within("terminate", child.terminate(Duration::from_secs(10))).await;

    assert!(outcome.tree_gone, "{outcome:?}");
    assert!(
        !outcome.escalated,
        "SIGTERM should have sufficed: {outcome:?}"
    );
    assert_eq!(
        outcome.exit_status.and_then(|status| status.signal()),
        Some(SIGTERM)
    );
    for pid in members {
        assert!(
            !runs_in_group(pid, group.as_raw()),
            "{pid} survived: {:?}",
            stat(pid)
        );
    }
    assert!(!is_group_alive(group));
    // A second call changes nothing and signals nobody.
    let again = within("terminate again", child.terminate(Duration::ZERO)).await;
    assert!(again.tree_gone);
}

#[tokio::test]
async fn orphans_left_by_an_exited_leader_are_still_terminated() {
    // The npm-wrapper shape: the leader exits, its children live on.
    let mut child = start("sleep 300 & sleep 300 & echo ready");
    let group = child.process_group();
    let (ready, _stdout) = first_line(&mut child).await;
    assert_eq!(ready, "ready\n");
    assert!(
        within("leader to exit", child.wait())
            .await
            .unwrap()
            .success()
    );
    let orphans = await_members(group.as_raw(), 2).await;
    assert!(is_group_alive(group), "orphaned sleeps still run");

    let outcome = within("terminate", child.terminate(Duration::from_secs(10))).await;

    assert!(outcome.tree_gone, "{outcome:?}");
    assert!(outcome.exit_status.is_some_and(|status| status.success()));
    for pid in orphans {
        assert!(
            !runs_in_group(pid, group.as_raw()),
            "{pid} survived: {:?}",
            stat(pid)
        );
    }
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_after_the_grace() {
    // The background `sleep` inherits the ignored SIGTERM (across fork and
    // exec); `wait` keeps the shell itself in the group too.
    let mut child = start("trap '' TERM; sleep 300 & echo ready; wait");
    let group = child.process_group();
    let (ready, _stdout) = first_line(&mut child).await;
    assert_eq!(ready, "ready\n");
    let members = await_members(group.as_raw(), 2).await;

    let outcome = within("terminate", child.terminate(Duration::from_millis(300))).await;

    assert!(outcome.tree_gone, "{outcome:?}");
    assert!(outcome.escalated, "{outcome:?}");
    assert_eq!(
        outcome.exit_status.and_then(|status| status.signal()),
        Some(SIGKILL)
    );
    for pid in members {
        assert!(
            !runs_in_group(pid, group.as_raw()),
            "{pid} survived: {:?}",
            stat(pid)
        );
    }
}

#[tokio::test]
async fn dropping_the_handle_kills_the_whole_group() {
    let mut child = start("sleep 300 & sleep 300 & echo ready; wait");
    let group = child.process_group();
    let (ready, stdout) = first_line(&mut child).await;
    assert_eq!(ready, "ready\n");
    let members = await_members(group.as_raw(), 3).await;
    drop(stdout);
    drop(child);

    within("the group to die", async {
        while members
            .iter()
            .any(|pid| runs_in_group(*pid, group.as_raw()))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!is_group_alive(group));
}

/// `kill(-pgid, 0)` counts zombies; liveness must not.
#[tokio::test]
async fn a_group_of_zombies_is_not_alive() {
    use std::os::unix::process::CommandExt;

    let mut leader = std::process::Command::new("/bin/sh")
        .args(["-c", "exit 0"])
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = leader.id();
    let group = ProcessGroupId::from_raw(i32::try_from(pid).unwrap()).unwrap();
    // Not reaped yet: it turns into a zombie and stays one.
    within("the leader to become a zombie", async {
        while stat(pid).map(|(state, _)| state) != Some(b'Z') {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;

    let raw = Pid::from_raw(group.as_raw()).unwrap();
    assert!(
        test_kill_process_group(raw).is_ok(),
        "the kernel still lists the zombie"
    );
    assert!(!is_group_alive(group));

    leader.wait().unwrap();
    assert!(test_kill_process_group(raw).is_err());
    assert!(!is_group_alive(group));
}

#[tokio::test]
async fn a_running_group_is_alive() {
    let mut child = start("exec sleep 300");
    assert!(is_group_alive(child.process_group()));
    assert!(
        within("terminate", child.terminate(Duration::from_secs(5)))
            .await
            .tree_gone
    );
}

#[test]
fn group_ids_below_two_are_refused() {
    for raw in [-5, 0, 1] {
        assert_eq!(ProcessGroupId::from_raw(raw), None, "{raw}");
    }
    assert_eq!(
        ProcessGroupId::from_raw(2).map(ProcessGroupId::as_raw),
        Some(2)
    );
}

/// Two processes that leave the group and the session and ignore
/// `SIGTERM`: one stays the shell's child, one is orphaned at once.
const ESCAPING: &str = "setsid /bin/sh -c 'trap \"\" TERM; while :; do sleep 1; done' & \
     (setsid /bin/sh -c 'trap \"\" TERM; while :; do sleep 1; done' &) ; echo ready; wait";

#[tokio::test]
async fn terminate_ends_descendants_that_left_the_group_and_session() {
    let dir = tempfile::tempdir().unwrap();
    let task = format!("escape-{}", std::process::id());
    let cwd = WorkingDir::open_trusted(dir.path())
        .unwrap()
        .with_task(&task);
    let mut child = ProviderCommand::new("/bin/sh", &cwd)
        .args(["-c", ESCAPING])
        .spawn()
        .unwrap();
    let (ready, _stdout) = first_line(&mut child).await;
    assert_eq!(ready, "ready\n");
    let own_session = session_of(std::process::id()).unwrap();
    let escaped = await_escaped(TASK_MARKER_VAR, &task, 2, own_session);
    assert!(is_task_alive(&task));

    let outcome = within("terminate", child.terminate(Duration::from_millis(300))).await;

    assert!(outcome.tree_gone, "{outcome:?}");
    assert!(outcome.escalated, "both ignore SIGTERM: {outcome:?}");
    for pid in escaped {
        assert!(!is_running(pid), "{pid} survived: {:?}", stat(pid));
    }
    assert!(!is_task_alive(&task));
}

#[tokio::test]
async fn terminate_ends_an_escaped_child_of_the_provider_even_without_a_task_marker() {
    // Started by path: no marker, so only parentage leads to it.
    let mut child =
        start("setsid /bin/sh -c 'trap \"\" TERM; echo $$; while :; do sleep 1; done' & wait");
    let (line, _stdout) = first_line(&mut child).await;
    let escaped: u32 = line.trim().parse().unwrap();
    assert_ne!(session_of(escaped), session_of(std::process::id()));

    let outcome = within("terminate", child.terminate(Duration::from_millis(300))).await;

    assert!(outcome.tree_gone, "{outcome:?}");
    assert!(
        !is_running(escaped),
        "{escaped} survived: {:?}",
        stat(escaped)
    );
}
