use std::path::PathBuf;

use pretty_assertions::assert_eq;

use crate::test_support::{Fixture, env, message};
use crate::{
    AcpProfile, AcpProfileSettings, AgentMode, AgentRuntime, AgentSettings, ApprovalPaths,
    ApprovalPolicy, CliRuntimeSettings, CodexSettings, CodexTransport, Config, ConfigError,
    HttpAuth, HttpSettings, LogLevel, ProviderCgroup, QoderAuth, QoderSettings, ServerSettings,
    TextContent, WorkdirAlias, WorkdirConfig,
};

fn alias(text: &str) -> WorkdirAlias {
    WorkdirAlias::new(text).unwrap()
}

#[test]
fn minimal_file_gets_every_default() {
    let fx = Fixture::new();
    let root = fx.mkdir("docs");
    let env = env(&[("XDG_RUNTIME_DIR", "/run/user/1000"), ("HOME", "/home/u")]);
    let config = Config::from_toml_str_with_env(
        "[[workdirs]]\nalias = \"docs\"\npath = \"docs\"\n",
        fx.path(),
        &env,
    )
    .unwrap();
    assert_eq!(
        config,
        Config {
            server: ServerSettings {
                log_level: LogLevel::Info,
                text_content: TextContent::Full,
                default_list_limit: 100,
                max_list_entries: 500,
                default_search_results: 50,
                max_search_results: 100,
                max_walk_entries: 200_000,
                search_timeout_ms: 15_000,
                search_max_file_bytes: 52_428_800,
                max_edits_per_call: 50,
            },
            agent: AgentSettings {
                bridge_enabled: false,
                bridge_socket: PathBuf::from("/run/user/1000/serverfs/bridge.sock"),
                bridge_timeout_ms: 30_000,
                lock_dir: PathBuf::from("/run/user/1000/serverfs/locks"),
                state_dir: PathBuf::from("/home/u/.local/state/serverfs-agent-bridge"),
                max_active_tasks: 4,
                task_timeout_seconds: 7_200,
                interaction_timeout_seconds: 1_800,
                retention_seconds: 604_800,
                result_spool_threshold_bytes: 262_144,
                peer_uid: None,
                peer_gid: None,
                proxy_runtimes: Vec::new(),
                provider_cgroup: ProviderCgroup::Auto,
                codex: CodexSettings {
                    bin: "codex".to_owned(),
                    home: None,
                    transport: CodexTransport::Stdio,
                    autostart: false,
                    request_timeout_ms: 10_000,
                    env_passthrough: Vec::new(),
                },
                claude: CliRuntimeSettings {
                    bin: "claude".to_owned(),
                    request_timeout_ms: 60_000,
                    env_passthrough: Vec::new(),
                },
                qoder: QoderSettings::default(),
                acp_profiles: Vec::new(),
            },
            http: HttpSettings {
                bind: None,
                auth: HttpAuth::Bearer,
                trust_network: false,
                allowed_hosts: Vec::new(),
                allowed_origins: Vec::new(),
                token_file: PathBuf::from("/home/u/.config/serverfs/tokens.json"),
                oauth: crate::OAuthSettings::with_defaults(&PathBuf::from(
                    "/home/u/.config/serverfs/tokens.json"
                )),
                request_timeout_ms: 120_000,
                max_concurrent_requests: 64,
                shutdown_grace_ms: 10_000,
                connections: crate::ConnectionLimits::default(),
            },
            workdirs: vec![WorkdirConfig::with_defaults(alias("docs"), root)],
        }
    );
    assert_eq!(config.server, ServerSettings::default());
    let w = &config.workdirs[0];
    assert!(w.read_only && !w.allow_hidden && w.default_deny && !w.binary_transfer);
    // A file is a configuration new to this implementation: hard-linked
    // files are not read unless it says so.
    assert!(!w.read_hardlinked_files);
    assert_eq!(
        (w.max_read_lines, w.max_read_bytes, w.max_write_bytes),
        (500, 524_288, 1_048_576)
    );
    assert_eq!(w.max_binary_transfer_bytes, 8_388_608);
    assert_eq!(w.legacy_slot, None);
}

