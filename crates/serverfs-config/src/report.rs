//! The operator's view of the effective policy (`serverfs check-config`).

use std::fmt::Write as _;

use crate::acp::AcpProfileSettings;
use crate::agent::AgentRuntime;
use crate::cli_runtime::{self, CliRuntimeSettings, StreamJsonCli};
use crate::codex::{CodexSettings, CodexTransport};
use crate::http::HttpSettings;
use crate::limits;
use crate::model::{AgentSettings, Config, WorkdirConfig};
use crate::qoder_auth::{QODER_TOKEN_VARIABLE, QoderAuth};

impl Config {
    /// A human-readable, multi-line report of the effective configuration:
    /// server settings, the Agent Bridge (including the settings only the
    /// Bridge daemon reads, and those of each native runtime, `codex`,
    /// `claude` or `qoder`, and each ACP profile that some workdir allows),
    /// the HTTP transport,
    /// then every
    /// workdir with its root, access, hidden and deny policy, binary
    /// transfer, limits and agent policy.
    ///
    /// Contains host paths: it is meant for the operator's terminal, never
    /// for an MCP client. Of the variables passed through to a provider it
    /// shows the names, which are all the configuration holds.
    pub fn policy_report(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; the results are ignored.
        let s = &self.server;
        let _ = writeln!(out, "server:");
        let _ = writeln!(out, "  log level: {}", s.log_level);
        let _ = writeln!(out, "  tool result text: {}", s.text_content);
        let _ = writeln!(
            out,
            "  list_directory limit: default {}, max {}",
            s.default_list_limit, s.max_list_entries
        );
        let _ = writeln!(
            out,
            "  find/search results: default {}, max {}",
            s.default_search_results, s.max_search_results
        );
        let _ = writeln!(out, "  max walk entries: {}", s.max_walk_entries);
        let _ = writeln!(out, "  search timeout: {} ms", s.search_timeout_ms);
        let _ = writeln!(out, "  search max file bytes: {}", s.search_max_file_bytes);
        let _ = writeln!(out, "  max edits per call: {}", s.max_edits_per_call);

        let a = &self.agent;
        let _ = writeln!(
            out,
            "agent bridge: {}",
            if a.bridge_enabled {
                "enabled"
            } else {
                "disabled"
            }
        );
        let _ = writeln!(out, "  socket: {}", a.bridge_socket.display());
        let _ = writeln!(out, "  lock dir: {}", a.lock_dir.display());
        let _ = writeln!(out, "  timeout: {} ms", a.bridge_timeout_ms);
        let _ = writeln!(
            out,
            "  agent tools: {}",
            if self.agent_tools_enabled() {
                "offered"
            } else {
                "not offered"
            }
        );
        bridge_report(&mut out, a);
        // A runtime's settings matter only where the runtime can run; shown
        // elsewhere they would suggest it is in use when it is not.
        let allowed = |runtime: &AgentRuntime| {
            self.workdirs
                .iter()
                .any(|w| w.agent_runtimes.contains(runtime))
        };
        if allowed(&AgentRuntime::Codex) {
            codex_report(&mut out, &a.codex);
        }
        if allowed(&AgentRuntime::Claude) {
            cli_runtime_report(&mut out, &cli_runtime::CLAUDE, &a.claude);
        }
        if allowed(&AgentRuntime::Qoder) {
            cli_runtime_report(&mut out, &cli_runtime::QODER, &a.qoder.cli);
            qoder_auth_line(&mut out, a.qoder.auth);
        }
        for profile in &a.acp_profiles {
            if allowed(&AgentRuntime::Acp(profile.runtime.clone())) {
                acp_profile_report(&mut out, profile);
            } else {
                let _ = writeln!(
                    out,
                    "    {} runtime: defined, not allowed by any workdir",
                    profile.runtime.as_str()
                );
            }
        }

        http_report(&mut out, &self.http);

        let _ = writeln!(out, "workdirs: {}", self.workdirs.len());
        for workdir in &self.workdirs {
            workdir_report(&mut out, workdir);
        }
        out
    }
}

