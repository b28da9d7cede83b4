//! Writer leases, recovery guards, crash recovery, cancellation, graceful
//! shutdown and the provider environment, black-box against the real
//! daemon (spec-agent-bridge.md §3.8, §3.10–§3.13, §8, §10.5).
//!
//! The MCP side is played by `serverfs_lease::try_acquire`, the reader the
//! ServerFS mutation path uses. `fake: child-tree` gives every turn a real
//! process group (a shell and two `sleep 300`); a [`ChildTree`] guard
//! SIGKILLs that group when a test ends, so a test that orphaned it (by
//! SIGKILLing the Bridge) cleans up even when it fails.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::json;
use serverfs_agent_runtime::TASK_MARKER_VAR;
use serverfs_testkit::bridge::{ChildTree, Daemon, Setup, WAIT, count, guards, mcp_mutation, poll};
use serverfs_testkit::cgroup::TestCgroup;
use serverfs_testkit::process::{
    KillOnDrop, await_escaped, group_members, is_running, parent_of, running_with_env, session_of,
    zombie_children,
};

/// How long a graceful shutdown may take (the spec bounds provider
/// interrupts to 10 s; the service waits at most 15 s for its runners).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(20);

/// The prompt of a turn that writes a marker file once, then keeps a
/// process tree running until it is stopped.
const MARKER_THEN_TREE: &str = "fake: write marker.txt one\nfake: child-tree";

/// The proxy endpoint the operator configures in the environment tests.
const PROXY_URL: &str = "http://proxy.test:3128";

/// Waits until the MCP side may mutate `demo` again and no guard is left.
fn wait_workdir_free(setup: &Setup, after: &str) {
    poll(
        WAIT,
        &format!("the workdir to be free after {after}"),
        || (mcp_mutation(setup).is_ok() && guards(setup).is_empty()).then_some(()),
    );
}

/// Starts the daemon and waits for its first answer. The socket accepts
/// connections as soon as it is bound, before start-up reconciliation has
/// run; an answer proves that reconciliation is over.
fn restart(setup: &Setup) -> Daemon {
    let daemon = setup.start();
    daemon.ok("runtime.list", json!({}));
    daemon
}

/// Submits `prompt` with the `review` profile; returns the task id.
fn submit_review(daemon: &Daemon, prompt: &str) -> String {
    let result = daemon
        .submit_with(json!({ "profile": "review", "prompt": prompt }))
        .unwrap_or_else(|error| panic!("review submit failed: {error:?}"));
    result["task_id"].as_str().unwrap().to_owned()
}

/// The code a workspace-write submission on `demo` is refused with.
fn refused_writer(daemon: &Daemon) -> String {
    match daemon.submit_with(json!({ "prompt": "fake: complete second writer" })) {
        Ok(result) => panic!("a second writer was accepted: {result}"),
        Err(error) => error.code,
    }
}

#[test]
fn a_workspace_write_task_holds_the_lease_for_its_whole_turn() {
    let setup = Setup::new();
    let daemon = setup.start();
    assert_eq!(mcp_mutation(&setup), Ok(()), "free before any task");

    let writer = daemon.submit("fake: wait 60000");
    daemon.wait_status(&writer, "running");
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_BUSY"));
    assert_eq!(guards(&setup), vec![(writer.clone(), None)]);
    assert_eq!(refused_writer(&daemon), "WORKDIR_BUSY");

    // A review task never locks: accepted beside the writer.
    let review = submit_review(&daemon, "fake: complete reviewed");
    let view = daemon.wait_status(&review, "succeeded");
    assert_eq!(view["final_response"], "reviewed");
    assert_eq!(
        mcp_mutation(&setup),
        Err("WORKDIR_BUSY"),
        "still the writer's"
    );
    assert_eq!(daemon.task(&writer)["status"], "running");

    let cancelled = daemon.ok("task.cancel", json!({ "task_id": writer }));
    assert_eq!(cancelled["status"], "cancelled");
    wait_workdir_free(&setup, "a cancel");

    // Completion releases it too.
    let completed = daemon.submit("fake: wait 200\nfake: write out.txt done");
    daemon.wait_status(&completed, "succeeded");
    wait_workdir_free(&setup, "a completion");
    assert_eq!(
        fs::read_to_string(setup.work_dir().join("out.txt")).unwrap(),
        "done"
    );
    // And the next writer gets it.
    let next = daemon.submit("fake: complete next");
    daemon.wait_status(&next, "succeeded");
    wait_workdir_free(&setup, "the next writer");
}