#[test]
fn agent_settings_default_is_an_empty_agent_table_without_environment() {
    let fx = Fixture::new();
    fx.mkdir("docs");
    let config = fx
        .toml("[agent]\n[[workdirs]]\nalias = \"docs\"\npath = \"docs\"\n")
        .unwrap();
    assert_eq!(config.agent, AgentSettings::default());
    assert_eq!(
        AgentSettings::default().state_dir,
        PathBuf::from("serverfs-agent-bridge")
    );
}

#[test]
fn every_key_is_read() {
    let fx = Fixture::new();
    let docs = fx.mkdir("docs");
    let code = fx.mkdir("code");
    let text = format!(
        r#"
[server]
log_level = "debug"
text_content = "summary"
default_list_limit = 20
max_list_entries = 40
default_search_results = 5
max_search_results = 9
max_walk_entries = 1000
search_timeout_ms = 2500
search_max_file_bytes = 4096
max_edits_per_call = 7
allow_hidden = true
default_deny = false
deny = ["*.log", "tmp/**"]
binary_transfer = true
read_hardlinked_files = true
max_read_lines = 10
max_read_bytes = 2048
max_write_bytes = 3
max_binary_transfer_bytes = 4
agent_mode = "review"
agent_runtimes = ["fake"]

[agent]
enabled = true
socket = "/srv/bridge/bridge.sock"
timeout_ms = 1500
lock_dir = "/srv/locks"
state_dir = "/srv/state"
max_active_tasks = 9
task_timeout_seconds = 600
interaction_timeout_seconds = 120
retention_hours = 2
result_spool_threshold_bytes = 4096
peer_uid = 1000
peer_gid = 0
proxy_runtimes = ["codex", "acp-zed"]
provider_cgroup = "/sys/fs/cgroup/bridge.service"
codex_bin = "/opt/codex/bin/codex"
codex_home = "/srv/codex-home"
codex_transport = "daemon"
codex_autostart = true
codex_request_timeout_seconds = 2.5
# Empty: a non-empty list needs the stdio transport (validate_tests).
codex_env_passthrough = []
claude_bin = "/opt/claude/bin/claude"
claude_request_timeout_seconds = 90
claude_env_passthrough = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]
qoder_bin = "qoder"
qoder_request_timeout_seconds = 0.5
qoder_env_passthrough = ["QODER_PERSONAL_ACCESS_TOKEN"]
qoder_auth = "personal-access-token"

[[agent.acp_profiles]]
id = "zed"
command = "/opt/zed/bin/zed"
args = ["--acp", "$(not a shell)"]
env_passthrough = ["ZED_API_KEY"]
env = {{ ZED_MODE = "agent", ZED_COLOR = "never" }}
request_timeout_seconds = 5
probe_timeout_seconds = 2.5
shutdown_timeout_seconds = 1
session_scoped_allow_always = true

[[agent.acp_profiles]]
id = "other_agent"
command = "/opt/other/agent"

[[workdirs]]
alias = "docs"
path = "docs"
description = "  The docs  "

[[workdirs]]
alias = "Code"
path = "{code}"
description = "   "
read_only = false
allow_hidden = false
default_deny = true
deny = ["*.log", "secret*"]
binary_transfer = false
read_hardlinked_files = false
max_read_lines = 11
max_read_bytes = 1024
max_write_bytes = 5
max_binary_transfer_bytes = 6
agent_mode = "workspace-write"
agent_runtimes = ["fake", "codex", "acp-zed"]
"#,
        code = code.display()
    );
    let config = fx.toml(&text).unwrap();
    assert_eq!(
        config.server,
        ServerSettings {
            log_level: LogLevel::Debug,
            text_content: TextContent::Summary,
            default_list_limit: 20,
            max_list_entries: 40,
            default_search_results: 5,
            max_search_results: 9,
            max_walk_entries: 1000,
            search_timeout_ms: 2500,
            search_max_file_bytes: 4096,
            max_edits_per_call: 7,
        }
    );
    assert_eq!(
        config.agent,
        AgentSettings {
            bridge_enabled: true,
            bridge_socket: PathBuf::from("/srv/bridge/bridge.sock"),
            bridge_timeout_ms: 1500,
            lock_dir: PathBuf::from("/srv/locks"),
            state_dir: PathBuf::from("/srv/state"),
            max_active_tasks: 9,
            task_timeout_seconds: 600,
            interaction_timeout_seconds: 120,
            retention_seconds: 7_200,
            result_spool_threshold_bytes: 4096,
            peer_uid: Some(1000),
            // 0 is a real group (root's), not "unset".
            peer_gid: Some(0),
            proxy_runtimes: vec![AgentRuntime::parse("acp-zed").unwrap(), AgentRuntime::Codex],
            provider_cgroup: ProviderCgroup::At(PathBuf::from("/sys/fs/cgroup/bridge.service")),
            codex: CodexSettings {
                bin: "/opt/codex/bin/codex".to_owned(),
                home: Some(PathBuf::from("/srv/codex-home")),
                transport: CodexTransport::Daemon,
                autostart: true,
                request_timeout_ms: 2_500,
                env_passthrough: Vec::new(),
            },
            claude: CliRuntimeSettings {
                bin: "/opt/claude/bin/claude".to_owned(),
                request_timeout_ms: 90_000,
                env_passthrough: vec![
                    "ANTHROPIC_API_KEY".to_owned(),
                    "ANTHROPIC_BASE_URL".to_owned()
                ],
            },
            qoder: QoderSettings {
                cli: CliRuntimeSettings {
                    bin: "qoder".to_owned(),
                    request_timeout_ms: 500,
                    env_passthrough: vec!["QODER_PERSONAL_ACCESS_TOKEN".to_owned()],
                },
                auth: QoderAuth::PersonalAccessToken,
            },
            acp_profiles: vec![
                AcpProfileSettings {
                    runtime: AcpProfile::from_id("zed").unwrap(),
                    command: PathBuf::from("/opt/zed/bin/zed"),
                    // Passed as they are: no shell ever reads them.
                    args: vec!["--acp".to_owned(), "$(not a shell)".to_owned()],
                    env_passthrough: vec!["ZED_API_KEY".to_owned()],
                    env: vec![
                        ("ZED_COLOR".to_owned(), "never".to_owned()),
                        ("ZED_MODE".to_owned(), "agent".to_owned()),
                    ],
                    request_timeout_ms: 5_000,
                    probe_timeout_ms: 2_500,
                    shutdown_timeout_ms: 1_000,
                    session_scoped_allow_always: true,
                },
                AcpProfileSettings {
                    runtime: AcpProfile::from_id("other_agent").unwrap(),
                    command: PathBuf::from("/opt/other/agent"),
                    args: Vec::new(),
                    env_passthrough: Vec::new(),
                    env: Vec::new(),
                    request_timeout_ms: 60_000,
                    probe_timeout_ms: 30_000,
                    shutdown_timeout_ms: 3_000,
                    session_scoped_allow_always: false,
                },
            ],
        }
    );
    assert_eq!(
        config.workdirs,
        vec![
            WorkdirConfig {
                alias: alias("docs"),
                root: docs,
                description: Some("The docs".to_owned()),
                read_only: true,
                allow_hidden: true,
                default_deny: false,
                deny: vec!["*.log".to_owned(), "tmp/**".to_owned()],
                binary_transfer: true,
                read_hardlinked_files: true,
                max_read_lines: 10,
                max_read_bytes: 2048,
                max_write_bytes: 3,
                max_binary_transfer_bytes: 4,
                agent_mode: AgentMode::Review,
                agent_runtimes: vec![AgentRuntime::Fake],
                approvals: ApprovalPolicy::Model,
                approval_paths: ApprovalPaths::Informative,
                legacy_slot: None,
            },
            WorkdirConfig {
                alias: alias("Code"),
                root: code,
                description: None,
                read_only: false,
                allow_hidden: false,
                default_deny: true,
                deny: vec![
                    "*.log".to_owned(),
                    "tmp/**".to_owned(),
                    "secret*".to_owned()
                ],
                binary_transfer: false,
                read_hardlinked_files: false,
                max_read_lines: 11,
                max_read_bytes: 1024,
                max_write_bytes: 5,
                max_binary_transfer_bytes: 6,
                agent_mode: AgentMode::WorkspaceWrite,
                agent_runtimes: vec![
                    AgentRuntime::parse("acp-zed").unwrap(),
                    AgentRuntime::Codex,
                    AgentRuntime::Fake,
                ],
                approvals: ApprovalPolicy::Model,
                approval_paths: ApprovalPaths::Informative,
                legacy_slot: None,
            },
        ]
    );
    assert!(config.agent_tools_enabled());
    assert!(config.binary_tools_enabled());
}

