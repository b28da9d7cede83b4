//! The real Agent Bridge beside the real `serverfs`: one directory holding
//! both processes' shared `serverfs.toml`, the Bridge's socket, lock and
//! state directories, and the workdirs — the testkit's Bridge harness
//! ([`serverfs_testkit::bridge`]) with the `serverfs` side added.
//!
//! ```ignore
//! let env = AgentEnv::builder().workdir("off", "agent_mode = \"disabled\"").build();
//! let mut bridge = env.start_bridge();      // waits until it serves
//! let server = env.start_server().await;    // serverfs serve --config …
//! bridge.kill();                            // SIGKILL, as a crash
//! let bridge = env.start_bridge();          // a restart on the same state
//! ```

use std::path::{Path, PathBuf};

use serverfs_testkit::bridge::{Setup, Workdir};

pub use serverfs_testkit::bridge::Daemon as Bridge;

use super::Server;
use super::human::Human;

/// Builds an [`AgentEnv`]: the `demo` workdir (`<tmp>/work`, writable,
/// `workspace-write` with the `fake` runtime) plus whatever is added.
pub struct AgentEnvBuilder {
    enabled: bool,
    bridge_env: Vec<(String, String)>,
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

    /// Adds a variable to the Bridge's environment (which the Bridge keeps
    /// from its providers unless a passthrough list names it).
    pub fn bridge_env(mut self, name: &str, value: &str) -> Self {
        self.bridge_env.push((name.to_owned(), value.to_owned()));
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
        let demo = if self.enabled {
            self.demo.join("\n")
        } else {
            String::new()
        };
        let mut setup = Setup::new()
            .without_workdirs()
            .agent("enabled", if self.enabled { "true" } else { "false" })
            .workdir(Workdir::with_lines("demo", "work", &demo));
        for line in &self.agent {
            setup = with_agent_line(setup, line);
        }
        for (alias, lines) in &self.workdirs {
            setup = setup.workdir(Workdir::with_lines(alias, alias, lines));
        }
        for (name, value) in &self.bridge_env {
            setup = setup.env(name, value);
        }
        setup.write_config();
        AgentEnv { setup }
    }
}

/// `setup` with the raw `key = value` line in its `[agent]` table.
fn with_agent_line(setup: Setup, line: &str) -> Setup {
    let (key, value) = line
        .split_once('=')
        .unwrap_or_else(|| panic!("not a `key = value` line: {line}"));
    setup.agent(key.trim(), value.trim())
}

/// One temporary directory and the configuration both processes read.
pub struct AgentEnv {
    setup: Setup,
}

impl AgentEnv {
    /// The default layout (see [`AgentEnvBuilder`]); spooled results above
    /// 1 KiB so that a test can produce one cheaply.
    pub fn builder() -> AgentEnvBuilder {
        AgentEnvBuilder {
            enabled: true,
            bridge_env: Vec::new(),
            agent: vec!["result_spool_threshold_bytes = 1024".to_owned()],
            demo: vec!["agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]".to_owned()],
            workdirs: Vec::new(),
        }
    }

    /// Adds a raw `key = value` line to the `[agent]` table, for settings
    /// that name something inside [`root`](Self::root).
    pub fn with_agent_line(self, line: &str) -> AgentEnv {
        let setup = with_agent_line(self.setup, line);
        setup.write_config();
        AgentEnv { setup }
    }

    /// The temporary directory.
    pub fn root(&self) -> &Path {
        self.setup.root()
    }

    /// The `demo` workdir's root.
    pub fn work(&self) -> PathBuf {
        self.setup.work_dir()
    }

    /// The writer-lease lock directory.
    pub fn lock_dir(&self) -> PathBuf {
        self.setup.lock_dir()
    }

    /// The configuration file both processes read (written anew).
    pub fn config(&self) -> PathBuf {
        self.setup.write_config()
    }

    /// `serverfs serve --config <file>` over stdio, with an MCP client.
    pub async fn start_server(&self) -> Server {
        self.start_server_as(Human::default()).await
    }

    /// [`AgentEnv::start_server`] with a client declaring what `human`
    /// says (the Tasks extension, form elicitation).
    pub async fn start_server_as(&self, human: Human) -> Server {
        let config = self.setup.write_config();
        Server::start_as(human, &["--config", config.to_str().expect("UTF-8")], &[]).await
    }

    /// Starts `serverfs-agent-bridge serve --config <file>` and waits until
    /// it serves.
    pub fn start_bridge(&self) -> Bridge {
        self.setup.start_serving()
    }

    /// `serverfs-agent-bridge inspect --config <file>`: its stdout.
    pub fn inspect(&self) -> String {
        let (status, stdout, stderr) = self.setup.run(&["inspect"]);
        assert!(status.success(), "inspect failed ({status}): {stderr}");
        stdout
    }
}
