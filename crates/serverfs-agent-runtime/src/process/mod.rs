//! Spawning, watching and stopping provider processes: the one place every
//! adapter starts a coding-agent CLI.
//!
//! The rules (ARCHITECTURE.md §6, spec-agent-bridge.md §10.5,
//! spec-adapters.md §7.1): an operator-configured absolute executable with
//! fixed argv, run in the authorized working directory, with a scrubbed
//! environment plus only the dedicated agent proxy variables, stdin/stdout
//! piped for the adapter's protocol, stderr drained into a bounded capture,
//! in a process group of its own that is killed as a whole.

mod cgroups;
mod environment;
mod orphans;
mod stderr_capture;
mod sys;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, sleep, timeout};

pub use cgroups::{
    CgroupSetupError, delegated_cgroup, own_cgroup, remove_stale_task_cgroups, use_task_cgroups,
    watch_task_cgroups,
};
pub use environment::{ProxyPolicy, provider_environment};
pub use orphans::{adopt_orphans, reap_adopted, reap_adopted_forever};
pub use stderr_capture::{DEFAULT_STDERR_CAPACITY, StderrCapture, StderrTail};

use self::sys::{Cgroup, GroupSignal, Member};
use crate::error::{CommandProblem, ProcessError};
use crate::working_dir::WorkingDir;

/// How often [`ProviderChild::terminate`] looks at the group while it waits.
/// Termination is rare and a `/proc` scan is cheap; 20 ms keeps a stop
/// prompt without spinning.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How long [`ProviderChild::terminate`] waits, after `SIGKILL`, for the
/// leader to be reaped and the group to empty. `SIGKILL` cannot be caught;
/// only a process stuck in uninterruptible sleep (a hung network file
/// system) outlasts this, and then the stop is reported as unproven.
const KILL_SETTLE: Duration = Duration::from_secs(5);

/// The process group a provider runs in (the pgid on Linux, equal to the
/// provider's pid).
///
/// # Security
///
/// Never 0 or 1: signalling those would reach the Bridge's own group or
/// every process of the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessGroupId(i32);

impl ProcessGroupId {
    /// Wraps a raw group id, for example one read back from a recovery
    /// guard; `None` for ids below 2.
    pub fn from_raw(raw: i32) -> Option<Self> {
        (raw > 1).then_some(Self(raw))
    }

    /// The raw id.
    pub fn as_raw(self) -> i32 {
        self.0
    }
}

impl fmt::Display for ProcessGroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whether any process of `group` may still run code.
///
/// An empty group is gone; so is one whose remaining members are zombies
/// (exited, not yet reaped by their parent or init), since a zombie runs
/// nothing. Whenever liveness cannot be established the answer is `true`:
/// a provider stop is never proven by accident (ARCHITECTURE.md invariant
/// 7).
pub fn is_group_alive(group: ProcessGroupId) -> bool {
    sys::group_has_live_member(group)
}

/// Whether any process started for task `task_id` may still run code: a
/// process in one of the task's cgroups (when [`use_task_cgroups`] is on),
/// one carrying the task's marker ([`TASK_MARKER_VAR`]), or a descendant of
/// one, whichever group or session it moved to. This holds across a Bridge
/// restart, when the processes' parents are long gone. When `/proc` or the
/// cgroup cannot be read, the answer is `true`.
///
/// [`TASK_MARKER_VAR`]: crate::TASK_MARKER_VAR
pub fn is_task_alive(task_id: &str) -> bool {
    if cgroups::task_populated(task_id) == Some(true) {
        return true;
    }
    let marker = format!("{}={task_id}", crate::TASK_MARKER_VAR);
    let alive = sys::provider_members(None, Some(marker.as_bytes()), &HashSet::new(), &[])
        .map_or(true, |members| !members.is_empty());
    if !alive {
        cgroups::remove_task_cgroup(task_id);
    }
    alive
}

/// What [`ProviderChild::terminate`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Termination {
    /// No process of the provider can run any more: none of its group,
    /// none of its descendants wherever they moved, none carrying its
    /// task's marker. Only this proves a provider stop (for example to
    /// remove a recovery guard); `false` means the stop is unproven and
    /// must be treated as if the provider still ran.
    pub tree_gone: bool,
    /// Something of the provider outlived `SIGTERM` and the grace period, so
    /// `SIGKILL` did the job.
    pub escalated: bool,
    /// The leader's exit status, if it was reaped.
    pub exit_status: Option<ExitStatus>,
}