#[test]
fn cancel_stops_the_whole_child_tree() {
    let setup = Setup::new();
    let daemon = setup.start();
    let task = daemon.submit("fake: child-tree");
    let tree = ChildTree::wait_for(&setup, &task);
    let shell = u32::try_from(tree.pgid()).unwrap();
    assert_eq!(
        parent_of(shell),
        Some(daemon.pid()),
        "the tree is the daemon's"
    );
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_BUSY"));

    let started = Instant::now();
    let cancelled = daemon.ok("task.cancel", json!({ "task_id": task }));
    let took = started.elapsed();
    assert_eq!(cancelled["status"], "cancelled");
    // Terminal-first: the reply does not wait for the provider's
    // interrupt (SIGTERM grace 2 s, bound 10 s).
    assert!(took < Duration::from_secs(5), "cancel took {took:?}");
    assert_eq!(daemon.task(&task)["status"], "cancelled");

    tree.wait_stopped(Duration::from_secs(5));
    wait_workdir_free(&setup, "cancelling a child tree");
    tree.wait_gone();
    let types = daemon.event_types(&task);
    assert_eq!(count(&types, "task.cancelled"), 1, "{types:?}");
    assert_eq!(daemon.task(&task)["status"], "cancelled");
}

/// The processes of `task` that left the Bridge's session (the two
/// `setsid` children of `fake: escape-tree`), cleaned up by the guard.
fn escaped_of(task: &str) -> KillOnDrop {
    let own_session = session_of(std::process::id()).unwrap();
    KillOnDrop(await_escaped(TASK_MARKER_VAR, task, 2, own_session))
}

#[test]
fn cancel_stops_descendants_that_left_the_group_and_ignore_sigterm() {
    let setup = Setup::new();
    let daemon = setup.start_serving();
    let task = daemon.submit("fake: escape-tree");
    let escaped = escaped_of(&task);
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_BUSY"));
    // The one whose parent exits was adopted by the Bridge, not by init
    // (that parent may still be exiting when the pair is first seen).
    poll(
        WAIT,
        "an escaped process to be re-parented to the Bridge",
        || {
            escaped
                .0
                .iter()
                .any(|pid| parent_of(*pid) == Some(daemon.pid()))
                .then_some(())
        },
    );

    let cancelled = daemon.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    // The guard goes only with the last of them.
    poll(WAIT, "the guard to go", || {
        let free = guards(&setup).is_empty();
        if !free {
            return None;
        }
        for pid in &escaped.0 {
            assert!(!is_running(*pid), "guard removed while {pid} runs");
        }
        Some(())
    });
    wait_workdir_free(&setup, "cancelling an escaping tree");
    // And the Bridge reaped what it adopted.
    poll(WAIT, "the adopted zombies to be reaped", || {
        zombie_children(daemon.pid()).is_empty().then_some(())
    });
}

#[test]
fn after_a_crash_the_guard_stays_while_an_escaped_descendant_runs() {
    let setup = Setup::new();
    let daemon = setup.start_serving();
    let task = daemon.submit("fake: escape-tree");
    let escaped = escaped_of(&task);
    crash_keeps_the_guard_while(&setup, daemon, escaped);
}