#[test]
fn unknown_keys_are_refused_at_every_level() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let wd = "[[workdirs]]\nalias = \"a\"\npath = \"a\"\n";
    let cases = [
        (
            format!("bogus = 1\n{wd}"),
            "bogus: unknown field `bogus`, expected one of `server`, `agent`, `http`, `workdirs` (line 1)",
        ),
        (
            format!("[defaults]\nmax_read_lines = 3\n{wd}"),
            "defaults: unknown field `defaults`, expected one of `server`, `agent`, `http`, `workdirs` (line 1)",
        ),
        (
            format!("[server]\nlog_level = \"info\"\nfoo = 1\n{wd}"),
            "server.foo: unknown field `foo`",
        ),
        (
            // read_only is per workdir only: there is no global write switch.
            format!("[server]\nread_only = false\n{wd}"),
            "server.read_only: unknown field `read_only`",
        ),
        (
            format!("[agent]\nenabled = false\nsokcet = \"/x\"\n{wd}"),
            "agent.sokcet: unknown field `sokcet`",
        ),
        (
            format!("{wd}\n[[workdirs]]\nalias = \"b\"\npath = \"a\"\nreadonly = true\n"),
            "workdirs[1].readonly: unknown field `readonly`",
        ),
        (
            "workdirs = [{ alias = \"a\", path = \"a\", zz = 1 }]\n".to_owned(),
            "workdirs[0].zz: unknown field `zz`",
        ),
        (
            format!("{wd}[workdirs.sub]\nx = 1\n"),
            "workdirs[0].sub: unknown field `sub`",
        ),
    ];
    for (text, expected) in cases {
        let err = message(fx.toml(&text));
        assert!(err.starts_with(expected), "{err:?} for\n{text}");
    }
}

