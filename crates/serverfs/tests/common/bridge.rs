//! The real Agent Bridge beside the real `serverfs`: one temporary
//! directory holding both processes' shared `serverfs.toml`, the Bridge's
//! socket, lock and state directories, and the workdirs.
//!
//! ```ignore
//! let env = AgentEnv::builder().workdir("off", "agent_mode = \"disabled\"").build();
//! let bridge = env.start_bridge();          // waits until it serves
//! let server = env.start_server().await;    // serverfs serve --config …
//! bridge.kill();                            // SIGKILL, as a crash
//! let bridge = env.start_bridge();          // a restart on the same state
//! ```
//!
//! The Bridge binary is `serverfs-agent-bridge` in the directory of the
//! `serverfs` binary under test (a workspace build puts it there). When it
//! is missing it is built once with the cargo that runs the tests, in the
//! same profile; a failed build fails the test, never skips it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{Server, binary};

/// How long the Bridge gets to start serving.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the Bridge gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The log line the Bridge writes once its socket, lock artifacts, store
/// and start-up reconciliation are ready (`src/cli/serve.rs`).
const SERVING: &str = "agent bridge serving";

/// The Bridge binary, built on first use when the workspace build did not
/// leave one next to `serverfs`.
pub fn bridge_binary() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(locate_or_build)
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}

fn locate_or_build() -> Result<PathBuf, String> {
    let serverfs = Path::new(binary());
    let dir = serverfs
        .parent()
        .ok_or_else(|| format!("{} has no parent directory", serverfs.display()))?;
    let bridge = dir.join("serverfs-agent-bridge");
    if bridge.is_file() {
        return Ok(bridge);
    }
    // `cargo test -p serverfs` alone does not build the Bridge's binary.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = Command::new(&cargo);
    command
        .current_dir(&workspace)
        .args(["build", "-p", "serverfs-agent-bridge", "--bin"])
        .arg("serverfs-agent-bridge");
    // target/<profile-dir>/serverfs: "debug" is the dev profile, any other
    // directory is named after its profile.
    match dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => {}
        Some(profile) => {
            command.args(["--profile", profile]);
        }
    }
    if let Some(target_dir) = dir.parent() {
        command.arg("--target-dir").arg(target_dir);
    }
    eprintln!(
        "agent tests: {} is missing; building it with {command:?}",
        bridge.display()
    );
    let status = command
        .status()
        .map_err(|e| format!("could not run {cargo:?} to build serverfs-agent-bridge: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building serverfs-agent-bridge failed ({status}); the agent tests need it: \
             run `cargo build -p serverfs-agent-bridge` and look at its errors"
        ));
    }
    if bridge.is_file() {
        Ok(bridge)
    } else {
        Err(format!(
            "cargo built serverfs-agent-bridge but {} does not exist (a --target build?); \
             build the workspace with `cargo build --workspace` first",
            bridge.display()
        ))
    }
}

/// Builds an [`AgentEnv`]: the `demo` workdir (`<tmp>/work`, writable,
/// `workspace-write` with the `fake` runtime) plus whatever is added.
pub struct AgentEnvBuilder {
    enabled: bool,
    agent: Vec<String>,
    demo: Vec<String>,
    workdirs: Vec<(String, String)>,
}

impl AgentEnvBuilder {
    /// `[agent] enabled = false`, and `demo` without an agent mode.
    pub fn bridge_disabled(mut self) -> Self {
        self.enabled = false;
        self
    }

    /// Adds a raw TOML line to the `[agent]` table.
    pub fn agent(mut self, line: &str) -> Self {
        self.agent.push(line.to_owned());
        self
    }

    /// Replaces `demo`'s agent lines (`agent_mode`, `agent_runtimes`) and
    /// adds other raw TOML lines to it.
    pub fn demo(mut self, lines: &str) -> Self {
        self.demo = vec![lines.to_owned()];
        self
    }

    /// Adds a writable workdir `alias` at `<tmp>/<alias>` with raw TOML
    /// lines (its agent policy).
    pub fn workdir(mut self, alias: &str, lines: &str) -> Self {
        self.workdirs.push((alias.to_owned(), lines.to_owned()));
        self
    }