/// Kills the Bridge (`-9`) and the shell's group of a running tree task,
/// then checks that the restarted Bridge keeps the workdir guarded while
/// `survivors` run, and frees it once they are gone.
fn crash_keeps_the_guard_while(setup: &Setup, mut daemon: Daemon, survivors: KillOnDrop) {
    let pgid = poll(WAIT, "the guard to record the shell", || {
        guards(setup).into_iter().find_map(|(_, pgid)| pgid)
    });
    daemon.kill();
    KillOnDrop(group_members(pgid)).kill_now();
    assert!(survivors.0.iter().all(|pid| is_running(*pid)));

    let restarted = restart(setup);
    assert_eq!(refused_writer(&restarted), "WORKDIR_RECOVERY_REQUIRED");
    assert_eq!(mcp_mutation(setup), Err("WORKDIR_RECOVERY_REQUIRED"));
    let (_, inspected, _) = setup.run(&["inspect"]);
    assert!(inspected.contains("provider=running"), "{inspected}");

    survivors.kill_now();
    let next = restarted.submit("fake: complete after the survivors");
    restarted.wait_status(&next, "succeeded");
    wait_workdir_free(setup, "the survivors were gone");
}

/// A Bridge whose providers run in task cgroups beneath `cgroup`.
fn with_cgroups(cgroup: &TestCgroup) -> Setup {
    Setup::new().agent("provider_cgroup", &format!("{:?}", cgroup.path()))
}

/// The pid `fake: hidden-tree`'s hidden process wrote into the workdir; it
/// shed the task marker and left the Bridge's session.
fn hidden_of(setup: &Setup, task: &str) -> KillOnDrop {
    let pid_file = setup.work_dir().join("hidden.pid");
    let pid = poll(WAIT, "the hidden process to start", || {
        fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    });
    let hidden = KillOnDrop(vec![pid]);
    assert!(is_running(pid));
    assert!(!running_with_env(TASK_MARKER_VAR, task).contains(&pid));
    assert_ne!(session_of(pid), session_of(std::process::id()));
    hidden
}

#[test]
fn cancel_stops_a_descendant_that_only_its_cgroup_still_holds() {
    let Some(cgroup) = TestCgroup::new() else {
        eprintln!("skipped: no cgroup v2 directory this user may create cgroups in");
        return;
    };
    let setup = with_cgroups(&cgroup);
    let daemon = setup.start_serving();
    let task = daemon.submit("fake: hidden-tree");
    let hidden = hidden_of(&setup, &task);
    assert_eq!(cgroup.children(), vec![task.clone()]);

    daemon.ok("task.cancel", json!({ "task_id": task }));
    poll(WAIT, "the guard to go", || {
        let free = guards(&setup).is_empty();
        if free {
            assert!(
                !is_running(hidden.0[0]),
                "guard removed while the hidden process runs"
            );
        }
        free.then_some(())
    });
    assert!(!is_running(hidden.0[0]));
    wait_workdir_free(&setup, "cancelling a hidden tree");
    // The task's cgroups go once empty.
    poll(WAIT, "the task cgroup to be removed", || {
        cgroup.children().is_empty().then_some(())
    });
}

#[test]
fn after_a_crash_the_guard_stays_while_a_hidden_descendant_runs() {
    let Some(cgroup) = TestCgroup::new() else {
        eprintln!("skipped: no cgroup v2 directory this user may create cgroups in");
        return;
    };
    let setup = with_cgroups(&cgroup);
    let daemon = setup.start_serving();
    let task = daemon.submit("fake: hidden-tree");
    let hidden = hidden_of(&setup, &task);
    crash_keeps_the_guard_while(&setup, daemon, hidden);
}