#[test]
fn unknown_key_error_has_the_key_and_line() {
    let fx = Fixture::new();
    let err = fx
        .toml("[server]\n\nlog_level = \"info\"\nfoo = 1\n")
        .unwrap_err();
    let ConfigError::TomlKey { key, line, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!((key.as_str(), *line), ("server.foo", 4));
    assert!(
        message.starts_with("unknown field `foo`, expected one of"),
        "{message}"
    );
    assert_eq!(err.key().as_deref(), Some("server.foo"));
}

#[test]
fn types_are_strict() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let wd = |extra: &str| format!("[[workdirs]]\nalias = \"a\"\npath = \"a\"\n{extra}\n");
    let cases = [
        (
            wd("read_only = \"yes\""),
            "workdirs[0].read_only: invalid type: string \"yes\", expected a boolean (line 4)",
        ),
        (
            wd("max_read_lines = \"10\""),
            "workdirs[0].max_read_lines: invalid type: string \"10\", expected an integer (line 4)",
        ),
        (
            wd("max_read_bytes = 1.5"),
            "workdirs[0].max_read_bytes: invalid type: floating point `1.5`, expected an integer (line 4)",
        ),
        (
            wd("deny = \"*.log\""),
            "workdirs[0].deny: invalid type: string \"*.log\", expected an array (line 4)",
        ),
        (
            wd("deny = [\"a\", 3]"),
            "workdirs[0].deny[1]: invalid type: integer `3`, expected a string (line 4)",
        ),
        (
            format!("[agent]\nenabled = 1\n{}", wd("")),
            "agent.enabled: invalid type: integer `1`, expected a boolean (line 2)",
        ),
        (
            format!("[server]\nallow_hidden = \"true\"\n{}", wd("")),
            "server.allow_hidden: invalid type: string \"true\", expected a boolean (line 2)",
        ),
        (
            "[[workdirs]]\nalias = 3\npath = \"a\"\n".to_owned(),
            "workdirs[0].alias: invalid type: integer `3`, expected a string (line 2)",
        ),
        (
            format!(
                "[agent]\ncodex_request_timeout_seconds = \"10\"\n{}",
                wd("")
            ),
            "agent.codex_request_timeout_seconds: invalid type: string \"10\", expected a number of seconds (line 2)",
        ),
        (
            format!("[agent]\ncodex_autostart = \"true\"\n{}", wd("")),
            "agent.codex_autostart: invalid type: string \"true\", expected a boolean (line 2)",
        ),
        (
            format!("[agent]\ncodex_bin = [\"codex\"]\n{}", wd("")),
            "agent.codex_bin: invalid type: sequence, expected a string (line 2)",
        ),
        (
            format!(
                "[agent]\ncodex_env_passthrough = \"OPENAI_API_KEY\"\n{}",
                wd("")
            ),
            "agent.codex_env_passthrough: invalid type: string \"OPENAI_API_KEY\", expected an array (line 2)",
        ),
        (
            format!("[agent]\nclaude_bin = 1\n{}", wd("")),
            "agent.claude_bin: invalid type: integer `1`, expected a string (line 2)",
        ),
        (
            format!(
                "[agent]\nclaude_request_timeout_seconds = \"60\"\n{}",
                wd("")
            ),
            "agent.claude_request_timeout_seconds: invalid type: string \"60\", expected a number of seconds (line 2)",
        ),
        (
            format!("[agent]\nclaude_env_passthrough = [\"A\", 1]\n{}", wd("")),
            "agent.claude_env_passthrough[1]: invalid type: integer `1`, expected a string (line 2)",
        ),
        (
            format!("[agent]\nqoder_bin = true\n{}", wd("")),
            "agent.qoder_bin: invalid type: boolean `true`, expected a string (line 2)",
        ),
        (
            format!("[agent]\nqoder_request_timeout_seconds = true\n{}", wd("")),
            "agent.qoder_request_timeout_seconds: invalid type: boolean `true`, expected a number of seconds (line 2)",
        ),
        (
            format!("[agent]\nqoder_auth = true\n{}", wd("")),
            "agent.qoder_auth: invalid type: boolean `true`, expected a string (line 2)",
        ),
        (
            format!("[agent]\nqoder_env_passthrough = \"A,B\"\n{}", wd("")),
            "agent.qoder_env_passthrough: invalid type: string \"A,B\", expected an array (line 2)",
        ),
        (
            format!(
                "[server]\nmax_walk_entries = 99999999999999999999\n{}",
                wd("")
            ),
            "server.max_walk_entries: invalid type: integer `99999999999999999999`, expected an integer (line 2)",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(message(fx.toml(&text)), expected, "for\n{text}");
    }
}

#[test]
fn codex_request_timeout_takes_whole_or_fractional_seconds() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let timeout = |value: &str| {
        fx.toml(&format!(
            "[agent]\ncodex_request_timeout_seconds = {value}\n\
             [[workdirs]]\nalias = \"a\"\npath = \"a\"\n"
        ))
        .unwrap()
        .agent
        .codex
        .request_timeout_ms
    };
    assert_eq!(timeout("600"), 600_000);
    assert_eq!(timeout("0.1"), 100);
    assert_eq!(timeout("12.3456"), 12_346);
    assert_eq!(timeout("1e1"), 10_000);
}