    /// Writes the directory and the configuration.
    pub fn build(self) -> AgentEnv {
        // A short prefix: the socket path must fit sun_path (108 bytes).
        let dir = tempfile::Builder::new()
            .prefix("sfag")
            .tempdir()
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let quoted = |path: PathBuf| format!("{:?}", path.to_str().expect("UTF-8 temp path"));
        let mut text = format!(
            "[agent]\nenabled = {}\nsocket = {}\nlock_dir = {}\nstate_dir = {}\n",
            self.enabled,
            quoted(root.join("run/bridge.sock")),
            quoted(root.join("run/locks")),
            quoted(root.join("state")),
        );
        for line in &self.agent {
            text.push_str(line);
            text.push('\n');
        }
        let demo = if self.enabled {
            self.demo.join("\n")
        } else {
            String::new()
        };
        let workdirs = std::iter::once(("demo".to_owned(), "work".to_owned(), demo)).chain(
            self.workdirs
                .into_iter()
                .map(|(alias, lines)| (alias.clone(), alias, lines)),
        );
        for (alias, path, lines) in workdirs {
            std::fs::create_dir_all(root.join(&path)).expect("workdir");
            text.push_str(&format!(
                "\n[[workdirs]]\nalias = \"{alias}\"\npath = {}\nread_only = false\n{lines}\n",
                quoted(root.join(&path)),
            ));
        }
        let config = root.join("serverfs.toml");
        std::fs::write(&config, text).expect("write serverfs.toml");
        AgentEnv { dir, config }
    }
}

/// One temporary directory and the configuration both processes read.
pub struct AgentEnv {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl AgentEnv {
    /// The default layout (see [`AgentEnvBuilder`]); spooled results above
    /// 1 KiB so that a test can produce one cheaply.
    pub fn builder() -> AgentEnvBuilder {
        AgentEnvBuilder {
            enabled: true,
            agent: vec!["result_spool_threshold_bytes = 1024".to_owned()],
            demo: vec!["agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]".to_owned()],
            workdirs: Vec::new(),
        }
    }

    /// The temporary directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The `demo` workdir's root.
    pub fn work(&self) -> PathBuf {
        self.root().join("work")
    }

    /// The writer-lease lock directory.
    pub fn lock_dir(&self) -> PathBuf {
        self.root().join("run/locks")
    }

    /// `serverfs serve --config <file>` over stdio, with an MCP client.
    pub async fn start_server(&self) -> Server {
        Server::start(&["--config", self.config.to_str().expect("UTF-8")], &[]).await
    }

    /// Starts `serverfs-agent-bridge serve --config <file>` and waits until
    /// it serves.
    pub fn start_bridge(&self) -> Bridge {
        let mut child = Command::new(bridge_binary())
            .args(["serve", "--config"])
            .arg(&self.config)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serverfs-agent-bridge");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        let collected = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if std::env::var_os("SERVERFS_TEST_SHOW_STDERR").is_some() {
                    eprintln!("[bridge] {line}");
                }
                if line.contains(SERVING) {
                    let _ = ready_tx.send(());
                }
                collected.lock().unwrap().push(line);
            }
        });
        let mut bridge = Bridge {
            child: Some(child),
            stderr: lines,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if ready_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                return bridge;
            }
            if let Some(status) = bridge.try_exit() {
                panic!(
                    "the Bridge exited before serving ({status}); stderr:\n{}",
                    bridge.stderr().join("\n")
                );
            }
            assert!(
                Instant::now() < deadline,
                "the Bridge did not start serving within {START_TIMEOUT:?}; stderr:\n{}",
                bridge.stderr().join("\n")
            );
        }
    }

    /// `serverfs-agent-bridge inspect --config <file>`: its stdout.
    pub fn inspect(&self) -> String {
        let output = Command::new(bridge_binary())
            .args(["inspect", "--config"])
            .arg(&self.config)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .output()
            .expect("run serverfs-agent-bridge inspect");
        assert!(
            output.status.success(),
            "inspect failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8 inspect output")
    }
}

/// A running Bridge; SIGTERMed on drop, SIGKILLed if it lingers.
pub struct Bridge {
    child: Option<Child>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Bridge {
    /// Its stderr lines so far.
    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|child| child.try_wait().expect("try_wait"))
    }

    fn signal(&self, signal: rustix::process::Signal) {
        if let Some(child) = &self.child {
            let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("pid"))
                .expect("nonzero pid");
            let _ = rustix::process::kill_process(pid, signal);
        }
    }

    /// SIGKILL, as a crash: nothing runs its shutdown path. Reaps it.
    pub fn kill(mut self) {
        self.signal(rustix::process::Signal::KILL);
        if let Some(mut child) = self.child.take() {
            let status = child.wait().expect("reap the Bridge");
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&status),
                Some(9),
                "the Bridge was not killed: {status}"
            );
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if self.try_exit().is_some() {
            return;
        }
        self.signal(rustix::process::Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if self.try_exit().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