#[test]
fn an_unusable_provider_cgroup_stops_the_start() {
    let setup = Setup::new().agent("provider_cgroup", "\"/tmp\"");
    let (status, _, stderr) = setup.run(&["serve"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("agent.provider_cgroup: not a cgroup v2 directory"),
        "{stderr}"
    );
}

#[test]
fn a_refused_submission_leaves_the_lease_free() {
    // The lease is taken before the active-task limit is checked (spec
    // §3.8); a refusal must give it back and publish no guard.
    let setup = Setup::new().agent("max_active_tasks", "1");
    let daemon = setup.start();
    let review = submit_review(&daemon, "fake: wait 60000");
    daemon.wait_status(&review, "running");
    assert_eq!(refused_writer(&daemon), "AGENT_TASK_LIMIT_REACHED");
    assert_eq!(mcp_mutation(&setup), Ok(()));
    assert_eq!(guards(&setup), vec![]);

    // Cancelling is terminal-first: the slot is free at once.
    daemon.ok("task.cancel", json!({ "task_id": review }));
    let writer = daemon.submit("fake: complete written");
    daemon.wait_status(&writer, "succeeded");
    wait_workdir_free(&setup, "the writer");
}

#[test]
fn a_timed_out_task_stops_its_tree_and_frees_the_workdir() {
    // Long enough for the tree to be seen running on a loaded machine.
    let setup = Setup::new().agent("task_timeout_seconds", "4");
    let daemon = setup.start();
    let task = daemon.submit("fake: child-tree");
    let tree = ChildTree::wait_for(&setup, &task);
    let view = daemon.wait_terminal_within(&task, Duration::from_secs(15));
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "AGENT_TASK_TIMED_OUT", "{view}");
    tree.wait_stopped(Duration::from_secs(5));
    wait_workdir_free(&setup, "a timeout");
    tree.wait_gone();
}

#[test]
fn an_expired_interaction_frees_the_workdir() {
    // Long enough for the busy check below to run before the expiry.
    let setup = Setup::new().agent("interaction_timeout_seconds", "3");
    let daemon = setup.start();
    let task = daemon.submit("fake: approval touch x");
    daemon.wait_pending(&task);
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_BUSY"));
    let view = poll(Duration::from_secs(15), "the interaction to expire", || {
        let view = daemon.task(&task);
        (view["status"] == "interrupted").then_some(view)
    });
    assert_eq!(view["error_code"], "AGENT_INTERACTION_TIMED_OUT", "{view}");
    wait_workdir_free(&setup, "an expired interaction");
}

#[test]
fn a_crashed_task_past_its_deadline_is_reconciled_as_timed_out() {
    // Long enough for the crash to come before the deadline on a loaded
    // machine (the Bridge would time the task out itself otherwise).
    let timeout = Duration::from_secs(4);
    let setup = Setup::new().agent("task_timeout_seconds", &timeout.as_secs().to_string());
    let mut daemon = setup.start();
    let submitted = Instant::now();
    let task = daemon.submit("fake: child-tree");
    let tree = ChildTree::wait_for(&setup, &task);
    daemon.kill();
    assert!(
        submitted.elapsed() < timeout,
        "the crash came after the deadline: the test proves nothing"
    );
    // Let the deadline pass while no Bridge runs.
    std::thread::sleep((timeout + Duration::from_millis(500)).saturating_sub(submitted.elapsed()));

    let restarted = restart(&setup);
    let view = restarted.task(&task);
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "AGENT_TASK_TIMED_OUT", "{view}");
    let reconciled = restarted.payloads(&task, "task.reconciled");
    assert_eq!(
        reconciled.first().map(|p| &p["error_code"]),
        Some(&json!("AGENT_TASK_TIMED_OUT")),
        "{reconciled:?}"
    );
    assert_eq!(tree.live_members().len(), 3, "a restart signals nobody");
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_RECOVERY_REQUIRED"));
    tree.kill();
    tree.wait_gone();
    let next = restarted.submit("fake: complete next");
    restarted.wait_status(&next, "succeeded");
    wait_workdir_free(&setup, "lazy reconciliation");
}

