//! The Agent Bridge killed with SIGKILL at each stage of a task, driven
//! through serverfs's agent tools with the deterministic `fake` runtime:
//!
//! - **submit**: while `submit_agent_task` is in flight;
//! - **waiting**: while the task waits for an approval;
//! - **running**: while its provider runs a process tree of its own;
//! - **finishing**: around the moment a short turn completes.
//!
//! After each kill the Bridge starts again. A task whose submission was
//! acknowledged must still exist (**lost** otherwise), must have started
//! its turn at most once (**re-run** otherwise), and once it is over and
//! its processes are gone the workdir must be writable again (**guard
//! left** otherwise: the recovery guard stayed).
//!
//! **cwd swap**: tasks are submitted with a working directory that another
//! thread swaps with a symlink to outside as fast as the kernel allows;
//! each task writes one file. An **escape** is a file outside.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Outcome, Rng, Setup, text, toml_string};
use crate::stdio::StdioServer;

/// How long a state may take to be reached (a task to wait, finish…).
const STATE_TIMEOUT: Duration = Duration::from_secs(30);

/// The stages a kill hits.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Submit,
    Waiting,
    Running,
    Finishing,
}

impl Stage {
    const ALL: [Stage; 4] = [
        Stage::Submit,
        Stage::Waiting,
        Stage::Running,
        Stage::Finishing,
    ];

    fn prompt(self) -> &'static str {
        match self {
            Stage::Submit | Stage::Finishing => "fake: write done.txt ok\nfake: complete done",
            Stage::Waiting => "fake: approval make test",
            Stage::Running => "fake: child-tree",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Stage::Submit => "submit",
            Stage::Waiting => "waiting",
            Stage::Running => "running",
            Stage::Finishing => "finishing",
        }
    }
}

/// The files of one run: configuration, the Bridge's socket, locks and
/// state, the workdir and what lies outside it.
pub(super) struct Layout {
    _tmp: tempfile::TempDir,
    config: PathBuf,
    socket: PathBuf,
    pub(super) work: PathBuf,
    outside: PathBuf,
    locks: PathBuf,
    log: PathBuf,
}

impl Layout {
    pub(super) fn create() -> Result<Layout, String> {
        Layout::create_with("")
    }

    /// A layout whose configuration ends with `extra` (raw TOML, such as
    /// more `[[workdirs]]`; `{root}` in it stands for the temporary
    /// directory, as a TOML string's inside).
    pub(super) fn create_with(extra: &str) -> Result<Layout, String> {
        let tmp = tempfile::Builder::new()
            .prefix("serverfs-soak-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let root = tmp.path().to_path_buf();
        let work = root.join("work");
        let outside = root.join("outside");
        for dir in [&work.join("sub"), &outside] {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::os::unix::fs::symlink("../outside", work.join("sub.swap"))
            .map_err(|e| e.to_string())?;
        let socket = root.join("run").join("bridge.sock");
        let config = root.join("serverfs.toml");
        let text = format!(
            "[server]\nlog_level = \"warning\"\n\n\
             [agent]\nenabled = true\nsocket = {socket}\nlock_dir = {locks}\n\
             state_dir = {state}\nmax_active_tasks = 8\n\n\
             [[workdirs]]\nalias = \"w\"\npath = {work}\nread_only = false\n\
             agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\n",
            socket = toml_string(&socket)?,
            locks = toml_string(&root.join("run").join("locks"))?,
            state = toml_string(&root.join("state"))?,
            work = toml_string(&work)?,
        ) + &extra.replace("{root}", toml_string(&root)?.trim_matches('"'));
        std::fs::write(&config, text).map_err(|e| e.to_string())?;
        Ok(Layout {
            locks: root.join("run").join("locks"),
            log: root.join("bridge.log"),
            _tmp: tmp,
            config,
            socket,
            work,
            outside,
        })
    }

    /// `serverfs serve` on this layout's configuration, over stdio.
    pub(super) fn serverfs(&self, setup: &Setup) -> Result<StdioServer, String> {
        StdioServer::spawn(
            text(&setup.serverfs)?,
            &[
                "serve".to_owned(),
                "--config".to_owned(),
                text(&self.config)?.to_owned(),
            ],
            &[],
        )
    }
}

/// The Bridge daemon, killed on drop.
pub(super) struct Bridge(Child);

impl Bridge {
    pub(super) fn start(setup: &Setup, layout: &Layout) -> Result<Bridge, String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&layout.log)
            .map_err(|e| e.to_string())?;
        let child = Command::new(&setup.bridge)
            .arg("serve")
            .arg("--config")
            .arg(&layout.config)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", layout.config.parent().unwrap_or(Path::new("/")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting the Bridge: {e}"))?;
        // A killed Bridge leaves its socket file: wait until the new one
        // accepts connections on it.
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&layout.socket).is_err() {
            if started.elapsed() > STATE_TIMEOUT {
                return Err("the Bridge did not listen on its socket".to_owned());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Bridge(child))
    }

    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Tallies of the kill matrix.