#[test]
fn cli_runtime_timeouts_take_whole_or_fractional_seconds() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let timeouts = |value: &str| {
        let agent = fx
            .toml(&format!(
                "[agent]\nclaude_request_timeout_seconds = {value}\n\
                 qoder_request_timeout_seconds = {value}\n\
                 [[workdirs]]\nalias = \"a\"\npath = \"a\"\n"
            ))
            .unwrap()
            .agent;
        (
            agent.claude.request_timeout_ms,
            agent.qoder.cli.request_timeout_ms,
        )
    };
    assert_eq!(timeouts("600"), (600_000, 600_000));
    assert_eq!(timeouts("0.1"), (100, 100));
    assert_eq!(timeouts("12.3456"), (12_346, 12_346));
    assert_eq!(timeouts("6e1"), (60_000, 60_000));
}

#[test]
fn codex_paths_are_used_as_written() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let config = Config::from_toml_str_with_env(
        "[agent]\ncodex_bin = \"codex-nightly\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n",
        fx.path(),
        // Codex's own default home comes from the Bridge's environment, at
        // the Bridge: the configuration never fills it in.
        &env(&[("CODEX_HOME", "/h/.codex"), ("HOME", "/h")]),
    )
    .unwrap();
    assert_eq!(
        config.agent.codex,
        CodexSettings {
            bin: "codex-nightly".to_owned(),
            ..CodexSettings::default()
        }
    );
}