/// Starts `MARKER_THEN_TREE`, waits for the marker and the tree, removes
/// the marker, SIGKILLs the Bridge and checks that the tree survived as an
/// orphan. Returns the task id and the tree.
fn crash_mid_turn(daemon: &mut Daemon) -> (String, ChildTree) {
    let setup = daemon.setup().clone();
    let task = daemon.submit(MARKER_THEN_TREE);
    let tree = ChildTree::wait_for(&setup, &task);
    let marker = setup.work_dir().join("marker.txt");
    assert_eq!(fs::read_to_string(&marker).unwrap(), "one");
    fs::remove_file(&marker).unwrap();
    let shell = u32::try_from(tree.pgid()).unwrap();
    let bridge = daemon.pid();
    assert_eq!(parent_of(shell), Some(bridge), "the tree is the daemon's");

    daemon.kill();

    assert_eq!(tree.live_members().len(), 3, "the orphaned tree survives");
    assert_ne!(parent_of(shell), Some(bridge), "the shell was reparented");
    assert_eq!(guards(&setup), vec![(task.clone(), Some(tree.pgid()))]);
    assert_eq!(
        mcp_mutation(&setup),
        Err("WORKDIR_RECOVERY_REQUIRED"),
        "the lock died with the Bridge, the guard did not"
    );
    (task, tree)
}

/// The restarted Bridge interrupted `task` (never re-ran it) and recorded
/// the reconciliation.
fn assert_interrupted_by_restart(daemon: &Daemon, task: &str) {
    let view = daemon.task(task);
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_RESTARTED", "{view}");
    let reconciled = daemon.payloads(task, "task.reconciled");
    assert_eq!(
        reconciled.first().map(|p| &p["error_code"]),
        Some(&json!("BRIDGE_RESTARTED")),
        "{reconciled:?}"
    );
    let types = daemon.event_types(task);
    assert_eq!(count(&types, "task.started"), 1, "{types:?}");
    assert_eq!(count(&types, "turn.started"), 1, "{types:?}");
    assert_eq!(count(&types, "file_change.started"), 1, "{types:?}");
}

/// Only one task exists: nothing was resubmitted behind our back.
fn assert_single_task(setup: &Setup, task: &str) {
    let (status, stdout, stderr) = setup.run(&["inspect"]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("tasks: 1 shown"), "{stdout}");
    assert!(stdout.contains(task), "{stdout}");
}

fn assert_no_marker(setup: &Setup) {
    assert!(
        !setup.work_dir().join("marker.txt").exists(),
        "the turn was re-run: the marker came back"
    );
}

#[test]
fn a_crash_leaves_a_guard_that_blocks_until_the_orphaned_tree_is_gone() {
    let setup = Setup::new();
    let mut daemon = setup.start();
    let (task, tree) = crash_mid_turn(&mut daemon);

    let restarted = restart(&setup);
    assert_interrupted_by_restart(&restarted, &task);
    // The recorded group is alive: the guard stays, for both sides.
    assert_eq!(guards(&setup), vec![(task.clone(), Some(tree.pgid()))]);
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_RECOVERY_REQUIRED"));
    assert_eq!(refused_writer(&restarted), "WORKDIR_RECOVERY_REQUIRED");
    assert_eq!(tree.live_members().len(), 3, "nobody touched the orphan");
    // Review tasks take no lease and are not blocked.
    let review = submit_review(&restarted, "fake: complete still readable");
    restarted.wait_status(&review, "succeeded");

    tree.kill();
    tree.wait_gone();

    // Lazy reconciliation at the next writer proves the stop and clears.
    let next = restarted.submit("fake: complete after recovery");
    let view = restarted.wait_status(&next, "succeeded");
    assert_eq!(view["final_response"], "after recovery");
    wait_workdir_free(&setup, "lazy reconciliation");
    let reconciled = restarted.payloads(&task, "task.reconciled");
    assert_eq!(
        reconciled.last().map(|p| &p["provider_active"]),
        Some(&json!(false)),
        "{reconciled:?}"
    );
    // Still the restart's verdict, and still one turn.
    assert_interrupted_by_restart(&restarted, &task);
    assert_no_marker(&setup);
}