#[derive(Default)]
struct Tally {
    kills: u64,
    acknowledged: u64,
    lost: u64,
    rerun: u64,
    guards_left: u64,
    /// A running task's guard gone while its process tree still ran.
    released_early: u64,
}

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let layout = Layout::create()?;
    let mut server = layout.serverfs(setup)?;
    let rounds = setup.profile.pick(3, 12);
    let mut rng = Rng::new(0x5eed_0005);
    let mut tally = Tally::default();
    let mut bridge = Bridge::start(setup, &layout)?;
    for round in 0..rounds {
        for stage in Stage::ALL {
            bridge = kill_at(
                setup,
                &layout,
                &mut server,
                bridge,
                stage,
                round,
                &mut rng,
                &mut tally,
            )?;
        }
    }
    let swaps = cwd_swaps(&layout, &mut server, setup.profile.pick(40, 150))?;
    drop(bridge);
    Ok(vec![
        Outcome {
            check: "Bridge kill -9 (submit, waiting, running, finishing)",
            attempts: tally.kills,
            failures: vec![
                ("tasks lost", tally.lost),
                ("turns re-run", tally.rerun),
                ("guards left", tally.guards_left),
                ("guards released early", tally.released_early),
            ],
            figures: format!(
                "{} kills per stage; {} acknowledged submissions",
                rounds, tally.acknowledged
            ),
        },
        swaps,
    ])
}

/// One kill at `stage`, the restart, and the checks; returns the new
/// Bridge.
#[allow(clippy::too_many_arguments)]
fn kill_at(
    setup: &Setup,
    layout: &Layout,
    server: &mut StdioServer,
    bridge: Bridge,
    stage: Stage,
    round: u64,
    rng: &mut Rng,
    tally: &mut Tally,
) -> Result<Bridge, String> {
    let prompt = stage.prompt();
    let submit = json!({"workdir": "w", "runtime": "fake", "prompt": prompt,
                        "idempotency_key": format!("soak-{}-{round}", stage.name())});
    let task = match stage {
        Stage::Submit => {
            // The kill races the submission itself.
            let delay = rng.between(Duration::ZERO, Duration::from_millis(5));
            let pid = bridge.0.id();
            let killer = std::thread::spawn(move || {
                std::thread::sleep(delay);
                kill_pid(pid);
            });
            let answer = server.call_any("submit_agent_task", submit)?;
            let _ = killer.join();
            bridge.kill();
            task_id(&answer)
        }
        Stage::Waiting | Stage::Running => {
            let task = task_id(&server.call_any("submit_agent_task", submit)?)
                .ok_or("submission refused")?;
            let wanted = match stage {
                Stage::Waiting => "waiting_for_approval",
                _ => "running",
            };
            wait_status(server, &task, &[wanted])?;
            if matches!(stage, Stage::Running) {
                // The tree is started and recorded a little after the
                // turn; a kill before that leaves no tree to outlive the
                // Bridge, and the check below would count a guard that was
                // rightly released.
                wait_for_live_recorded_group(&layout.locks)?;
            }
            bridge.kill();
            Some(task)
        }
        Stage::Finishing => {
            let task = task_id(&server.call_any("submit_agent_task", submit)?)
                .ok_or("submission refused")?;
            std::thread::sleep(rng.between(Duration::ZERO, Duration::from_millis(40)));
            bridge.kill();
            Some(task)
        }
    };
    tally.kills += 1;
    let bridge = Bridge::start(setup, layout)?;
    if let Some(task) = task {
        tally.acknowledged += 1;
        let view = server.call_any("get_agent_task", json!({"task_id": task}))?;
        if view["isError"] == json!(true) {
            tally.lost += 1;
        } else {
            wait_status(
                server,
                &task,
                &[
                    "succeeded",
                    "failed",
                    "cancelled",
                    "interrupted",
                    "timed_out",
                ],
            )?;
            tally.rerun += u64::from(turn_starts(server, &task)? > 1);
        }
    }
    if matches!(stage, Stage::Running) {
        // The tree outlived the Bridge: the guard must hold until it is
        // gone, which the soak then makes happen.
        tally.released_early += u64::from(creates(server)?);
        kill_recorded_groups(&layout.locks);
    }
    tally.guards_left += u64::from(!writable_again(server)?);
    let _ = std::fs::remove_file(layout.work.join("done.txt"));
    Ok(bridge)
}