/// Where a provider process starts.
#[derive(Clone)]
pub enum StartDir {
    /// A task's directory, by descriptor: the child starts in the very
    /// directory that was opened, whatever its path names by now.
    Opened(WorkingDir),
    /// A directory no client controls (`/`, the Bridge's home), by path.
    Trusted(PathBuf),
}

impl From<&WorkingDir> for StartDir {
    fn from(dir: &WorkingDir) -> StartDir {
        StartDir::Opened(dir.clone())
    }
}

impl From<&Path> for StartDir {
    fn from(path: &Path) -> StartDir {
        StartDir::Trusted(path.to_path_buf())
    }
}

impl From<&PathBuf> for StartDir {
    fn from(path: &PathBuf) -> StartDir {
        StartDir::Trusted(path.clone())
    }
}

impl From<PathBuf> for StartDir {
    fn from(path: PathBuf) -> StartDir {
        StartDir::Trusted(path)
    }
}

impl From<&str> for StartDir {
    fn from(path: &str) -> StartDir {
        StartDir::Trusted(PathBuf::from(path))
    }
}

/// How to start one provider process.
///
/// Built per task by an adapter from configuration: nothing in it comes
/// from an MCP client (ARCHITECTURE.md invariants 1 and 6).
///
/// # Security
///
/// `Debug` shows counts and environment names only: the executable and
/// working directory are host paths, argument and environment values may
/// carry session ids or credentials.
pub struct ProviderCommand {
    executable: PathBuf,
    args: Vec<OsString>,
    working_dir: StartDir,
    env: Vec<(String, String)>,
    passthrough: Vec<String>,
    inherited: Option<Vec<(String, String)>>,
    proxy: ProxyPolicy,
    stderr_capacity: usize,
}

impl ProviderCommand {
    /// A command running `executable` in `working_dir`, with no arguments,
    /// no adapter environment, no proxy, and a 64 KiB stderr capture.
    ///
    /// `executable` must be absolute (resolved once at Bridge start-up;
    /// never searched in `PATH` here); `working_dir` is the task's opened
    /// directory ([`TaskContext::cwd`](crate::TaskContext::cwd)), or an
    /// absolute path no client controls, for probes. Both are checked by
    /// [`spawn`](Self::spawn).
    pub fn new(executable: impl Into<PathBuf>, working_dir: impl Into<StartDir>) -> Self {
        Self {
            executable: executable.into(),
            args: Vec::new(),
            working_dir: working_dir.into(),
            env: Vec::new(),
            passthrough: Vec::new(),
            inherited: None,
            proxy: ProxyPolicy::disabled(),
            stderr_capacity: DEFAULT_STDERR_CAPACITY,
        }
    }