#[test]
fn a_restart_alone_clears_the_guard_once_the_orphaned_tree_is_gone() {
    let setup = Setup::new();
    let mut daemon = setup.start();
    let (task, tree) = crash_mid_turn(&mut daemon);
    tree.kill();
    tree.wait_gone();
    assert_eq!(
        mcp_mutation(&setup),
        Err("WORKDIR_RECOVERY_REQUIRED"),
        "only a Bridge may clear a guard"
    );
    assert_single_task(&setup, &task);

    let restarted = restart(&setup);
    assert_eq!(guards(&setup), vec![]);
    assert_eq!(mcp_mutation(&setup), Ok(()));
    assert_interrupted_by_restart(&restarted, &task);
    let reconciled = restarted.payloads(&task, "task.reconciled");
    assert_eq!(reconciled.len(), 1, "{reconciled:?}");
    assert_no_marker(&setup);
    assert_single_task(&setup, &task);
}

#[test]
fn a_restart_keeps_the_guard_of_a_live_orphan_and_a_later_one_clears_it() {
    let setup = Setup::new();
    let mut daemon = setup.start();
    let (task, tree) = crash_mid_turn(&mut daemon);

    let mut restarted = restart(&setup);
    assert_interrupted_by_restart(&restarted, &task);
    assert_eq!(guards(&setup), vec![(task.clone(), Some(tree.pgid()))]);
    assert!(restarted.stop().success(), "{}", restarted.stderr());
    assert_eq!(tree.live_members().len(), 3, "a shutdown leaves the orphan");
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_RECOVERY_REQUIRED"));

    tree.kill();
    tree.wait_gone();
    let again = restart(&setup);
    assert_eq!(guards(&setup), vec![]);
    assert_eq!(mcp_mutation(&setup), Ok(()));
    assert_interrupted_by_restart(&again, &task);
    assert_no_marker(&setup);
    assert_single_task(&setup, &task);
}

#[test]
fn sigterm_interrupts_the_running_task_and_stops_its_tree() {
    let setup = Setup::new();
    let mut daemon = setup.start();
    let task = daemon.submit("fake: child-tree");
    let tree = ChildTree::wait_for(&setup, &task);
    assert!(setup.socket().exists());

    daemon.signal(Signal::TERM);
    let status = daemon.wait_exit(SHUTDOWN_LIMIT);
    let status = status.unwrap_or_else(|| {
        panic!(
            "no exit within {SHUTDOWN_LIMIT:?} of SIGTERM; stderr:\n{}",
            daemon.stderr()
        )
    });
    assert_eq!(status.code(), Some(0), "{}", daemon.stderr());
    assert!(!setup.socket().exists(), "the socket file was left behind");
    assert_eq!(tree.live_members(), Vec::<u32>::new(), "the tree outlived");
    // The provider was proven stopped: no recovery state is left behind.
    assert_eq!(guards(&setup), vec![], "{}", daemon.stderr());
    assert_eq!(mcp_mutation(&setup), Ok(()));
    tree.wait_gone();

    let restarted = restart(&setup);
    let view = restarted.task(&task);
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_SHUTDOWN", "{view}");
    let interrupted = restarted.payloads(&task, "task.interrupted");
    assert_eq!(
        interrupted,
        vec![json!({ "error_code": "BRIDGE_SHUTDOWN" })]
    );
    let types = restarted.event_types(&task);
    assert_eq!(count(&types, "turn.started"), 1, "{types:?}");
    assert_eq!(count(&types, "task.reconciled"), 0, "{types:?}");
}