#[test]
fn missing_required_keys_name_the_workdir() {
    let fx = Fixture::new();
    fx.mkdir("a");
    assert_eq!(
        message(fx.toml("[[workdirs]]\npath = \"a\"\n")),
        "workdirs[0]: missing field `alias` (line 1)"
    );
    assert_eq!(
        message(
            fx.toml("[[workdirs]]\nalias = \"a\"\npath = \"a\"\n\n[[workdirs]]\nalias = \"b\"\n")
        ),
        "workdirs[1]: missing field `path` (line 5)"
    );
}

#[test]
fn syntax_errors_give_line_and_column() {
    let fx = Fixture::new();
    let err = fx.toml("[server]\nlog_level = \n").unwrap_err();
    let ConfigError::TomlSyntax { line, column, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!((*line, *column), (2, 13));
    assert!(
        err.to_string()
            .starts_with("invalid TOML at line 2, column 13: "),
        "{err}"
    );
    assert_eq!(err.key(), None);
}

#[test]
fn log_levels() {
    let fx = Fixture::new();
    fx.mkdir("a");
    for level in LogLevel::ALL {
        let text = format!(
            "[server]\nlog_level = \"{level}\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n"
        );
        assert_eq!(fx.toml(&text).unwrap().server.log_level, level);
    }
    assert_eq!(
        message(
            fx.toml("[server]\nlog_level = \"INFO\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n")
        ),
        "server.log_level: expected one of \"debug\", \"info\", \"warning\", \"error\", got \"INFO\""
    );
}

#[test]
fn text_content_is_full_or_summary_exactly() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let file = |value: &str| {
        format!("[server]\ntext_content = {value}\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n")
    };
    for mode in TextContent::ALL {
        let config = fx.toml(&file(&format!("\"{mode}\""))).unwrap();
        assert_eq!(config.server.text_content, mode);
    }
    let err = fx.toml(&file("\"Summary\"")).unwrap_err();
    assert_eq!(err.key().as_deref(), Some("server.text_content"));
    assert_eq!(
        err.to_string(),
        "server.text_content: expected one of \"full\", \"summary\", got \"Summary\""
    );
    assert_eq!(
        message(fx.toml(&file("true"))),
        "server.text_content: invalid type: boolean `true`, expected a string (line 2)"
    );
}

#[test]
fn agent_mode_spelling_is_exact() {
    let fx = Fixture::new();
    fx.mkdir("a");
    assert_eq!(
        message(fx.toml("[[workdirs]]\nalias = \"a\"\npath = \"a\"\nagent_mode = \"Review\"\n")),
        "workdirs[0].agent_mode: expected one of \"disabled\", \"review\", \"workspace-write\", got \"Review\""
    );
    assert_eq!(
        message(
            fx.toml(
                "[server]\nagent_mode = \"write\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n"
            )
        ),
        "server.agent_mode: expected one of \"disabled\", \"review\", \"workspace-write\", got \"write\""
    );
}

#[test]
fn approval_settings_default_inherit_and_override() {
    let fx = Fixture::new();
    fx.mkdir("a");
    fx.mkdir("b");
    fx.mkdir("c");
    let config = fx
        .toml(
            "[server]\napprovals = \"human\"\napproval_paths = \"redacted\"\n\
             [[workdirs]]\nalias = \"a\"\npath = \"a\"\n\
             [[workdirs]]\nalias = \"b\"\npath = \"b\"\napprovals = \"human-preferred\"\n\
             approval_paths = \"informative\"\n",
        )
        .unwrap();
    let settings: Vec<(ApprovalPolicy, ApprovalPaths)> = config
        .workdirs
        .iter()
        .map(|w| (w.approvals, w.approval_paths))
        .collect();
    assert_eq!(
        settings,
        [
            (ApprovalPolicy::Human, ApprovalPaths::Redacted),
            (ApprovalPolicy::HumanPreferred, ApprovalPaths::Informative),
        ]
    );
    // Unwritten anywhere: the model answers, paths are informative.
    let plain = fx
        .toml("[[workdirs]]\nalias = \"c\"\npath = \"c\"\n")
        .unwrap();
    assert_eq!(
        (
            plain.workdirs[0].approvals,
            plain.workdirs[0].approval_paths
        ),
        (ApprovalPolicy::Model, ApprovalPaths::Informative)
    );
}