    /// Appends fixed arguments. Default: none.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// Adds one adapter-fixed environment pair; it overrides an inherited
    /// variable of the same name. Proxy variables and reserved prefixes
    /// are refused at spawn (see [`provider_environment`]). Default: none.
    pub fn env(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Hands these variables of the Bridge's own environment to the
    /// provider, beside the allowlist: an operator's explicit choice for
    /// one runtime (`<runtime>_env_passthrough`), typically its API key. A
    /// name the Bridge's environment lacks is skipped; a fixed pair of the
    /// same name wins; a proxy variable or reserved prefix is refused at
    /// spawn as for fixed pairs. Default: none.
    pub fn pass_through<I, S>(&mut self, names: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.passthrough.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets the runtime's egress proxy policy. Default:
    /// [`ProxyPolicy::disabled`].
    pub fn proxy(&mut self, policy: ProxyPolicy) -> &mut Self {
        self.proxy = policy;
        self
    }

    /// Replaces the environment the allowlist is taken from. Default: the
    /// Bridge's own environment at spawn time (variables whose name or
    /// value is not UTF-8 are skipped rather than mangled).
    pub fn inherited_env(&mut self, vars: Vec<(String, String)>) -> &mut Self {
        self.inherited = Some(vars);
        self
    }

    /// Sets how many trailing bytes of stderr are kept. Default:
    /// [`DEFAULT_STDERR_CAPACITY`] (64 KiB).
    pub fn stderr_capacity(&mut self, bytes: usize) -> &mut Self {
        self.stderr_capacity = bytes;
        self
    }

    /// The names of the variables the provider will start with (the task
    /// marker of an opened working directory aside), sorted: what an
    /// operator may see of its environment, never the values.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn) for the environment: a malformed or
    /// reserved pair, or a proxy enabled without an endpoint.
    pub fn environment_names(&self) -> Result<Vec<String>, ProcessError> {
        let mut names: Vec<String> = self
            .environment()?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        names.sort();
        Ok(names)
    }

    /// The inherited allowlist, the fixed pairs, the passed-through
    /// variables and the proxy, as [`provider_environment`] combines them.
    fn environment(&self) -> Result<Vec<(String, String)>, ProcessError> {
        let inherited: Vec<(String, String)> = match &self.inherited {
            Some(vars) => vars.clone(),
            None => std::env::vars_os()
                .filter_map(|(name, value)| {
                    Some((name.into_string().ok()?, value.into_string().ok()?))
                })
                .collect(),
        };
        let mut extra = self.env.clone();
        for name in &self.passthrough {
            let fixed = extra.iter().any(|(fixed, _)| fixed == name);
            let value = inherited.iter().find(|(inherited, _)| inherited == name);
            if let (false, Some((_, value))) = (fixed, value) {
                extra.push((name.clone(), value.clone()));
            }
        }
        provider_environment(inherited, &extra, &self.proxy)
    }

    /// Starts the provider: `env_clear` plus [`provider_environment`],
    /// stdin and stdout piped, stderr drained into a [`StderrCapture`], in a
    /// new process group, killed (leader and group) when the returned
    /// handle is dropped.
    ///
    /// # Errors
    ///
    /// - [`ProcessError::InvalidCommand`] (`AGENT_RUNTIME_UNAVAILABLE`): a
    ///   relative executable or working directory, or a malformed or
    ///   reserved environment pair.
    /// - [`ProcessError::ProxyEndpointMissing`] (`AGENT_RUNTIME_NOT_READY`):
    ///   the proxy is enabled for the runtime but no endpoint is configured.
    /// - [`ProcessError::Spawn`] (`AGENT_RUNTIME_UNAVAILABLE`): the OS
    ///   refused (missing executable, missing working directory, …).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::process` does.
    pub fn spawn(&self) -> Result<ProviderChild, ProcessError> {
        if !self.executable.is_absolute() {
            return Err(ProcessError::InvalidCommand(
                CommandProblem::ExecutableNotAbsolute,
            ));
        }
        let working_dir = match &self.working_dir {
            StartDir::Opened(dir) => dir.spawn_path(),
            StartDir::Trusted(path) if path.is_absolute() => path.clone(),
            StartDir::Trusted(_) => {
                return Err(ProcessError::InvalidCommand(
                    CommandProblem::WorkingDirectoryNotAbsolute,
                ));
            }
        };
        let mut env = self.environment()?;
        let marker = match &self.working_dir {
            StartDir::Opened(dir) => dir.task_marker(),
            StartDir::Trusted(_) => None,
        };
        let cgroup = match &marker {
            Some((_, task_id)) => cgroups::provider_cgroup(task_id).map_err(ProcessError::Spawn)?,
            None => None,
        };
        if let Some((name, value)) = &marker {
            env.retain(|(existing, _)| existing != name);
            env.push((name.clone(), value.clone()));
        }

        let mut command = Command::new(&self.executable);
        command
            .args(&self.args)
            .current_dir(&working_dir)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Reaches the leader only; `ProviderChild`'s `Drop` kills the
            // rest of the group.
            .kill_on_drop(true);
        sys::contain(&mut command);
        if let Some(cgroup) = &cgroup {
            sys::join_cgroup_before_exec(&mut command, cgroup.procs());
        }
        // The child's pid is its group id (`contain`). `id()` is `None` only
        // once the child has been reaped, which nothing did yet.
        let mut child = orphans::register_spawned(|| {
            let child = command.spawn()?;
            let pid = child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .ok_or_else(|| std::io::Error::other("provider has no pid"))?;
            Ok((child, pid))
        })
        .map_err(ProcessError::Spawn)?;
        let Some(group) = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(ProcessGroupId::from_raw)
        else {
            return Err(ProcessError::Spawn(std::io::Error::other(
                "provider has no pid",
            )));
        };
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| ProcessError::Spawn(std::io::Error::other("stderr not piped")))?;
        let stderr = StderrCapture::start(stderr, self.stderr_capacity);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        tracing::debug!(pgid = group.as_raw(), "provider process started");
        Ok(ProviderChild {
            child,
            group,
            marker: marker.map(|(name, value)| format!("{name}={value}").into_bytes()),
            cgroup,
            known: HashSet::new(),
            stdin,
            stdout,
            stderr,
            status: None,
            tree_gone: false,
        })
    }
}

impl fmt::Debug for ProviderCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ProviderCommand")
            .field("args", &self.args.len())
            .field("env_names", &env_names)
            .field("passthrough", &self.passthrough)
            .field("inherited_override", &self.inherited.is_some())
            .field("proxy", &self.proxy)
            .field("stderr_capacity", &self.stderr_capacity)
            .finish_non_exhaustive()
    }
}