#[test]
fn a_sigterm_during_start_up_is_kept_and_stops_the_daemon_gracefully() {
    // The socket accepts connections before the store and the start-up
    // reconciliation (here: a crashed run's task) are done, so a supervisor
    // may stop the Bridge the moment it can connect. That signal must not
    // kill it halfway: it is kept, and ends the Bridge gracefully once the
    // start is complete.
    let setup = Setup::new();
    let mut crashed = setup.start();
    let (task, tree) = crash_mid_turn(&mut crashed);
    tree.kill();
    tree.wait_gone();

    let mut daemon = setup.spawn();
    // No pause between tries: the signal is meant to land as early as a
    // connection can prove the socket is there.
    daemon.wait_connectable(Duration::ZERO);
    let status = daemon.stop();
    assert_eq!(status.code(), Some(0), "{status}; {}", daemon.stderr());
    assert!(
        daemon.stderr().contains("agent bridge stopped"),
        "{}",
        daemon.stderr()
    );
    assert!(!setup.socket().exists(), "the socket file was left behind");

    // The start-up it let finish reconciled the crashed task, once.
    let restarted = restart(&setup);
    assert_interrupted_by_restart(&restarted, &task);
    assert_eq!(restarted.payloads(&task, "task.reconciled").len(), 1);
    assert_eq!(guards(&setup), vec![]);
    assert_single_task(&setup, &task);
}

/// A setup whose daemon inherits every spelling of a proxy variable the
/// operator's shell might hold, plus the agent proxy endpoint.
fn leaky_setup() -> Setup {
    Setup::new()
        .env("HTTP_PROXY", "http://leak:1")
        .env("https_proxy", "http://leak:2")
        .env("ALL_PROXY", "socks5://leak:3")
        .env("no_proxy", "leak.example")
        .env("FOO_PROXY_URL", "http://leak:4")
        .env("SERVERFS_AGENT_PROXY_URL", PROXY_URL)
}

/// The final response of a `fake: env` review task.
fn child_environment(setup: &Setup) -> String {
    let mut daemon = setup.start();
    let task = submit_review(&daemon, "fake: env");
    let view = daemon.wait_status(&task, "succeeded");
    assert!(daemon.stop().success(), "{}", daemon.stderr());
    let log = daemon.stderr();
    assert!(
        !log.contains("proxy.test") && !log.contains("leak"),
        "the log shows a proxy endpoint:\n{log}"
    );
    view["final_response"].as_str().unwrap().to_owned()
}

#[test]
fn a_proxied_runtime_sees_exactly_the_agent_proxy() {
    let setup = leaky_setup().agent("proxy_runtimes", r#"["fake"]"#);
    assert_eq!(
        child_environment(&setup),
        "env: HTTPS_PROXY=<configured>, NO_PROXY=127.0.0.1,localhost,::1"
    );
}

#[test]
fn the_operators_no_proxy_entries_come_first() {
    let setup = leaky_setup().agent("proxy_runtimes", r#"["fake"]"#).env(
        "SERVERFS_AGENT_NO_PROXY",
        " internal.test ;.corp.test,localhost,,",
    );
    assert_eq!(
        child_environment(&setup),
        "env: HTTPS_PROXY=<configured>, NO_PROXY=internal.test,.corp.test,localhost,127.0.0.1,::1"
    );
}

#[test]
fn an_unproxied_runtime_sees_no_proxy_variable() {
    assert_eq!(child_environment(&leaky_setup()), "env: none");
}

#[test]
fn a_proxied_runtime_without_an_endpoint_refuses_to_start() {
    let setup = Setup::new()
        .agent("proxy_runtimes", r#"["fake"]"#)
        .env("HTTPS_PROXY", "http://leak:2");
    let mut daemon = setup.spawn();
    let status = daemon
        .wait_exit(Duration::from_secs(15))
        .expect("the daemon exits");
    assert_eq!(status.code(), Some(2));
    let log = daemon.stderr();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].starts_with("serverfs-agent-bridge: configuration error: agent.proxy_runtimes: "),
        "{log}"
    );
    assert!(lines[0].contains("SERVERFS_AGENT_PROXY_URL"), "{log}");
    assert!(!setup.socket().exists());
    assert_not_created(&setup.state_dir());
}

/// The daemon refused before touching its state.
fn assert_not_created(path: &Path) {
    assert!(!path.exists(), "{} was created", path.display());
}