#[test]
fn approval_settings_spelling_is_exact() {
    let fx = Fixture::new();
    fx.mkdir("a");
    assert_eq!(
        message(fx.toml("[[workdirs]]\nalias = \"a\"\npath = \"a\"\napprovals = \"Human\"\n")),
        "workdirs[0].approvals: expected one of \"model\", \"human\", \"human-preferred\", \
         got \"Human\""
    );
    assert_eq!(
        message(fx.toml(
            "[server]\napproval_paths = \"full\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n"
        )),
        "server.approval_paths: expected one of \"informative\", \"redacted\", got \"full\""
    );
    assert_eq!(
        message(fx.toml("[server]\napprovals = true\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n")),
        "server.approvals: invalid type: boolean `true`, expected a string (line 2)"
    );
}

#[test]
fn relative_paths_resolve_against_the_base_dir() {
    let fx = Fixture::new();
    let nested = fx.mkdir("x/y");
    let config = fx
        .toml("[[workdirs]]\nalias = \"a\"\npath = \"x/y\"\n[[workdirs]]\nalias = \"b\"\npath = \"./x/../x/y\"\n")
        .unwrap();
    assert_eq!(config.workdirs[0].root, nested);
    // Lexical only: `..` is kept (the kernel resolves it when opening).
    assert_eq!(config.workdirs[1].root, fx.join("x/../x/y"));
    let absolute = format!(
        "[[workdirs]]\nalias = \"a\"\npath = \"{}\"\n",
        nested.display()
    );
    assert_eq!(
        Config::from_toml_str(&absolute, std::path::Path::new("/nonexistent"))
            .unwrap()
            .workdirs[0]
            .root,
        nested
    );
    assert_eq!(
        message(fx.toml("[[workdirs]]\nalias = \"a\"\npath = \"\"\n")),
        "workdirs[0].path: expected a directory path, got \"\""
    );
}

#[test]
fn no_workdirs_and_too_many() {
    let fx = Fixture::new();
    assert_eq!(
        message(fx.toml("[server]\nlog_level = \"info\"\n")),
        "no enabled workdir: the configuration file has no [[workdirs]] table"
    );
    assert_eq!(message(fx.toml("")), message(fx.toml("workdirs = []\n")));
    let mut text = String::new();
    for i in 0..65 {
        fx.mkdir(&format!("d{i}"));
        text.push_str(&format!(
            "[[workdirs]]\nalias = \"d{i}\"\npath = \"d{i}\"\n"
        ));
    }
    assert_eq!(
        message(fx.toml(&text)),
        "65 workdirs configured, at most 64 are allowed"
    );
    let sixty_four: String = text
        .split("[[workdirs]]")
        .skip(1)
        .take(64)
        .map(|t| format!("[[workdirs]]{t}"))
        .collect();
    assert_eq!(fx.toml(&sixty_four).unwrap().workdirs.len(), 64);
}

#[test]
fn workdirs_inherit_server_defaults_unless_overridden() {
    let fx = Fixture::new();
    fx.mkdir("a");
    fx.mkdir("b");
    let config = fx
        .toml(
            "[server]\nmax_read_lines = 10\nallow_hidden = true\nbinary_transfer = true\n\
             read_hardlinked_files = true\n\
             [[workdirs]]\nalias = \"a\"\npath = \"a\"\n\
             [[workdirs]]\nalias = \"b\"\npath = \"b\"\nmax_read_lines = 20\nallow_hidden = false\n\
             read_hardlinked_files = false\n",
        )
        .unwrap();
    let [a, b] = [&config.workdirs[0], &config.workdirs[1]];
    assert_eq!(
        (
            a.max_read_lines,
            a.allow_hidden,
            a.binary_transfer,
            a.read_hardlinked_files
        ),
        (10, true, true, true)
    );
    assert_eq!(
        (
            b.max_read_lines,
            b.allow_hidden,
            b.binary_transfer,
            b.read_hardlinked_files
        ),
        (20, false, true, false)
    );
}

#[test]
fn key_paths_quote_non_bare_keys() {
    let fx = Fixture::new();
    assert_eq!(
        message(fx.toml("\"odd key\" = 1\n")),
        "\"odd key\": unknown field `odd key`, expected one of `server`, `agent`, `http`, `workdirs` (line 1)"
    );
}

// --- the shipped example and reference -----------------------------------