/// The settings only `serverfs-agent-bridge` reads, so an operator can
/// check the daemon's effective values with the same command. None of them
/// is a secret (the proxy endpoint is not configuration).
fn bridge_report(out: &mut String, a: &AgentSettings) {
    let _ = writeln!(out, "  bridge daemon (read by serverfs-agent-bridge only):");
    let _ = writeln!(out, "    state dir: {}", a.state_dir.display());
    // Retention is configured in hours; show seconds only if a value built
    // in code is not a whole number of hours.
    let retention = if a.retention_seconds.is_multiple_of(limits::SECONDS_PER_HOUR) {
        format!(
            "retention_hours {}",
            a.retention_seconds / limits::SECONDS_PER_HOUR
        )
    } else {
        format!("retention_seconds {}", a.retention_seconds)
    };
    let _ = writeln!(
        out,
        "    limits: max_active_tasks {}, task_timeout_seconds {}, \
         interaction_timeout_seconds {}, {retention}, result_spool_threshold_bytes {}",
        a.max_active_tasks,
        a.task_timeout_seconds,
        a.interaction_timeout_seconds,
        a.result_spool_threshold_bytes
    );
    match a.peer_uid {
        Some(uid) => {
            let _ = writeln!(out, "    peer uid: {uid}");
        }
        None => {
            let _ = writeln!(out, "    peer uid: the Bridge's own");
        }
    }
    match a.peer_gid {
        Some(gid) => {
            let _ = writeln!(out, "    peer gid: {gid} (socket shared with this group)");
        }
        None => {
            let _ = writeln!(out, "    peer gid: not checked");
        }
    }
    if a.proxy_runtimes.is_empty() {
        let _ = writeln!(out, "    proxy runtimes (0): none");
    } else {
        let names: Vec<&str> = a.proxy_runtimes.iter().map(AgentRuntime::as_str).collect();
        let _ = writeln!(
            out,
            "    proxy runtimes ({}): {}",
            names.len(),
            names.join(", ")
        );
    }
}

/// The Codex runtime's settings, under the Bridge daemon's (only the Bridge
/// reads them). Codex's own defaults are named rather than guessed: the
/// Bridge resolves them from its own environment, not this process's.
fn codex_report(out: &mut String, c: &CodexSettings) {
    let _ = writeln!(out, "    codex runtime:");
    bin_line(out, &c.bin);
    let home = match &c.home {
        Some(home) => {
            let _ = writeln!(out, "      home: {}", home.display());
            home.display().to_string()
        }
        None => {
            let _ = writeln!(
                out,
                "      home: Codex's default ($CODEX_HOME, else ~/.codex)"
            );
            "<codex home>".to_owned()
        }
    };
    match c.transport {
        CodexTransport::Stdio => {
            let _ = writeln!(
                out,
                "      transport: stdio (a codex app-server child per task)"
            );
        }
        CodexTransport::Daemon => {
            let _ = writeln!(
                out,
                "      transport: daemon via {home}/app-server-control/app-server-control.sock, \
                 autostart {}",
                if c.autostart { "on" } else { "off" }
            );
        }
    }
    let _ = writeln!(out, "      request timeout: {} ms", c.request_timeout_ms);
    passthrough_line(out, &c.env_passthrough);
}

/// A stream-json runtime's settings (`claude`, `qoder`), beside Codex's.
fn cli_runtime_report(out: &mut String, cli: &StreamJsonCli, c: &CliRuntimeSettings) {
    let _ = writeln!(out, "    {} runtime:", cli.name);
    bin_line(out, &c.bin);
    let _ = writeln!(out, "      request timeout: {} ms", c.request_timeout_ms);
    passthrough_line(out, &c.env_passthrough);
}