/// A running provider process, its group, and every process it started.
///
/// # Security
///
/// Dropping the handle sends `SIGKILL` to the whole group, and to every
/// descendant seen outside it, unless [`terminate`](Self::terminate)
/// already proved them gone, so a cancelled task or a Bridge shutdown
/// never leaves a provider tree behind.
/// (Should the leader have been reaped and every member have exited, the
/// group id is free for reuse; signalling it then could only hit an
/// unrelated group if the pid counter wrapped onto it in between, and
/// `kill(2)` offers no handle that closes that gap.)
#[derive(Debug)]
pub struct ProviderChild {
    child: Child,
    group: ProcessGroupId,
    /// `NAME=value` of the task marker the provider was started with.
    marker: Option<Vec<u8>>,
    /// The provider's own cgroup, when task cgroups are on: everything it
    /// started, however detached, is in there.
    cgroup: Option<Cgroup>,
    /// Every process of the provider seen so far: a descendant keeps
    /// counting once its parent exited and it was re-parented.
    known: HashSet<Member>,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: StderrCapture,
    /// The leader's status once reaped.
    status: Option<ExitStatus>,
    /// `terminate` proved the tree gone; nothing may be signalled any more.
    tree_gone: bool,
}

impl ProviderChild {
    /// The provider's process group.
    pub fn process_group(&self) -> ProcessGroupId {
        self.group
    }

    /// The provider's stdin (the adapter's protocol output), once. Dropping
    /// it closes the pipe, the usual first step of a graceful stop.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The provider's stdout (the adapter's protocol input), once.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// The bounded stderr capture (diagnostics only).
    pub fn stderr(&self) -> &StderrCapture {
        &self.stderr
    }