const EXAMPLE: &str = include_str!("../../../examples/serverfs.toml");
const REFERENCE: &str = include_str!("../../../docs/configuration.md");

/// The keys a table accepts, read from serde's own unknown-field message,
/// so this list cannot drift from the structs.
fn accepted_keys(table_header: &str) -> Vec<String> {
    let fx = Fixture::new();
    let err = fx
        .toml(&format!("{table_header}\n__probe__ = 1\n"))
        .unwrap_err();
    let ConfigError::TomlKey { message, .. } = &err else {
        panic!("{err:?}");
    };
    let (_, expected) = message.split_once("expected").unwrap();
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_shipped_example_is_valid_and_shows_every_key() {
    let fx = Fixture::new();
    let demo = fx.mkdir("demo");
    let config = fx.toml(EXAMPLE).unwrap();
    assert_eq!(config.workdirs.len(), 1);
    assert_eq!(
        config.workdirs[0],
        WorkdirConfig {
            description: Some("Demo workdir shipped with ServerFS".to_owned()),
            ..WorkdirConfig::with_defaults(alias("demo"), demo)
        }
    );
    assert_eq!(config.server, ServerSettings::default());
    // Every [agent] value the example writes is the default it documents,
    // the runtimes' bins, timeouts and (empty) passthrough lists included.
    assert_eq!(config.agent, AgentSettings::default());
    // No environment here, so the default token file stays relative.
    assert_eq!(
        config.http,
        HttpSettings::with_defaults(PathBuf::from("serverfs/tokens.json"))
    );
    for (header, section) in [
        ("", ""),
        ("[server]", "server"),
        ("[agent]", "agent"),
        ("[http]", "http"),
        ("[http.oauth]", "http.oauth"),
        ("[[http.oauth.clients]]", "http.oauth.clients"),
        ("[[workdirs]]", "workdirs"),
        ("[[agent.acp_profiles]]", "agent.acp_profiles"),
    ] {
        let keys = accepted_keys(header);
        assert!(keys.len() >= 3, "{section}: {keys:?}");
        for key in keys {
            let shown = EXAMPLE
                .lines()
                .map(|l| l.trim_start_matches(['#', ' ']))
                .any(|l| {
                    l.starts_with(&format!("{key} ="))
                        || l.starts_with(&format!("[{key}]"))
                        || l.starts_with(&format!("[[{key}]]"))
                        || l.starts_with(&format!("[[{section}.{key}]]"))
                        || l.starts_with(&format!("[{section}.{key}]"))
                });
            assert!(
                shown,
                "examples/serverfs.toml does not show {section}.{key}"
            );
            assert!(
                REFERENCE.contains(&format!("`{key}`"))
                    || REFERENCE.contains(&format!("`[{key}]`"))
                    || REFERENCE.contains(&format!("`[[{key}]]`"))
                    || REFERENCE.contains(&format!("`[[{section}.{key}]]`"))
                    || REFERENCE.contains(&format!("`[{section}.{key}]`")),
                "docs/configuration.md does not document {section}.{key}"
            );
        }
    }
}

#[test]
fn the_reference_documents_every_variable() {
    let env_source = include_str!("env.rs");
    let mut names: Vec<&str> = env_source
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.starts_with("SERVERFS_") && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 24, "{names:?}");
    for name in names {
        assert!(
            REFERENCE.contains(&format!("`{name}`")),
            "docs/configuration.md does not document {name}"
        );
    }
    for name in crate::env::SLOT_NAMES {
        assert!(
            REFERENCE.contains(&format!("`WORKDIR_NN_{name}`")),
            "docs/configuration.md does not document WORKDIR_NN_{name}"
        );
    }
}

#[test]
fn a_provider_cgroup_that_is_not_auto_off_or_a_plain_absolute_path_is_refused() {
    let fx = Fixture::new();
    for bad in ["cgroup", "/sys/fs/cgroup/../x", "Off"] {
        let text = format!(
            "[agent]\nprovider_cgroup = \"{bad}\"\n[[workdirs]]\nalias = \"d\"\npath = \"docs\"\n"
        );
        assert_eq!(
            message(fx.toml(&text)),
            format!(
                "agent.provider_cgroup: expected \"auto\", \"off\" or an absolute path \
                 without \"..\" (a cgroup v2 directory), got {bad:?}"
            )
        );
    }
}