/// An ACP profile's launch policy. Fixed variables are shown by name only,
/// as passed-through ones are: the values are the operator's to read in
/// the file, not to copy into terminals and logs.
fn acp_profile_report(out: &mut String, p: &AcpProfileSettings) {
    let _ = writeln!(out, "    {} runtime (ACP):", p.runtime.as_str());
    let _ = writeln!(out, "      command: {}", p.command.display());
    if p.args.is_empty() {
        let _ = writeln!(out, "      args (0): none");
    } else {
        let args: Vec<String> = p.args.iter().map(|arg| format!("{arg:?}")).collect();
        let _ = writeln!(out, "      args ({}): {}", args.len(), args.join(" "));
    }
    passthrough_line(out, &p.env_passthrough);
    let names: Vec<&str> = p.env.iter().map(|(name, _)| name.as_str()).collect();
    if names.is_empty() {
        let _ = writeln!(out, "      fixed env (0): none");
    } else {
        let _ = writeln!(
            out,
            "      fixed env ({}): {}",
            names.len(),
            names.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "      timeouts: request {} ms, probe {} ms, shutdown {} ms",
        p.request_timeout_ms, p.probe_timeout_ms, p.shutdown_timeout_ms
    );
    let _ = writeln!(
        out,
        "      allow_always: {}",
        if p.session_scoped_allow_always {
            "session-scoped, offered as approve_session"
        } else {
            "not offered (may persist a rule)"
        }
    );
}

fn bin_line(out: &mut String, bin: &str) {
    if bin.starts_with('/') {
        let _ = writeln!(out, "      bin: {bin}");
    } else {
        let _ = writeln!(out, "      bin: {bin} (looked up on PATH)");
    }
}

/// The names of the variables handed to a provider. Names only: the values
/// are the Bridge's, read from its own environment (ARCHITECTURE.md
/// invariant 9).
/// How `qodercli` authenticates: the choice and the variable's name,
/// never a value.
fn qoder_auth_line(out: &mut String, auth: QoderAuth) {
    let how = match auth {
        QoderAuth::Login => "the local `qodercli login`".to_owned(),
        QoderAuth::PersonalAccessToken => format!(
            "a personal access token from {QODER_TOKEN_VARIABLE}, written to a private \
             payload file per run"
        ),
    };
    let _ = writeln!(out, "      auth: {auth} ({how})");
}

fn passthrough_line(out: &mut String, names: &[String]) {
    if names.is_empty() {
        let _ = writeln!(out, "      env passthrough (0): none");
    } else {
        let _ = writeln!(
            out,
            "      env passthrough ({}): {}",
            names.len(),
            names.join(", ")
        );
    }
}

/// The HTTP transport. Only the token file's path is shown: tokens live in
/// that file, never in the configuration (ARCHITECTURE.md invariant 9).
fn http_report(out: &mut String, h: &HttpSettings) {
    let _ = writeln!(out, "http:");
    match h.bind {
        Some(bind) => {
            let _ = writeln!(out, "  bind: {bind}");
        }
        None => {
            let _ = writeln!(
                out,
                "  bind: stdio only (serve --http ADDR can still listen)"
            );
        }
    }
    let _ = writeln!(out, "  auth: {}", h.auth);
    let _ = writeln!(
        out,
        "  trust network: {}",
        if h.trust_network { "on" } else { "off" }
    );
    if h.allowed_hosts.is_empty() {
        let _ = writeln!(out, "  extra allowed hosts (0): loopback names only");
    } else {
        let _ = writeln!(
            out,
            "  extra allowed hosts ({}): {}",
            h.allowed_hosts.len(),
            h.allowed_hosts.join(", ")
        );
    }
    if h.allowed_origins.is_empty() {
        let _ = writeln!(
            out,
            "  allowed origins (0): any request with an Origin header is rejected"
        );
    } else {
        let _ = writeln!(
            out,
            "  allowed origins ({}): {}",
            h.allowed_origins.len(),
            h.allowed_origins.join(", ")
        );
    }
    let _ = writeln!(out, "  token file: {}", h.token_file.display());
    if h.auth == crate::http::HttpAuth::OAuth {
        oauth_report(out, &h.oauth);
    }
    let _ = writeln!(
        out,
        "  limits: request_timeout_ms {}, max_concurrent_requests {}, shutdown_grace_ms {}",
        h.request_timeout_ms, h.max_concurrent_requests, h.shutdown_grace_ms
    );
    let c = &h.connections;
    let _ = writeln!(
        out,
        "  connections: max_connections {}, header_timeout_ms {}, body_timeout_ms {}",
        c.max_connections, c.header_timeout_ms, c.body_timeout_ms
    );
    let _ = writeln!(
        out,
        "  sessions: max_sessions {}, max_sessions_per_token {}, session_idle_timeout_ms {}",
        c.max_sessions, c.max_sessions_per_token, c.session_idle_timeout_ms
    );
}

/// The OAuth lines: URLs, lifetimes and names only (no secret is ever
/// part of the configuration).
fn oauth_report(out: &mut String, o: &crate::oauth::OAuthSettings) {
    let on_off = |flag: bool| if flag { "on" } else { "off" };
    let _ = writeln!(out, "  oauth:");
    match &o.public_url {
        Some(url) => {
            let _ = writeln!(out, "    public url (canonical resource): {url}");
        }
        None => {
            let _ = writeln!(
                out,
                "    public url (canonical resource): http://<listening address>/mcp (loopback only)"
            );
        }
    }
    let _ = writeln!(out, "    state file: {}", o.state_file.display());
    let _ = writeln!(
        out,
        "    token lifetimes: access_token_ttl_s {}, refresh_token_ttl_s {}",
        o.access_token_ttl_s, o.refresh_token_ttl_s
    );
    let _ = writeln!(
        out,
        "    allowed redirect URIs ({}) besides loopback ones: {}",
        o.allowed_redirect_uris.len(),
        if o.allowed_redirect_uris.is_empty() {
            "none".to_owned()
        } else {
            o.allowed_redirect_uris.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "    dynamic registration: {}, client metadata documents: {}, bearer tokens: {}",
        on_off(o.dynamic_registration),
        on_off(o.client_metadata_documents),
        on_off(o.accept_bearer_tokens)
    );
    for client in &o.clients {
        let _ = writeln!(
            out,
            "    client {} ({}): {}",
            client.client_id,
            client.name,
            client.redirect_uris.join(", ")
        );
    }
    if let Some(external) = &o.external {
        let keys = match &external.jwks {
            crate::oauth::JwksSource::File(path) => path.display().to_string(),
            crate::oauth::JwksSource::Url(url) => url.to_string(),
        };
        let _ = writeln!(
            out,
            "    external issuer: {} (keys: {keys}; audience: {})",
            external.issuer,
            external
                .audience
                .as_deref()
                .unwrap_or("the canonical resource")
        );
    }
}

fn workdir_report(out: &mut String, w: &WorkdirConfig) {
    let on_off = |flag: bool| if flag { "on" } else { "off" };
    match w.legacy_slot {
        Some(slot) => {
            let _ = writeln!(out, "  {} (slot {slot:02})", w.alias);
        }
        None => {
            let _ = writeln!(out, "  {}", w.alias);
        }
    }
    let _ = writeln!(out, "    root: {}", w.root.display());
    if let Some(description) = &w.description {
        let _ = writeln!(out, "    description: {description}");
    }
    let _ = writeln!(
        out,
        "    access: {}",
        if w.read_only {
            "read-only"
        } else {
            "read-write"
        }
    );
    let _ = writeln!(
        out,
        "    hidden paths: {}",
        if w.allow_hidden { "allowed" } else { "denied" }
    );
    let _ = writeln!(
        out,
        "    default deny (credential rules): {}",
        on_off(w.default_deny)
    );
    if w.deny.is_empty() {
        let _ = writeln!(out, "    extra deny globs (0)");
    } else {
        let _ = writeln!(
            out,
            "    extra deny globs ({}): {}",
            w.deny.len(),
            w.deny.join(", ")
        );
    }
    let _ = writeln!(out, "    binary transfer: {}", on_off(w.binary_transfer));
    let _ = writeln!(
        out,
        "    hard-linked files (more than one link): {}",
        if w.read_hardlinked_files {
            "read"
        } else {
            "refused"
        }
    );
    let _ = writeln!(
        out,
        "    limits: max_read_lines {}, max_read_bytes {}, max_write_bytes {}, \
         max_binary_transfer_bytes {}",
        w.max_read_lines, w.max_read_bytes, w.max_write_bytes, w.max_binary_transfer_bytes
    );
    if w.agent_runtimes.is_empty() {
        let _ = writeln!(out, "    agent: {}", w.agent_mode);
    } else {
        let names: Vec<&str> = w.agent_runtimes.iter().map(|r| r.as_str()).collect();
        let _ = writeln!(
            out,
            "    agent: {} (runtimes: {})",
            w.agent_mode,
            names.join(", ")
        );
        let _ = writeln!(
            out,
            "    approvals: {} (paths outside the workdir: {})",
            w.approvals, w.approval_paths
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pretty_assertions::assert_eq;

    use crate::test_support::Fixture;
    use crate::{
        AgentMode, AgentRuntime, AgentSettings, ApprovalPaths, ApprovalPolicy, Config,
        HttpSettings, ServerSettings, WorkdirAlias, WorkdirConfig,
    };

    #[test]
    fn report_lists_every_setting_of_every_workdir() {
        let mut docs = WorkdirConfig::with_defaults(
            WorkdirAlias::new("docs").unwrap(),
            PathBuf::from("/srv/docs"),
        );
        docs.description = Some("Team docs".to_owned());
        docs.legacy_slot = Some(3);
        docs.deny = vec!["*.log".to_owned(), "build/**".to_owned()];
        let mut code = WorkdirConfig::with_defaults(
            WorkdirAlias::new("code").unwrap(),
            PathBuf::from("/srv/code"),
        );
        code.read_only = false;
        code.allow_hidden = true;
        code.default_deny = false;
        code.binary_transfer = true;
        code.read_hardlinked_files = true;
        code.agent_mode = AgentMode::WorkspaceWrite;
        code.agent_runtimes = vec![AgentRuntime::Codex, AgentRuntime::Fake];
        code.approvals = ApprovalPolicy::HumanPreferred;
        code.approval_paths = ApprovalPaths::Redacted;
        let config = Config {
            server: ServerSettings::default(),
            agent: AgentSettings {
                bridge_enabled: true,
                bridge_socket: PathBuf::from("/run/b.sock"),
                bridge_timeout_ms: 30_000,
                lock_dir: PathBuf::from("/run/locks"),
                state_dir: PathBuf::from("/home/u/.local/state/serverfs-agent-bridge"),
                peer_uid: Some(1000),
                proxy_runtimes: vec![AgentRuntime::Codex],
                ..AgentSettings::default()
            },
            http: HttpSettings::with_defaults(PathBuf::from(
                "/home/u/.config/serverfs/tokens.json",
            )),
            workdirs: vec![docs, code],
        };
        assert_eq!(
            config.policy_report(),
            "\
server:
  log level: info
  tool result text: full
  list_directory limit: default 100, max 500
  find/search results: default 50, max 100
  max walk entries: 200000
  search timeout: 15000 ms
  search max file bytes: 52428800
  max edits per call: 50
agent bridge: enabled
  socket: /run/b.sock
  lock dir: /run/locks
  timeout: 30000 ms
  agent tools: offered
  bridge daemon (read by serverfs-agent-bridge only):
    state dir: /home/u/.local/state/serverfs-agent-bridge
    limits: max_active_tasks 4, task_timeout_seconds 7200, interaction_timeout_seconds 1800, retention_hours 168, result_spool_threshold_bytes 262144
    peer uid: 1000
    peer gid: not checked
    proxy runtimes (1): codex
    codex runtime:
      bin: codex (looked up on PATH)
      home: Codex's default ($CODEX_HOME, else ~/.codex)
      transport: stdio (a codex app-server child per task)
      request timeout: 10000 ms
      env passthrough (0): none
http:
  bind: stdio only (serve --http ADDR can still listen)
  auth: bearer
  trust network: off
  extra allowed hosts (0): loopback names only
  allowed origins (0): any request with an Origin header is rejected
  token file: /home/u/.config/serverfs/tokens.json
  limits: request_timeout_ms 120000, max_concurrent_requests 64, shutdown_grace_ms 10000
  connections: max_connections 512, header_timeout_ms 30000, body_timeout_ms 30000
  sessions: max_sessions 1024, max_sessions_per_token 128, session_idle_timeout_ms 120000
workdirs: 2
  docs (slot 03)
    root: /srv/docs
    description: Team docs
    access: read-only
    hidden paths: denied
    default deny (credential rules): on
    extra deny globs (2): *.log, build/**
    binary transfer: off
    hard-linked files (more than one link): refused
    limits: max_read_lines 500, max_read_bytes 524288, max_write_bytes 1048576, max_binary_transfer_bytes 8388608
    agent: disabled
  code
    root: /srv/code
    access: read-write
    hidden paths: allowed
    default deny (credential rules): off
    extra deny globs (0)
    binary transfer: on
    hard-linked files (more than one link): read
    limits: max_read_lines 500, max_read_bytes 524288, max_write_bytes 1048576, max_binary_transfer_bytes 8388608
    agent: workspace-write (runtimes: codex, fake)
    approvals: human-preferred (paths outside the workdir: redacted)
"
        );
    }

    #[test]
    fn report_mentions_each_loaded_workdir() {
        let fx = Fixture::new();
        fx.mkdir("a");
        fx.mkdir("b");
        let config = fx
            .toml(
                "[[workdirs]]\nalias = \"alpha\"\npath = \"a\"\n\
                 [[workdirs]]\nalias = \"beta\"\npath = \"b\"\nread_only = false\n",
            )
            .unwrap();
        let report = config.policy_report();
        for workdir in &config.workdirs {
            assert!(
                report.contains(&format!("\n  {}\n", workdir.alias)),
                "{report}"
            );
            assert!(report.contains(&format!("root: {}", workdir.root.display())));
        }
        assert!(report.contains("workdirs: 2\n"));
        assert!(report.contains("agent bridge: disabled\n"));
        // No workdir allows codex: its settings would only mislead.
        assert!(!report.contains("codex"), "{report}");
    }

    #[test]
    fn report_shows_the_codex_daemon_only_where_codex_may_run() {
        let fx = Fixture::new();
        fx.mkdir("a");
        let text = |runtimes: &str| {
            format!(
                "[agent]\nenabled = true\nsocket = \"/run/b.sock\"\nlock_dir = \"/run/l\"\n\
                 codex_bin = \"/opt/codex/bin/codex\"\ncodex_home = \"/srv/codex\"\n\
                 codex_transport = \"daemon\"\ncodex_autostart = true\n\
                 codex_request_timeout_seconds = 2.5\n\
                 [[workdirs]]\nalias = \"a\"\npath = \"a\"\nread_only = false\n\
                 agent_mode = \"workspace-write\"\nagent_runtimes = {runtimes}\n"
            )
        };
        let report = fx
            .toml(&text("[\"fake\", \"codex\"]"))
            .unwrap()
            .policy_report();
        let expected = "\
    proxy runtimes (0): none
    codex runtime:
      bin: /opt/codex/bin/codex
      home: /srv/codex
      transport: daemon via /srv/codex/app-server-control/app-server-control.sock, autostart on
      request timeout: 2500 ms
      env passthrough (0): none
http:
";
        assert!(report.contains(expected), "{report}");
        let without = fx.toml(&text("[\"fake\"]")).unwrap().policy_report();
        assert!(!without.contains("codex runtime:"), "{without}");

        let mut config = fx.toml(&text("[\"codex\"]")).unwrap();
        config.agent.codex.home = None;
        config.agent.codex.autostart = false;
        assert!(config.policy_report().contains(
            "      transport: daemon via <codex home>/app-server-control/app-server-control.sock, \
             autostart off\n"
        ));
    }

    #[test]
    fn report_shows_claude_and_qoder_only_where_they_may_run() {
        let fx = Fixture::new();
        fx.mkdir("a");
        let text = |runtimes: &str| {
            format!(
                "[agent]\nenabled = true\nsocket = \"/run/b.sock\"\nlock_dir = \"/run/l\"\n\
                 codex_env_passthrough = [\"OPENAI_API_KEY\"]\n\
                 claude_bin = \"/opt/claude/bin/claude\"\n\
                 claude_request_timeout_seconds = 90\n\
                 claude_env_passthrough = [\"ANTHROPIC_API_KEY\", \"ANTHROPIC_BASE_URL\"]\n\
                 qoder_request_timeout_seconds = 0.25\n\
                 [[workdirs]]\nalias = \"a\"\npath = \"a\"\nread_only = false\n\
                 agent_mode = \"workspace-write\"\nagent_runtimes = {runtimes}\n"
            )
        };
        let all = fx
            .toml(&text("[\"qoder\", \"claude\", \"codex\"]"))
            .unwrap()
            .policy_report();
        let expected = "\
    proxy runtimes (0): none
    codex runtime:
      bin: codex (looked up on PATH)
      home: Codex's default ($CODEX_HOME, else ~/.codex)
      transport: stdio (a codex app-server child per task)
      request timeout: 10000 ms
      env passthrough (1): OPENAI_API_KEY
    claude runtime:
      bin: /opt/claude/bin/claude
      request timeout: 90000 ms
      env passthrough (2): ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
    qoder runtime:
      bin: qodercli (looked up on PATH)
      request timeout: 250 ms
      env passthrough (0): none
      auth: login (the local `qodercli login`)
http:
";
        assert!(all.contains(expected), "{all}");

        let claude = fx.toml(&text("[\"claude\"]")).unwrap().policy_report();
        assert!(claude.contains("    claude runtime:\n"), "{claude}");
        assert!(!claude.contains("qoder"), "{claude}");
        assert!(!claude.contains("codex runtime:"), "{claude}");
        let qoder = fx.toml(&text("[\"qoder\"]")).unwrap().policy_report();
        assert!(qoder.contains("    qoder runtime:\n"), "{qoder}");
        assert!(!qoder.contains("claude"), "{qoder}");
        let neither = fx.toml(&text("[\"fake\"]")).unwrap().policy_report();
        for absent in ["claude", "qoder", "env passthrough", "ANTHROPIC"] {
            assert!(!neither.contains(absent), "{absent:?} in\n{neither}");
        }
    }

    #[test]
    fn report_never_shows_a_passed_through_value() {
        // The names come from the configuration; the values live only in
        // the Bridge's environment, which even here is never read.
        let fx = Fixture::new();
        fx.slot(1);
        let config = fx
            .env_config(&[
                ("WORKDIR_01_ALIAS", "one"),
                ("WORKDIR_01_READ_ONLY", "false"),
                ("WORKDIR_01_AGENT_MODE", "workspace-write"),
                ("WORKDIR_01_AGENT_RUNTIMES", "claude,qoder,codex"),
                ("SERVERFS_AGENT_BRIDGE_ENABLED", "true"),
                ("SERVERFS_CLAUDE_ENV_PASSTHROUGH", "ANTHROPIC_API_KEY"),
                (
                    "SERVERFS_QODER_ENV_PASSTHROUGH",
                    "QODER_PERSONAL_ACCESS_TOKEN",
                ),
                ("SERVERFS_QODER_AUTH", "personal-access-token"),
                ("SERVERFS_CODEX_ENV_PASSTHROUGH", "OPENAI_API_KEY"),
                ("ANTHROPIC_API_KEY", "sk-ant-secret"),
                ("QODER_PERSONAL_ACCESS_TOKEN", "pat-secret"),
                ("OPENAI_API_KEY", "sk-openai-secret"),
            ])
            .unwrap();
        let report = config.policy_report();
        for line in [
            "      env passthrough (1): ANTHROPIC_API_KEY\n",
            "      env passthrough (1): QODER_PERSONAL_ACCESS_TOKEN\n",
            "      env passthrough (1): OPENAI_API_KEY\n",
            "      auth: personal-access-token (a personal access token from \
             QODER_PERSONAL_ACCESS_TOKEN, written to a private payload file per run)\n",
        ] {
            assert!(report.contains(line), "{line:?} not in\n{report}");
        }
        assert!(!report.contains("secret"), "{report}");
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn report_shows_the_other_bridge_daemon_values() {
        let fx = Fixture::new();
        fx.mkdir("a");
        let mut config = fx
            .toml("[[workdirs]]\nalias = \"a\"\npath = \"a\"\n")
            .unwrap();
        config.agent.peer_gid = Some(0);
        config.agent.proxy_runtimes =
            vec![AgentRuntime::parse("acp-zed").unwrap(), AgentRuntime::Fake];
        // Only reachable from code: retention is configured in hours.
        config.agent.retention_seconds = 90;
        let report = config.policy_report();
        for line in [
            "    peer uid: the Bridge's own\n",
            "    peer gid: 0 (socket shared with this group)\n",
            "    proxy runtimes (2): acp-zed, fake\n",
            ", retention_seconds 90, ",
        ] {
            assert!(report.contains(line), "{line:?} not in\n{report}");
        }
    }
}