/// Tasks whose working directory is being swapped with a symlink to
/// outside; an escape is any file appearing outside.
fn cwd_swaps(layout: &Layout, server: &mut StdioServer, tasks: u64) -> Result<Outcome, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, work) = (stop.clone(), layout.work.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let swapped = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    work.join("sub"),
                    rustix::fs::CWD,
                    work.join("sub.swap"),
                    rustix::fs::RenameFlags::EXCHANGE,
                );
                swaps += u64::from(swapped.is_ok());
            }
            swaps
        })
    };
    let (mut submitted, mut refused) = (0u64, 0u64);
    for i in 0..tasks {
        let answer = server.call_any(
            "submit_agent_task",
            json!({"workdir": "w", "runtime": "fake", "path": "sub",
                   "prompt": format!("fake: write swapped-{i}.txt x"),
                   "idempotency_key": format!("soak-swap-{i}")}),
        )?;
        match task_id(&answer) {
            Some(task) => {
                submitted += 1;
                wait_status(
                    server,
                    &task,
                    &[
                        "succeeded",
                        "failed",
                        "cancelled",
                        "interrupted",
                        "timed_out",
                    ],
                )?;
            }
            None => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap_or(0);
    let escapes = std::fs::read_dir(&layout.outside)
        .map(|entries| entries.count() as u64)
        .unwrap_or(0);
    Ok(Outcome {
        check: "Bridge task cwd swapped for a symlink",
        attempts: tasks,
        failures: vec![("escapes", escapes)],
        figures: format!(
            "{submitted} tasks ran, {refused} refused at submit (the path was a symlink then); \
             {swaps} swaps"
        ),
    })
}

fn kill_pid(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// The task id of a successful submission.
pub(super) fn task_id(answer: &Value) -> Option<String> {
    if answer["isError"] == json!(true) {
        return None;
    }
    answer["structuredContent"]["task_id"]
        .as_str()
        .map(str::to_owned)
}

/// Polls the task until its status is one of `wanted`.
pub(super) fn wait_status(
    server: &mut StdioServer,
    task: &str,
    wanted: &[&str],
) -> Result<String, String> {
    let started = Instant::now();
    loop {
        let view = server.call_any("get_agent_task", json!({"task_id": task}))?;
        let status = view["structuredContent"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if wanted.contains(&status.as_str()) {
            return Ok(status);
        }
        if started.elapsed() > STATE_TIMEOUT {
            return Err(format!("task {task} never reached {wanted:?}: {view}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many `turn.started` events the task has.
fn turn_starts(server: &mut StdioServer, task: &str) -> Result<usize, String> {
    let events = server.call_any(
        "read_agent_task_events",
        json!({"task_id": task, "limit": 500}),
    )?;
    Ok(events["structuredContent"]["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|e| e["type"] == "turn.started")
                .count()
        })
        .unwrap_or(0))
}

/// Whether `create_text_file` succeeds now (and undoes it).
fn creates(server: &mut StdioServer) -> Result<bool, String> {
    let answer = server.call_any(
        "create_text_file",
        json!({"workdir": "w", "path": "probe.txt", "content": "x"}),
    )?;
    if answer["isError"] == json!(true) {
        return Ok(false);
    }
    let stat = server.call("stat_file", json!({"workdir": "w", "path": "probe.txt"}))?;
    server.call(
        "delete_file",
        json!({"workdir": "w", "path": "probe.txt", "expected_revision": stat["revision"]}),
    )?;
    Ok(true)
}

/// Whether the workdir becomes writable (lease free, guard gone) within
/// [`STATE_TIMEOUT`]. A guard whose processes are gone is cleared by the
/// Bridge lazily, at the next submission: one is made when a write meets
/// it.
fn writable_again(server: &mut StdioServer) -> Result<bool, String> {
    let started = Instant::now();
    while started.elapsed() < STATE_TIMEOUT {
        if creates(server)? {
            return Ok(true);
        }
        let _ = server.call_any(
            "submit_agent_task",
            json!({"workdir": "w", "runtime": "fake", "prompt": "fake: complete reconcile"}),
        )?;
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(false)
}

/// Waits until a recovery guard under `locks` records a process group
/// with a member that is not a zombie.
fn wait_for_live_recorded_group(locks: &Path) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < STATE_TIMEOUT {
        if recorded_groups(locks).into_iter().any(has_running_member) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err("the fake's child tree was never recorded in a recovery guard".to_owned())
}

/// Kills every process group a recovery guard under `locks` records.
fn kill_recorded_groups(locks: &Path) {
    for pgid in recorded_groups(locks) {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// The process groups the recovery guards under `locks` record. Dot files
/// are a guard's temporary copies, which a kill can leave behind: not
/// guards.
fn recorded_groups(locks: &Path) -> Vec<rustix::process::Pid> {
    let mut groups = Vec::new();
    let mut pending = vec![locks.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(record) = std::fs::read(&path) else {
                continue;
            };
            let pgid = serde_json::from_slice::<Value>(&record)
                .ok()
                .and_then(|r| r["provider_pgid"].as_i64())
                .and_then(|p| i32::try_from(p).ok())
                .and_then(rustix::process::Pid::from_raw);
            groups.extend(pgid);
        }
    }
    groups
}

/// Whether a process of group `pgid` runs: a zombie (exited, not yet
/// reaped by init) does not, though `kill(-pgid, 0)` still finds it.
fn has_running_member(pgid: rustix::process::Pid) -> bool {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|process| {
        let Ok(stat) = std::fs::read_to_string(process.path().join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parens.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|p| p.parse::<i32>().ok());
        state != Some("Z") && pgrp == Some(pgid.as_raw_nonzero().get())
    })
}