    /// Waits for the leader to exit and reaps it. Processes it started may
    /// live on in the group; [`terminate`](Self::terminate) ends them.
    /// Cancel-safe.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Wait`] (`AGENT_PROVIDER_ERROR`) if `waitpid` fails.
    pub async fn wait(&mut self) -> Result<ExitStatus, ProcessError> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = self.child.wait().await.map_err(ProcessError::Wait)?;
        self.reaped(status);
        Ok(status)
    }

    /// Stops the provider and everything it started: `SIGTERM` (and
    /// `SIGCONT`, so stopped processes can act on it) to the group and to
    /// every descendant outside it (a command started with `setsid`, say),
    /// up to `grace` for all of them to exit, then `SIGKILL`; then reaps the
    /// leader and checks that nothing of the provider runs.
    ///
    /// Descendants are found in `/proc` by parentage from the group's
    /// members and by the task marker, and are remembered by pid and start
    /// time, so one whose parent exits meanwhile is still followed (with
    /// the Bridge as subreaper it is re-parented to the Bridge). Every look
    /// adds what was forked since; `SIGKILL` is repeated until a look finds
    /// nothing left.
    ///
    /// The leader is not reaped before `SIGKILL` is sent: as long as it is
    /// an unreaped zombie its pid, and so the group id, cannot be reused,
    /// so the signals reach this provider's group and nothing else. (A
    /// descendant is signalled by pid; its pid could only be reused if it
    /// exited and was reaped in the milliseconds between the look and the
    /// signal, and the pid counter wrapped onto it.)
    ///
    /// Call it after a normal exit too: it is how a stop is *proven*, and
    /// it costs next to nothing when the tree is already empty. A repeated
    /// call after a proven stop signals nothing.
    ///
    /// Never fails: any trouble leaves [`Termination::tree_gone`] `false`.
    pub async fn terminate(&mut self, grace: Duration) -> Termination {
        if self.tree_gone {
            return Termination {
                tree_gone: true,
                escalated: false,
                exit_status: self.status,
            };
        }
        // A provider blocked on reading its stdin sees end of file.
        self.stdin = None;
        // Found while the leader still lives: until it exits, every process
        // it started is its descendant.
        let _alive = self.look();
        self.signal_tree(GroupSignal::Terminate);
        self.signal_tree(GroupSignal::Continue);

        let deadline = Instant::now() + grace;
        let mut escalated = false;
        while self.look() {
            if Instant::now() >= deadline {
                escalated = true;
                break;
            }
            sleep(POLL_INTERVAL).await;
        }
        self.signal_tree(GroupSignal::Kill);

        if self.status.is_none() {
            match timeout(KILL_SETTLE, self.child.wait()).await {
                Ok(Ok(status)) => self.reaped(status),
                Ok(Err(err)) => tracing::warn!(error = %err, "reaping provider failed"),
                Err(_) => tracing::warn!("provider leader outlived SIGKILL"),
            }
        }
        let settle = Instant::now() + KILL_SETTLE;
        let tree_gone = loop {
            if !self.look() {
                break true;
            }
            if Instant::now() >= settle {
                break false;
            }
            // Forked between the last `SIGKILL` and this look.
            self.signal_tree(GroupSignal::Kill);
            sleep(POLL_INTERVAL).await;
        };
        self.tree_gone = tree_gone;
        if let (true, Some(cgroup)) = (tree_gone, &self.cgroup) {
            cgroup.remove();
        }
        tracing::debug!(
            pgid = self.group.as_raw(),
            tree_gone,
            escalated,
            descendants = self.known.len(),
            "provider terminated"
        );
        Termination {
            tree_gone,
            escalated,
            exit_status: self.status,
        }
    }

    /// Looks at the process table: adds the provider's processes found now
    /// to those known, and says whether any of them, or of the group, may
    /// still run. When `/proc` cannot be read, only the group's own
    /// signal-based check answers, and it errs on "alive". A cgroup that
    /// still holds a process (a zombie not yet reaped, even) keeps the
    /// provider alive: only an empty one proves it gone.
    fn look(&mut self) -> bool {
        let (in_cgroup, cgroup_unreadable) = match self.cgroup.as_ref().map(Cgroup::pids) {
            None => (Vec::new(), false),
            Some(Ok(pids)) => (pids, false),
            Some(Err(err)) => {
                tracing::debug!(error = %err, "reading the provider's cgroup failed");
                (Vec::new(), true)
            }
        };
        let members = sys::provider_members(
            Some(self.group),
            self.marker.as_deref(),
            &self.known,
            &in_cgroup,
        );
        match members {
            Ok(members) => {
                let alive = !members.is_empty();
                self.known.extend(members);
                alive || !in_cgroup.is_empty() || cgroup_unreadable || is_group_alive(self.group)
            }
            Err(err) => {
                tracing::debug!(error = %err, "reading the process table failed");
                true
            }
        }
    }

    /// Signals the group and every known process of the provider; a
    /// failure is logged and left to the liveness checks, which then cannot
    /// prove the tree gone.
    fn signal_tree(&self, signal: GroupSignal) {
        self.signal(signal);
        if let (GroupSignal::Kill, Some(cgroup)) = (signal, &self.cgroup)
            && let Err(err) = cgroup.kill()
        {
            tracing::warn!(error = %err, "killing the provider's cgroup failed");
        }
        for member in &self.known {
            if let Err(err) = sys::signal_member(*member, signal) {
                tracing::warn!(error = %err, ?signal, "signalling a provider process failed");
            }
        }
    }

    /// Records the leader's exit status; from now on its handle no longer
    /// reaps, so the orphan reaper may take a process reusing its pid.
    fn reaped(&mut self, status: ExitStatus) {
        self.status = Some(status);
        orphans::unregister_spawned(self.group.as_raw());
    }

    /// Signals the group; a failure is logged and left to the liveness
    /// checks, which then cannot prove the group gone.
    fn signal(&self, signal: GroupSignal) {
        if let Err(err) = sys::signal_group(self.group, signal) {
            tracing::warn!(error = %err, ?signal, "signalling provider group failed");
        }
    }
}

impl Drop for ProviderChild {
    fn drop(&mut self) {
        if !self.tree_gone {
            self.signal_tree(GroupSignal::Kill);
        }
        // The runtime reaps a dropped child in the background.
        orphans::unregister_spawned(self.group.as_raw());
    }
}
