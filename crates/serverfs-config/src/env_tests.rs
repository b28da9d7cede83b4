use std::fs;
use std::path::PathBuf;

use pretty_assertions::assert_eq;

use crate::test_support::{Fixture, message};
use crate::{
    AcpProfile, AcpProfileSettings, AgentMode, AgentRuntime, AgentSettings, CliRuntimeSettings,
    CodexSettings, CodexTransport, ConfigError, LogLevel, PassthroughProblem, ProviderCgroup,
    QoderAuth, QoderSettings, ServerSettings, SlotProblem, TextContent, WorkdirAlias,
    WorkdirConfig,
};

/// Slot 01 enabled as `one`, plus `pairs`.
fn slot1(fx: &Fixture, pairs: &[(&str, &str)]) -> Result<crate::Config, ConfigError> {
    fx.slot(1);
    let mut all = vec![("WORKDIR_01_ALIAS", "one")];
    all.extend_from_slice(pairs);
    fx.env_config(&all)
}

#[test]
fn defaults_match_upstream() {
    let fx = Fixture::new();
    let root = fx.slot(1);
    let config = fx.env_config(&[("WORKDIR_01_ALIAS", "one")]).unwrap();
    assert_eq!(config.server, ServerSettings::default());
    assert_eq!(
        config.agent,
        AgentSettings {
            bridge_enabled: false,
            bridge_socket: PathBuf::from("/run/serverfs-agent-bridge/bridge.sock"),
            bridge_timeout_ms: 30_000,
            lock_dir: PathBuf::from("/run/serverfs-agent-locks"),
            // No XDG_STATE_HOME or HOME here: the relative fallback.
            state_dir: PathBuf::from("serverfs-agent-bridge"),
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
        }
    );
    let mut expected = WorkdirConfig::with_defaults(WorkdirAlias::new("one").unwrap(), root);
    expected.legacy_slot = Some(1);
    // Upstream's containers read every regular file, and an existing
    // deployment keeps doing so until it sets SERVERFS_READ_HARDLINKED_FILES.
    expected.read_hardlinked_files = true;
    assert_eq!(config.workdirs, [expected]);
}

#[test]
fn every_global_is_read() {
    let fx = Fixture::new();
    let config = slot1(
        &fx,
        &[
            ("SERVERFS_LOG_LEVEL", "warning"),
            ("SERVERFS_TEXT_CONTENT", " Summary "),
            ("SERVERFS_MAX_READ_BYTES", "2048"),
            ("SERVERFS_MAX_READ_LINES", "12"),
            ("SERVERFS_DEFAULT_LIST_LIMIT", "9"),
            ("SERVERFS_MAX_LIST_ENTRIES", "90"),
            ("SERVERFS_DEFAULT_SEARCH_RESULTS", "8"),
            ("SERVERFS_MAX_SEARCH_RESULTS", "80"),
            ("SERVERFS_MAX_WALK_ENTRIES", "777"),
            ("SERVERFS_SEARCH_TIMEOUT_SECONDS", "2.5"),
            ("SERVERFS_SEARCH_MAX_FILE_BYTES", "1000"),
            ("SERVERFS_ALLOW_HIDDEN", "yes"),
            ("SERVERFS_EXTRA_DENY_GLOBS", " *.log, ,build/** "),
            ("SERVERFS_DISABLE_DEFAULT_DENY", "true"),
            ("SERVERFS_MAX_WRITE_BYTES", "33"),
            ("SERVERFS_MAX_EDITS_PER_CALL", "5"),
            ("SERVERFS_BINARY_TRANSFER_ENABLED", "on"),
            ("SERVERFS_MAX_BINARY_TRANSFER_BYTES", "44"),
            ("SERVERFS_READ_HARDLINKED_FILES", "off"),
            ("SERVERFS_AGENT_MODE", "Review"),
            ("SERVERFS_AGENT_RUNTIMES", " FAKE "),
            ("SERVERFS_AGENT_BRIDGE_ENABLED", "TRUE"),
            ("SERVERFS_AGENT_BRIDGE_SOCKET", "/b/bridge.sock"),
            ("SERVERFS_AGENT_BRIDGE_TIMEOUT_SECONDS", "1.5"),
            ("SERVERFS_AGENT_LOCK_DIR", "/b/locks"),
            ("SERVERFS_AGENT_BRIDGE_STATE_DIR", "/b/state"),
            ("SERVERFS_AGENT_MAX_ACTIVE_TASKS", "9"),
            ("SERVERFS_AGENT_TASK_TIMEOUT_SECONDS", "600"),
            ("SERVERFS_AGENT_INTERACTION_TIMEOUT_SECONDS", " 120 "),
            ("SERVERFS_AGENT_TASK_RETENTION_HOURS", "2"),
            ("SERVERFS_AGENT_RESULT_SPOOL_THRESHOLD_BYTES", "4096"),
            ("SERVERFS_AGENT_PEER_UID", "1000"),
            ("SERVERFS_AGENT_PEER_GID", "0"),
            ("SERVERFS_AGENT_USE_PROXY", "yes"),
            ("SERVERFS_CODEX_BIN", " /opt/codex/bin/codex "),
            ("SERVERFS_CODEX_HOME", "/srv/codex-home"),
            ("SERVERFS_CODEX_TRANSPORT", " Daemon "),
            ("SERVERFS_AGENT_PROVIDER_CGROUP", "off"),
            ("SERVERFS_CODEX_AUTOSTART", "on"),
            ("SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS", "2.5"),
            ("SERVERFS_CLAUDE_BIN", " /opt/claude/bin/claude "),
            ("SERVERFS_CLAUDE_REQUEST_TIMEOUT_SECONDS", " 0.5 "),
            (
                "SERVERFS_CLAUDE_ENV_PASSTHROUGH",
                " ANTHROPIC_API_KEY , ANTHROPIC_BASE_URL",
            ),
            ("SERVERFS_QODER_BIN", "qoder"),
            ("SERVERFS_QODER_REQUEST_TIMEOUT_SECONDS", "600"),
            (
                "SERVERFS_QODER_ENV_PASSTHROUGH",
                "QODER_PERSONAL_ACCESS_TOKEN",
            ),
            ("SERVERFS_QODER_AUTH", "personal-access-token"),
            (
                "SERVERFS_ACP_PROFILES_JSON",
                r#" [{"id": "zed", "command": "/opt/zed/bin/zed", "args": ["--acp", "a b;c"],
                      "env_passthrough": ["ZED_API_KEY"], "env": {"ZED_MODE": "agent"},
                      "request_timeout_seconds": 5, "probe_timeout_seconds": 2.5,
                      "shutdown_timeout_seconds": 1, "session_scoped_allow_always": true}] "#,
            ),
            // A passed-through variable's value is the Bridge's: never read.
            ("ANTHROPIC_API_KEY", "sk-ant-never-read"),
        ],
    )
    .unwrap();
    assert!(
        !format!("{config:?}").contains("sk-ant-never-read"),
        "{config:?}"
    );
    assert_eq!(
        config.server,
        ServerSettings {
            log_level: LogLevel::Warning,
            text_content: TextContent::Summary,
            default_list_limit: 9,
            max_list_entries: 90,
            default_search_results: 8,
            max_search_results: 80,
            max_walk_entries: 777,
            search_timeout_ms: 2500,
            search_max_file_bytes: 1000,
            max_edits_per_call: 5,
        }
    );
    assert_eq!(
        config.agent,
        AgentSettings {
            bridge_enabled: true,
            bridge_socket: PathBuf::from("/b/bridge.sock"),
            bridge_timeout_ms: 1500,
            lock_dir: PathBuf::from("/b/locks"),
            state_dir: PathBuf::from("/b/state"),
            max_active_tasks: 9,
            task_timeout_seconds: 600,
            interaction_timeout_seconds: 120,
            retention_seconds: 7_200,
            result_spool_threshold_bytes: 4096,
            peer_uid: Some(1000),
            peer_gid: Some(0),
            // USE_PROXY: every runtime a workdir allows (here the inherited
            // SERVERFS_AGENT_RUNTIMES).
            proxy_runtimes: vec![AgentRuntime::Fake],
            provider_cgroup: ProviderCgroup::Off,
            codex: CodexSettings {
                bin: "/opt/codex/bin/codex".to_owned(),
                home: Some(PathBuf::from("/srv/codex-home")),
                transport: CodexTransport::Daemon,
                autostart: true,
                request_timeout_ms: 2_500,
                // Codex's own list cannot be combined with the daemon here:
                // `codex_passthrough_needs_the_stdio_transport`.
                env_passthrough: Vec::new(),
            },
            claude: CliRuntimeSettings {
                bin: "/opt/claude/bin/claude".to_owned(),
                request_timeout_ms: 500,
                env_passthrough: vec![
                    "ANTHROPIC_API_KEY".to_owned(),
                    "ANTHROPIC_BASE_URL".to_owned()
                ],
            },
            qoder: QoderSettings {
                cli: CliRuntimeSettings {
                    bin: "qoder".to_owned(),
                    request_timeout_ms: 600_000,
                    env_passthrough: vec!["QODER_PERSONAL_ACCESS_TOKEN".to_owned()],
                },
                auth: QoderAuth::PersonalAccessToken,
            },
            // Defined without being allowed anywhere: checked all the same.
            acp_profiles: vec![AcpProfileSettings {
                runtime: AcpProfile::from_id("zed").unwrap(),
                command: PathBuf::from("/opt/zed/bin/zed"),
                args: vec!["--acp".to_owned(), "a b;c".to_owned()],
                env_passthrough: vec!["ZED_API_KEY".to_owned()],
                env: vec![("ZED_MODE".to_owned(), "agent".to_owned())],
                request_timeout_ms: 5_000,
                probe_timeout_ms: 2_500,
                shutdown_timeout_ms: 1_000,
                session_scoped_allow_always: true,
            }],
        }
    );
    let w = &config.workdirs[0];
    assert_eq!(
        (
            w.allow_hidden,
            w.default_deny,
            w.binary_transfer,
            w.read_only,
            w.read_hardlinked_files
        ),
        (true, false, true, true, false)
    );
    assert_eq!(w.deny, ["*.log", "build/**"]);
    assert_eq!(
        (
            w.max_read_lines,
            w.max_read_bytes,
            w.max_write_bytes,
            w.max_binary_transfer_bytes
        ),
        (12, 2048, 33, 44)
    );
    assert_eq!(w.agent_mode, AgentMode::Review);
    assert_eq!(w.agent_runtimes, [AgentRuntime::Fake]);
}

#[test]
fn strict_globals_abort_on_bad_values() {
    let fx = Fixture::new();
    let cases = [
        ("SERVERFS_MAX_READ_BYTES", "abc", "a positive integer"),
        ("SERVERFS_MAX_READ_BYTES", "0", "a positive integer"),
        ("SERVERFS_MAX_READ_LINES", "-1", "a positive integer"),
        ("SERVERFS_MAX_WRITE_BYTES", "1.5", "a positive integer"),
        (
            "SERVERFS_MAX_BINARY_TRANSFER_BYTES",
            "8M",
            "a positive integer",
        ),
        (
            "SERVERFS_ALLOW_HIDDEN",
            "maybe",
            "a boolean (true, false, 1, 0, yes, no, on or off)",
        ),
        (
            "SERVERFS_DISABLE_DEFAULT_DENY",
            "nope",
            "a boolean (true, false, 1, 0, yes, no, on or off)",
        ),
        (
            "SERVERFS_BINARY_TRANSFER_ENABLED",
            "2",
            "a boolean (true, false, 1, 0, yes, no, on or off)",
        ),
        (
            "SERVERFS_READ_HARDLINKED_FILES",
            "refuse",
            "a boolean (true, false, 1, 0, yes, no, on or off)",
        ),
        (
            "SERVERFS_AGENT_MODE",
            "write",
            "one of disabled, review, workspace-write",
        ),
    ];
    for (name, value, expected) in cases {
        assert_eq!(
            message(slot1(&fx, &[(name, value)])),
            format!("{name}: expected {expected}, got {value:?}")
        );
    }
}

#[test]
fn empty_strict_values_mean_the_default() {
    let fx = Fixture::new();
    let config = slot1(
        &fx,
        &[
            ("SERVERFS_MAX_READ_BYTES", ""),
            ("SERVERFS_ALLOW_HIDDEN", " "),
            ("SERVERFS_AGENT_MODE", ""),
        ],
    )
    .unwrap();
    assert_eq!(config.workdirs[0].max_read_bytes, 524_288);
    assert!(!config.workdirs[0].allow_hidden);
}

#[test]
fn lenient_globals_fall_back_to_defaults() {
    let fx = Fixture::new();
    let config = slot1(
        &fx,
        &[
            ("SERVERFS_DEFAULT_LIST_LIMIT", "-3"),
            ("SERVERFS_MAX_LIST_ENTRIES", "abc"),
            ("SERVERFS_DEFAULT_SEARCH_RESULTS", "0"),
            ("SERVERFS_MAX_SEARCH_RESULTS", "1.5"),
            ("SERVERFS_MAX_WALK_ENTRIES", "lots"),
            ("SERVERFS_SEARCH_TIMEOUT_SECONDS", "soon"),
            ("SERVERFS_SEARCH_MAX_FILE_BYTES", ""),
            ("SERVERFS_MAX_EDITS_PER_CALL", "0"),
            ("SERVERFS_LOG_LEVEL", "verbose"),
            ("SERVERFS_AGENT_BRIDGE_ENABLED", "enabled"),
            ("SERVERFS_AGENT_BRIDGE_TIMEOUT_SECONDS", "-2"),
        ],
    )
    .unwrap();
    assert_eq!(config.server, ServerSettings::default());
    assert!(!config.agent.bridge_enabled);
    assert_eq!(config.agent.bridge_timeout_ms, 30_000);
}

#[test]
fn lenient_values_out_of_bounds_are_still_errors() {
    let fx = Fixture::new();
    assert_eq!(
        message(slot1(&fx, &[("SERVERFS_MAX_LIST_ENTRIES", "100001")])),
        "SERVERFS_MAX_LIST_ENTRIES: must be between 1 and 100000, got 100001"
    );
    assert_eq!(
        message(slot1(&fx, &[("SERVERFS_SEARCH_TIMEOUT_SECONDS", "0.05")])),
        "SERVERFS_SEARCH_TIMEOUT_SECONDS: must be between 100 and 600000, got 50"
    );
    assert_eq!(
        message(slot1(&fx, &[("SERVERFS_MAX_READ_BYTES", "1000")])),
        "SERVERFS_MAX_READ_BYTES: must be between 1024 and 67108864, got 1000"
    );
}

#[test]
fn list_and_search_defaults_are_clamped_to_their_maxima() {
    let fx = Fixture::new();
    let implicit = slot1(
        &fx,
        &[
            ("SERVERFS_MAX_LIST_ENTRIES", "10"),
            ("SERVERFS_MAX_SEARCH_RESULTS", "20"),
        ],
    )
    .unwrap();
    assert_eq!(
        (
            implicit.server.default_list_limit,
            implicit.server.default_search_results
        ),
        (10, 20)
    );
    // Upstream's min(default, max) applies to written defaults too.
    let explicit = slot1(
        &fx,
        &[
            ("SERVERFS_DEFAULT_LIST_LIMIT", "400"),
            ("SERVERFS_MAX_LIST_ENTRIES", "300"),
            ("SERVERFS_DEFAULT_SEARCH_RESULTS", "99"),
        ],
    )
    .unwrap();
    assert_eq!(
        (
            explicit.server.default_list_limit,
            explicit.server.default_search_results
        ),
        (300, 99)
    );
}

#[test]
fn search_timeout_ms_wins_over_seconds() {
    let fx = Fixture::new();
    let timeout = |pairs: &[(&str, &str)]| slot1(&fx, pairs).unwrap().server.search_timeout_ms;
    assert_eq!(timeout(&[("SERVERFS_SEARCH_TIMEOUT_MS", "2500")]), 2500);
    assert_eq!(timeout(&[("SERVERFS_SEARCH_TIMEOUT_SECONDS", "3")]), 3000);
    assert_eq!(
        timeout(&[
            ("SERVERFS_SEARCH_TIMEOUT_MS", "700"),
            ("SERVERFS_SEARCH_TIMEOUT_SECONDS", "3")
        ]),
        700
    );
    // Set but unusable: lenient, the default (the legacy variable is only
    // a fallback for an absent one).
    assert_eq!(
        timeout(&[
            ("SERVERFS_SEARCH_TIMEOUT_MS", "x"),
            ("SERVERFS_SEARCH_TIMEOUT_SECONDS", "3")
        ]),
        15_000
    );
    assert_eq!(
        timeout(&[
            ("SERVERFS_SEARCH_TIMEOUT_MS", ""),
            ("SERVERFS_SEARCH_TIMEOUT_SECONDS", "3")
        ]),
        3000
    );
}

#[test]
fn log_level_is_case_insensitive_and_never_fatal() {
    let fx = Fixture::new();
    for (value, level) in [
        ("debug", LogLevel::Debug),
        (" INFO ", LogLevel::Info),
        ("Warning", LogLevel::Warning),
        ("ERROR", LogLevel::Error),
        ("warn", LogLevel::Info),
        ("", LogLevel::Info),
    ] {
        assert_eq!(
            slot1(&fx, &[("SERVERFS_LOG_LEVEL", value)])
                .unwrap()
                .server
                .log_level,
            level,
            "{value:?}"
        );
    }
}

#[test]
fn text_content_is_strict_and_defaults_to_full() {
    let fx = Fixture::new();
    for (value, mode) in [
        ("", TextContent::Full),
        ("full", TextContent::Full),
        (" SUMMARY ", TextContent::Summary),
    ] {
        assert_eq!(
            slot1(&fx, &[("SERVERFS_TEXT_CONTENT", value)])
                .unwrap()
                .server
                .text_content,
            mode,
            "{value:?}"
        );
    }
    // Unlike the log level, a typo is refused: it would otherwise starve
    // content-only clients of the data without a word.
    let err = slot1(&fx, &[("SERVERFS_TEXT_CONTENT", "short")]).unwrap_err();
    assert_eq!(err.key().as_deref(), Some("SERVERFS_TEXT_CONTENT"));
    assert_eq!(
        err.to_string(),
        "SERVERFS_TEXT_CONTENT: expected one of full, summary, got \"short\""
    );
}

#[test]
fn bridge_lock_dir_must_be_absolute_when_enabled() {
    let fx = Fixture::new();
    assert_eq!(
        message(slot1(
            &fx,
            &[
                ("SERVERFS_AGENT_BRIDGE_ENABLED", "1"),
                ("SERVERFS_AGENT_LOCK_DIR", "locks")
            ]
        )),
        "SERVERFS_AGENT_LOCK_DIR: must be an absolute path while \
         SERVERFS_AGENT_BRIDGE_ENABLED is on, got \"locks\""
    );
    assert!(slot1(&fx, &[("SERVERFS_AGENT_LOCK_DIR", "locks")]).is_ok());
}

#[test]
fn global_agent_runtimes_are_checked() {
    let fx = Fixture::new();
    let on = ("SERVERFS_AGENT_BRIDGE_ENABLED", "1");
    assert_eq!(
        message(slot1(
            &fx,
            &[
                on,
                ("SERVERFS_AGENT_MODE", "review"),
                ("SERVERFS_AGENT_RUNTIMES", "fake,FAKE")
            ]
        )),
        "SERVERFS_AGENT_RUNTIMES: agent runtime \"fake\" is listed more than once"
    );
    assert_eq!(
        message(slot1(
            &fx,
            &[
                on,
                ("SERVERFS_AGENT_MODE", "review"),
                ("SERVERFS_AGENT_RUNTIMES", "gemini")
            ]
        )),
        "SERVERFS_AGENT_RUNTIMES: unknown agent runtime \"gemini\" \
         (expected codex, claude, qoder, fake or acp-<name>)"
    );
    assert_eq!(
        message(slot1(&fx, &[on, ("SERVERFS_AGENT_RUNTIMES", "fake")])),
        "SERVERFS_AGENT_RUNTIMES: agent runtimes are listed but SERVERFS_AGENT_MODE is \"disabled\""
    );
    assert_eq!(
        message(slot1(&fx, &[on, ("SERVERFS_AGENT_MODE", "review")])),
        "SERVERFS_AGENT_MODE: agent mode \"review\" needs at least one runtime in \
         SERVERFS_AGENT_RUNTIMES"
    );
    assert_eq!(
        message(slot1(
            &fx,
            &[
                ("SERVERFS_AGENT_MODE", "review"),
                ("SERVERFS_AGENT_RUNTIMES", "fake")
            ]
        )),
        "SERVERFS_AGENT_MODE: workdir \"one\": agent mode \"review\" needs the Agent Bridge: \
         set SERVERFS_AGENT_BRIDGE_ENABLED to true"
    );
}

#[test]
fn slot_overrides() {
    let fx = Fixture::new();
    fx.slot(1);
    fx.slot(3);
    let config = fx
        .env_config(&[
            ("SERVERFS_EXTRA_DENY_GLOBS", "*.log,tmp/**"),
            ("SERVERFS_DISABLE_DEFAULT_DENY", "true"),
            ("SERVERFS_MAX_READ_LINES", "10"),
            ("WORKDIR_01_ALIAS", "  one "),
            ("WORKDIR_01_DESCRIPTION", "  First  "),
            ("WORKDIR_01_READ_ONLY", ""),
            ("WORKDIR_03_ALIAS", "three"),
            ("WORKDIR_03_DESCRIPTION", "   "),
            ("WORKDIR_03_READ_ONLY", "False"),
            ("WORKDIR_03_ALLOW_HIDDEN", "1"),
            ("WORKDIR_03_DISABLE_DEFAULT_DENY", "no"),
            ("WORKDIR_03_EXTRA_DENY_GLOBS", "secret*, *.log"),
            ("WORKDIR_03_MAX_READ_LINES", "20"),
            ("WORKDIR_03_MAX_READ_BYTES", "4096"),
            ("WORKDIR_03_MAX_WRITE_BYTES", "5"),
            ("WORKDIR_03_BINARY_TRANSFER_ENABLED", "yes"),
            ("WORKDIR_03_MAX_BINARY_TRANSFER_BYTES", "6"),
            ("WORKDIR_03_READ_HARDLINKED_FILES", "no"),
            // Compose-only: the server ignores it.
            ("WORKDIR_03_PATH", "/host/somewhere"),
        ])
        .unwrap();
    let [one, three] = [&config.workdirs[0], &config.workdirs[1]];
    assert_eq!(one.alias.as_str(), "one");
    assert_eq!(one.description.as_deref(), Some("First"));
    assert_eq!(
        (
            one.read_only,
            one.default_deny,
            one.max_read_lines,
            one.legacy_slot
        ),
        (true, false, 10, Some(1))
    );
    assert_eq!(one.deny, ["*.log", "tmp/**"]);
    assert_eq!(three.root, fx.join("03"));
    assert_eq!(three.description, None);
    assert_eq!(
        (
            three.read_only,
            three.allow_hidden,
            three.default_deny,
            three.binary_transfer,
            three.read_hardlinked_files
        ),
        (false, true, true, true, false)
    );
    // Slot 01 inherits the container default.
    assert!(one.read_hardlinked_files);
    assert_eq!(three.deny, ["*.log", "tmp/**", "secret*"]);
    assert_eq!(
        (
            three.max_read_lines,
            three.max_read_bytes,
            three.max_write_bytes,
            three.max_binary_transfer_bytes,
            three.legacy_slot
        ),
        (20, 4096, 5, 6, Some(3))
    );
}

#[test]
fn slot_values_are_strict_and_named() {
    let fx = Fixture::new();
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_01_MAX_READ_BYTES", "abc")])),
        "WORKDIR_01_MAX_READ_BYTES: expected a positive integer, got \"abc\""
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_01_READ_ONLY", "ro")])),
        "WORKDIR_01_READ_ONLY: expected a boolean (true, false, 1, 0, yes, no, on or off), got \"ro\""
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_01_MAX_READ_LINES", "100001")])),
        "WORKDIR_01_MAX_READ_LINES: must be between 1 and 100000, got 100001"
    );
    assert!(
        message(slot1(&fx, &[("WORKDIR_01_EXTRA_DENY_GLOBS", "ok,[x")]))
            .starts_with("WORKDIR_01_EXTRA_DENY_GLOBS: item 2 (\"[x\") is not a valid glob: ")
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_01_AGENT_MODE", "on")])),
        "WORKDIR_01_AGENT_MODE: expected one of disabled, review, workspace-write, got \"on\""
    );
    fx.slot(2);
    assert_eq!(
        message(fx.env_config(&[("WORKDIR_01_ALIAS", "one"), ("WORKDIR_02_ALIAS", "2nd")])),
        "WORKDIR_02_ALIAS: \"2nd\" is not a valid workdir alias \
         (a letter, then at most 31 letters, digits, '_' or '-')"
    );
    assert_eq!(
        message(fx.env_config(&[("WORKDIR_01_ALIAS", "one"), ("WORKDIR_02_ALIAS", "ONE")])),
        "WORKDIR_02_ALIAS \"ONE\" duplicates \"one\" from WORKDIR_01_ALIAS \
         (aliases are unique ignoring case)"
    );
}

#[test]
fn approval_settings_from_variables() {
    let fx = Fixture::new();
    fx.slot(1);
    fx.slot(2);
    let config = fx
        .env_config(&[
            ("SERVERFS_AGENT_APPROVALS", "Human"),
            ("SERVERFS_AGENT_APPROVAL_PATHS", "redacted"),
            ("WORKDIR_01_ALIAS", "one"),
            ("WORKDIR_02_ALIAS", "two"),
            ("WORKDIR_02_AGENT_APPROVALS", "human-preferred"),
            ("WORKDIR_02_AGENT_APPROVAL_PATHS", " INFORMATIVE "),
        ])
        .unwrap();
    let settings: Vec<_> = config
        .workdirs
        .iter()
        .map(|w| (w.approvals, w.approval_paths))
        .collect();
    assert_eq!(
        settings,
        [
            (crate::ApprovalPolicy::Human, crate::ApprovalPaths::Redacted),
            (
                crate::ApprovalPolicy::HumanPreferred,
                crate::ApprovalPaths::Informative
            ),
        ]
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_01_AGENT_APPROVALS", "user")])),
        "WORKDIR_01_AGENT_APPROVALS: expected one of \"model\", \"human\", \
         \"human-preferred\", got \"user\""
    );
    assert_eq!(
        message(slot1(&fx, &[("SERVERFS_AGENT_APPROVAL_PATHS", "none")])),
        "SERVERFS_AGENT_APPROVAL_PATHS: expected one of \"informative\", \"redacted\", \
         got \"none\""
    );
}

#[test]
fn slot_agent_policy() {
    let fx = Fixture::new();
    let on = ("SERVERFS_AGENT_BRIDGE_ENABLED", "true");
    assert_eq!(
        message(slot1(
            &fx,
            &[
                on,
                ("WORKDIR_01_AGENT_MODE", "workspace-write"),
                ("WORKDIR_01_AGENT_RUNTIMES", "codex")
            ]
        )),
        "WORKDIR_01_AGENT_MODE: workdir \"one\": agent mode \"workspace-write\" requires a \
         writable workdir: set WORKDIR_01_READ_ONLY to false"
    );
    assert_eq!(
        message(slot1(
            &fx,
            &[
                on,
                ("WORKDIR_01_AGENT_MODE", "review"),
                ("WORKDIR_01_AGENT_RUNTIMES", "claude")
            ]
        )),
        "WORKDIR_01_AGENT_RUNTIMES: workdir \"one\": runtime \"claude\" requires agent mode \
         \"workspace-write\", but the mode is \"review\" (WORKDIR_01_AGENT_MODE)"
    );
    let ok = slot1(
        &fx,
        &[
            on,
            ("WORKDIR_01_READ_ONLY", "false"),
            ("WORKDIR_01_AGENT_MODE", "workspace-write"),
            ("WORKDIR_01_AGENT_RUNTIMES", "qoder,codex"),
        ],
    )
    .unwrap();
    assert_eq!(
        ok.workdirs[0].agent_runtimes,
        [AgentRuntime::Codex, AgentRuntime::Qoder]
    );
    // An explicit `disabled` resets the inherited runtimes.
    fx.slot(2);
    let reset = fx
        .env_config(&[
            on,
            ("SERVERFS_AGENT_MODE", "review"),
            ("SERVERFS_AGENT_RUNTIMES", "fake"),
            ("WORKDIR_01_ALIAS", "one"),
            ("WORKDIR_02_ALIAS", "two"),
            ("WORKDIR_02_AGENT_MODE", "disabled"),
        ])
        .unwrap();
    assert_eq!(
        (
            reset.workdirs[0].agent_mode,
            reset.workdirs[0].agent_runtimes.clone()
        ),
        (AgentMode::Review, vec![AgentRuntime::Fake])
    );
    assert_eq!(
        (
            reset.workdirs[1].agent_mode,
            reset.workdirs[1].agent_runtimes.clone()
        ),
        (AgentMode::Disabled, vec![])
    );
}

// --- the Bridge daemon's settings ----------------------------------------

/// The Bridge's integer variables: name, smallest and largest value.
const BRIDGE_INTS: [(&str, i64, i64); 7] = [
    ("SERVERFS_AGENT_MAX_ACTIVE_TASKS", 1, 64),
    ("SERVERFS_AGENT_TASK_TIMEOUT_SECONDS", 1, 604_800),
    ("SERVERFS_AGENT_INTERACTION_TIMEOUT_SECONDS", 1, 604_800),
    ("SERVERFS_AGENT_TASK_RETENTION_HOURS", 1, 8_760),
    (
        "SERVERFS_AGENT_RESULT_SPOOL_THRESHOLD_BYTES",
        1_024,
        8_388_608,
    ),
    ("SERVERFS_AGENT_PEER_UID", 0, 4_294_967_294),
    ("SERVERFS_AGENT_PEER_GID", 0, 4_294_967_294),
];

#[test]
fn bridge_ints_are_bounded_and_named() {
    let fx = Fixture::new();
    for (name, min, max) in BRIDGE_INTS {
        for ok in [min, max] {
            let value = ok.to_string();
            assert!(slot1(&fx, &[(name, &value)]).is_ok(), "{name}={ok}");
        }
        let above = (max + 1).to_string();
        assert_eq!(
            message(slot1(&fx, &[(name, &above)])),
            format!("{name}: must be between {min} and {max}, got {above}")
        );
    }
    // Just below the minimum: the strict syntax refuses 0 (or a negative
    // id) before any bound is checked; 1023 is well-formed but too small.
    let below = [
        (
            "SERVERFS_AGENT_MAX_ACTIVE_TASKS",
            "0",
            "expected a positive integer, got \"0\"",
        ),
        (
            "SERVERFS_AGENT_TASK_TIMEOUT_SECONDS",
            "0",
            "expected a positive integer, got \"0\"",
        ),
        (
            "SERVERFS_AGENT_INTERACTION_TIMEOUT_SECONDS",
            "0",
            "expected a positive integer, got \"0\"",
        ),
        (
            "SERVERFS_AGENT_TASK_RETENTION_HOURS",
            "0",
            "expected a positive integer, got \"0\"",
        ),
        (
            "SERVERFS_AGENT_RESULT_SPOOL_THRESHOLD_BYTES",
            "1023",
            "must be between 1024 and 8388608, got 1023",
        ),
        (
            "SERVERFS_AGENT_PEER_UID",
            "-1",
            "expected a non-negative integer, got \"-1\"",
        ),
        (
            "SERVERFS_AGENT_PEER_GID",
            "-1",
            "expected a non-negative integer, got \"-1\"",
        ),
    ];
    for (name, value, expected) in below {
        assert_eq!(
            message(slot1(&fx, &[(name, value)])),
            format!("{name}: {expected}")
        );
    }
    let longest = slot1(&fx, &[("SERVERFS_AGENT_TASK_RETENTION_HOURS", "8760")]).unwrap();
    assert_eq!(longest.agent.retention_seconds, 31_536_000);
}

#[test]
fn malformed_bridge_ints_abort_and_empty_means_the_default() {
    let fx = Fixture::new();
    let defaults = slot1(&fx, &[]).unwrap().agent;
    for (name, _, _) in BRIDGE_INTS {
        let expected = if name.starts_with("SERVERFS_AGENT_PEER_") {
            "a non-negative integer"
        } else {
            "a positive integer"
        };
        for bad in ["abc", "1.5", "4k", "0x10", "1e3", "1_000"] {
            assert_eq!(
                message(slot1(&fx, &[(name, bad)])),
                format!("{name}: expected {expected}, got {bad:?}")
            );
        }
        for empty in ["", "  "] {
            assert_eq!(slot1(&fx, &[(name, empty)]).unwrap().agent, defaults);
        }
    }
}

#[test]
fn bridge_state_dir_defaults_to_xdg_state_home_then_home() {
    let fx = Fixture::new();
    let state_dir = |pairs: &[(&str, &str)]| slot1(&fx, pairs).unwrap().agent.state_dir;
    assert_eq!(
        state_dir(&[
            ("XDG_RUNTIME_DIR", "/run/user/7"),
            ("XDG_STATE_HOME", "/st"),
            ("HOME", "/h")
        ]),
        PathBuf::from("/st/serverfs-agent-bridge")
    );
    // Relative XDG values do not count.
    assert_eq!(
        state_dir(&[("XDG_STATE_HOME", "st"), ("HOME", "/h")]),
        PathBuf::from("/h/.local/state/serverfs-agent-bridge")
    );
    assert_eq!(
        state_dir(&[("HOME", "h")]),
        PathBuf::from("serverfs-agent-bridge")
    );
    assert_eq!(
        state_dir(&[
            ("SERVERFS_AGENT_BRIDGE_STATE_DIR", "/srv/state"),
            ("XDG_STATE_HOME", "/st")
        ]),
        PathBuf::from("/srv/state")
    );
    assert_eq!(
        state_dir(&[("SERVERFS_AGENT_BRIDGE_STATE_DIR", " "), ("HOME", "/h")]),
        PathBuf::from("/h/.local/state/serverfs-agent-bridge")
    );
}

#[test]
fn bridge_state_dir_must_be_absolute_when_enabled() {
    let fx = Fixture::new();
    let on = ("SERVERFS_AGENT_BRIDGE_ENABLED", "1");
    assert_eq!(
        message(slot1(
            &fx,
            &[on, ("SERVERFS_AGENT_BRIDGE_STATE_DIR", "state")]
        )),
        "SERVERFS_AGENT_BRIDGE_STATE_DIR: must be an absolute path while \
         SERVERFS_AGENT_BRIDGE_ENABLED is on, got \"state\""
    );
    assert!(slot1(&fx, &[("SERVERFS_AGENT_BRIDGE_STATE_DIR", "state")]).is_ok());
    // An unresolvable default does not stop serverfs, which never uses the
    // state directory; the Bridge refuses it itself.
    assert_eq!(
        slot1(&fx, &[on]).unwrap().agent.state_dir,
        PathBuf::from("serverfs-agent-bridge")
    );
}

#[test]
fn use_proxy_means_every_runtime_some_workdir_allows() {
    let fx = Fixture::new();
    for slot in 1..=3 {
        fx.slot(slot);
    }
    let proxied = |use_proxy: &str| {
        fx.env_config(&[
            ("SERVERFS_AGENT_BRIDGE_ENABLED", "true"),
            ("SERVERFS_AGENT_USE_PROXY", use_proxy),
            ("WORKDIR_01_ALIAS", "one"),
            ("WORKDIR_01_READ_ONLY", "false"),
            ("WORKDIR_01_AGENT_MODE", "workspace-write"),
            ("WORKDIR_01_AGENT_RUNTIMES", "qoder,fake"),
            ("WORKDIR_02_ALIAS", "two"),
            ("WORKDIR_02_READ_ONLY", "false"),
            ("WORKDIR_02_AGENT_MODE", "workspace-write"),
            ("WORKDIR_02_AGENT_RUNTIMES", "acp-zed,FAKE"),
            (
                "SERVERFS_ACP_PROFILES_JSON",
                r#"[{"id": "zed", "command": "/opt/zed/bin/zed"}]"#,
            ),
            ("WORKDIR_03_ALIAS", "three"),
        ])
        .map(|config| config.agent.proxy_runtimes)
    };
    assert_eq!(
        proxied(" TRUE ").unwrap(),
        [
            AgentRuntime::parse("acp-zed").unwrap(),
            AgentRuntime::Fake,
            AgentRuntime::Qoder
        ]
    );
    assert_eq!(proxied("off").unwrap(), []);
    assert_eq!(proxied("").unwrap(), []);
    assert_eq!(
        message(proxied("proxy")),
        "SERVERFS_AGENT_USE_PROXY: expected a boolean (true, false, 1, 0, yes, no, on or off), \
         got \"proxy\""
    );
    // Nothing to route is not an error: the switch is global.
    let fx = Fixture::new();
    assert_eq!(
        slot1(&fx, &[("SERVERFS_AGENT_USE_PROXY", "1")])
            .unwrap()
            .agent
            .proxy_runtimes,
        []
    );
}

#[test]
fn codex_variables_are_strict() {
    let fx = Fixture::new();
    let cases = [
        ("SERVERFS_CODEX_TRANSPORT", "socket", "one of stdio, daemon"),
        (
            "SERVERFS_QODER_AUTH",
            "token",
            "one of \"login\", \"personal-access-token\"",
        ),
        (
            "SERVERFS_AGENT_PROVIDER_CGROUP",
            "sys/fs/cgroup",
            "\"auto\", \"off\" or an absolute path without \"..\" (a cgroup v2 directory)",
        ),
        (
            "SERVERFS_CODEX_AUTOSTART",
            "maybe",
            "a boolean (true, false, 1, 0, yes, no, on or off)",
        ),
        (
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
            "soon",
            "a positive number of seconds, such as 10 or 2.5",
        ),
        (
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
            "0",
            "a positive number of seconds, such as 10 or 2.5",
        ),
        (
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
            "1e3",
            "a positive number of seconds, such as 10 or 2.5",
        ),
        (
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
            "10s",
            "a positive number of seconds, such as 10 or 2.5",
        ),
        (
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
            "0.05",
            "a number of seconds from 0.1 to 600",
        ),
        (
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
            "601",
            "a number of seconds from 0.1 to 600",
        ),
        ("SERVERFS_CODEX_HOME", "codex-home", "an absolute path"),
        (
            "SERVERFS_CODEX_BIN",
            "bin/codex",
            "an absolute path, or a bare command name looked up on PATH \
             (no '/' unless the path is absolute)",
        ),
        (
            "SERVERFS_CODEX_BIN",
            "co\ndex",
            "a command name or path without NUL, CR or LF characters",
        ),
    ];
    for (name, value, expected) in cases {
        assert_eq!(
            message(slot1(&fx, &[(name, value)])),
            format!("{name}: expected {expected}, got {value:?}")
        );
    }
    assert_eq!(
        message(slot1(&fx, &[("SERVERFS_CODEX_AUTOSTART", "true")])),
        "SERVERFS_CODEX_AUTOSTART: codex_autostart needs SERVERFS_CODEX_TRANSPORT = \"daemon\": \
         with \"stdio\" the Bridge runs its own app-server for each task, so there is no \
         daemon to start"
    );
    assert_eq!(
        message(slot1(
            &fx,
            &[
                ("SERVERFS_CODEX_TRANSPORT", "stdio"),
                ("SERVERFS_CODEX_AUTOSTART", "yes")
            ]
        )),
        "SERVERFS_CODEX_AUTOSTART: codex_autostart needs SERVERFS_CODEX_TRANSPORT = \"daemon\": \
         with \"stdio\" the Bridge runs its own app-server for each task, so there is no \
         daemon to start"
    );
}

#[test]
fn empty_codex_variables_mean_the_defaults() {
    let fx = Fixture::new();
    let config = slot1(
        &fx,
        &[
            ("SERVERFS_CODEX_BIN", ""),
            ("SERVERFS_CODEX_HOME", " "),
            ("SERVERFS_CODEX_TRANSPORT", ""),
            ("SERVERFS_CODEX_AUTOSTART", " "),
            ("SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS", ""),
            // Codex's own variable is the Bridge's business, never read here.
            ("CODEX_HOME", "/h/.codex"),
        ],
    )
    .unwrap();
    assert_eq!(config.agent.codex, CodexSettings::default());
    let codex = |pairs: &[(&str, &str)]| slot1(&fx, pairs).unwrap().agent.codex;
    assert_eq!(
        codex(&[("SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS", "600")]).request_timeout_ms,
        600_000
    );
    assert_eq!(
        codex(&[("SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS", " +.1 ")]).request_timeout_ms,
        100
    );
    assert_eq!(
        codex(&[
            ("SERVERFS_CODEX_TRANSPORT", "DAEMON"),
            ("SERVERFS_CODEX_AUTOSTART", "0")
        ]),
        CodexSettings {
            transport: CodexTransport::Daemon,
            ..CodexSettings::default()
        }
    );
}

#[test]
fn codex_passthrough_variable_is_read() {
    let fx = Fixture::new();
    let codex = |pairs: &[(&str, &str)]| slot1(&fx, pairs).unwrap().agent.codex;
    assert_eq!(
        codex(&[(
            "SERVERFS_CODEX_ENV_PASSTHROUGH",
            "OPENAI_API_KEY, OPENAI_BASE_URL "
        )])
        .env_passthrough,
        ["OPENAI_API_KEY", "OPENAI_BASE_URL"]
    );
    assert_eq!(
        codex(&[("SERVERFS_CODEX_ENV_PASSTHROUGH", " ")]),
        CodexSettings::default()
    );
    assert_eq!(
        message(slot1(
            &fx,
            &[
                ("SERVERFS_CODEX_TRANSPORT", "daemon"),
                ("SERVERFS_CODEX_ENV_PASSTHROUGH", "OPENAI_API_KEY"),
            ]
        )),
        "SERVERFS_CODEX_ENV_PASSTHROUGH: codex_env_passthrough needs SERVERFS_CODEX_TRANSPORT = \
         \"stdio\": the managed daemon keeps the environment it was started with, so no \
         variable can be handed to it"
    );
}

/// The variables of the two stream-json runtimes, and their defaults.
const CLI_RUNTIMES: [(&str, &str); 2] = [("CLAUDE", "claude"), ("QODER", "qodercli")];

#[test]
fn claude_and_qoder_variables_are_read() {
    let fx = Fixture::new();
    for (prefix, default_bin) in CLI_RUNTIMES {
        let var = |field: &str| format!("SERVERFS_{prefix}_{field}");
        let pick = |config: crate::Config| match prefix {
            "CLAUDE" => config.agent.claude,
            _ => config.agent.qoder.cli,
        };
        let (bin, timeout, passthrough) = (
            var("BIN"),
            var("REQUEST_TIMEOUT_SECONDS"),
            var("ENV_PASSTHROUGH"),
        );
        let set = pick(
            slot1(
                &fx,
                &[
                    (bin.as_str(), " /usr/local/bin/cli "),
                    (timeout.as_str(), "+.1"),
                    (passthrough.as_str(), "B_KEY,A_KEY"),
                ],
            )
            .unwrap(),
        );
        assert_eq!(
            set,
            CliRuntimeSettings {
                bin: "/usr/local/bin/cli".to_owned(),
                request_timeout_ms: 100,
                // As written, not sorted.
                env_passthrough: vec!["B_KEY".to_owned(), "A_KEY".to_owned()],
            },
            "{prefix}"
        );
        // Empty means the default, as for every Bridge variable.
        let empty = pick(
            slot1(
                &fx,
                &[
                    (bin.as_str(), ""),
                    (timeout.as_str(), " "),
                    (passthrough.as_str(), "  "),
                ],
            )
            .unwrap(),
        );
        assert_eq!(
            empty,
            CliRuntimeSettings {
                bin: default_bin.to_owned(),
                request_timeout_ms: 60_000,
                env_passthrough: Vec::new(),
            },
            "{prefix}"
        );
        assert_eq!(
            pick(slot1(&fx, &[(timeout.as_str(), "600")]).unwrap()).request_timeout_ms,
            600_000
        );
    }
}

#[test]
fn claude_and_qoder_variables_are_strict() {
    let fx = Fixture::new();
    for (prefix, _) in CLI_RUNTIMES {
        let var = |field: &str| format!("SERVERFS_{prefix}_{field}");
        let cases = [
            (
                "BIN",
                "bin/cli",
                "an absolute path, or a bare command name looked up on PATH \
                               (no '/' unless the path is absolute)",
            ),
            (
                "BIN",
                "./cli",
                "an absolute path, or a bare command name looked up on PATH \
                             (no '/' unless the path is absolute)",
            ),
            (
                "BIN",
                "c\rli",
                "a command name or path without NUL, CR or LF characters",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "soon",
                "a positive number of seconds, such as 10 or 2.5",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "0",
                "a positive number of seconds, such as 10 or 2.5",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "-5",
                "a positive number of seconds, such as 10 or 2.5",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "6e1",
                "a positive number of seconds, such as 10 or 2.5",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "60s",
                "a positive number of seconds, such as 10 or 2.5",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "0.09",
                "a number of seconds from 0.1 to 600",
            ),
            (
                "REQUEST_TIMEOUT_SECONDS",
                "600.001",
                "a number of seconds from 0.1 to 600",
            ),
            (
                "ENV_PASSTHROUGH",
                "A,,B",
                "a comma-separated list without empty items",
            ),
            (
                "ENV_PASSTHROUGH",
                "A_KEY,",
                "a comma-separated list without empty items",
            ),
            (
                "ENV_PASSTHROUGH",
                ", A_KEY",
                "a comma-separated list without empty items",
            ),
        ];
        for (field, value, expected) in cases {
            let name = var(field);
            assert_eq!(
                message(slot1(&fx, &[(name.as_str(), value)])),
                format!("{name}: expected {expected}, got {value:?}")
            );
        }
    }
}

#[test]
fn passthrough_variables_refuse_bad_and_reserved_names() {
    let fx = Fixture::new();
    for name in [
        "SERVERFS_CODEX_ENV_PASSTHROUGH",
        "SERVERFS_CLAUDE_ENV_PASSTHROUGH",
        "SERVERFS_QODER_ENV_PASSTHROUGH",
    ] {
        for (value, refused, problem) in [
            (
                "ANTHROPIC_API_KEY, A-B",
                "A-B",
                PassthroughProblem::NotAName,
            ),
            ("A=B", "A=B", PassthroughProblem::NotAName),
            ("OK, 9LIVES", "9LIVES", PassthroughProblem::NotAName),
            ("https_proxy", "https_proxy", PassthroughProblem::Proxy),
            ("NO_PROXY", "NO_PROXY", PassthroughProblem::Proxy),
            (
                "Serverfs_Config",
                "Serverfs_Config",
                PassthroughProblem::ServerfsSetting,
            ),
            ("HOME", "HOME", PassthroughProblem::SetByBridge),
            ("LD_PRELOAD", "LD_PRELOAD", PassthroughProblem::Loader),
            (
                "A_KEY, B_KEY, A_KEY",
                "A_KEY",
                PassthroughProblem::Duplicate,
            ),
        ] {
            let err = slot1(&fx, &[(name, value)]).unwrap_err();
            assert_eq!(
                err,
                ConfigError::InvalidPassthrough {
                    key: name.to_owned(),
                    name: refused.to_owned(),
                    problem,
                },
                "{name}={value}"
            );
            assert_eq!(err.key().as_deref(), Some(name));
        }
    }
}

#[test]
fn toml_mode_ignores_the_runtime_variables() {
    // As for Codex: with a file, SERVERFS_* variables are not read at all.
    let fx = Fixture::new();
    fx.mkdir("a");
    let file = fx.file(
        "serverfs.toml",
        "[agent]\nclaude_bin = \"/opt/claude\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n",
    );
    let vars = crate::test_support::env(&[
        ("SERVERFS_CLAUDE_BIN", "/elsewhere/claude"),
        ("SERVERFS_CLAUDE_ENV_PASSTHROUGH", "HTTPS_PROXY"),
        ("SERVERFS_QODER_BIN", "bin/qoder"),
        ("SERVERFS_CODEX_ENV_PASSTHROUGH", "A,,B"),
    ]);
    let config = crate::Config::load(&crate::ConfigSource::Toml(file), &[], &vars).unwrap();
    assert_eq!(config.agent.claude.bin, "/opt/claude");
    assert_eq!(config.agent.claude.env_passthrough, Vec::<String>::new());
    assert_eq!(config.agent.qoder, QoderSettings::default());
    assert_eq!(config.agent.codex, CodexSettings::default());
}

#[test]
fn workdir_mode_reads_the_runtime_variables() {
    let fx = Fixture::new();
    let dir = fx.mkdir("a");
    let vars = crate::test_support::env(&[
        ("SERVERFS_CLAUDE_BIN", "claude-canary"),
        (
            "SERVERFS_QODER_ENV_PASSTHROUGH",
            "QODER_PERSONAL_ACCESS_TOKEN",
        ),
        ("SERVERFS_CODEX_ENV_PASSTHROUGH", "OPENAI_API_KEY"),
    ]);
    let spec = format!("a={}", dir.display());
    let config = crate::Config::load(&crate::ConfigSource::Cli(vec![spec]), &[], &vars).unwrap();
    assert_eq!(config.agent.claude.bin, "claude-canary");
    assert_eq!(
        config.agent.qoder.cli.env_passthrough,
        ["QODER_PERSONAL_ACCESS_TOKEN"]
    );
    assert_eq!(config.agent.codex.env_passthrough, ["OPENAI_API_KEY"]);
}

// --- slot states (spec §2.4) ---------------------------------------------

#[test]
fn state_a_placeholder_without_alias_is_disabled() {
    let fx = Fixture::new();
    fx.placeholder(2);
    let config = slot1(&fx, &[]).unwrap();
    assert_eq!(config.workdirs.len(), 1);
    assert_eq!(config.workdirs[0].legacy_slot, Some(1));
}

#[test]
fn a_missing_slot_root_without_alias_is_disabled() {
    let fx = Fixture::new();
    // Slots 02..16 do not exist at all.
    assert_eq!(slot1(&fx, &[]).unwrap().workdirs.len(), 1);
}

#[test]
fn state_b_alias_on_the_placeholder_is_an_error() {
    let fx = Fixture::new();
    let root = fx.placeholder(2);
    let err = slot1(&fx, &[("WORKDIR_02_ALIAS", "two")]).unwrap_err();
    assert_eq!(
        err,
        ConfigError::Slot {
            slot: 2,
            root: root.clone(),
            alias: Some("two".to_owned()),
            problem: SlotProblem::PlaceholderWithAlias,
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "WORKDIR_02_ALIAS is \"two\" but the slot root {root:?} is the empty placeholder \
             mount: set WORKDIR_02_PATH to the host directory to expose"
        )
    );
    assert_eq!(err.key().as_deref(), Some("WORKDIR_02_ALIAS"));
}

#[test]
fn state_c_mounted_directory_without_alias_is_an_error() {
    let fx = Fixture::new();
    let root = fx.slot(4);
    let text = message(slot1(&fx, &[]));
    assert_eq!(
        text,
        format!(
            "WORKDIR_04: the slot root {root:?} is a mounted directory but WORKDIR_04_ALIAS is \
             not set: set WORKDIR_04_ALIAS (or unset WORKDIR_04_PATH)"
        )
    );
    // An empty directory counts as mounted too (no sentinel).
    let fx = Fixture::new();
    fx.mkdir("05");
    assert!(message(slot1(&fx, &[])).contains("WORKDIR_05_ALIAS is not set"));
}

#[test]
fn state_d_alias_on_a_real_directory_is_enabled() {
    let fx = Fixture::new();
    let root = fx.slot(16);
    let config = fx.env_config(&[("WORKDIR_16_ALIAS", "last")]).unwrap();
    assert_eq!(config.workdirs[0].root, root);
    assert_eq!(config.workdirs[0].legacy_slot, Some(16));
}

#[test]
fn alias_with_a_missing_root_names_the_alias_variable() {
    let fx = Fixture::new();
    let err = slot1(&fx, &[("WORKDIR_07_ALIAS", "seven")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "WORKDIR_07_ALIAS is \"seven\" but the slot root {:?} does not exist (bind the host \
             directory there, e.g. with WORKDIR_07_PATH in Compose)",
            fx.join("07")
        )
    );
    assert_eq!(err.key().as_deref(), Some("WORKDIR_07_ALIAS"));
}

#[test]
fn sentinel_beside_other_entries_is_a_reserved_file_conflict() {
    for alias in [None, Some("two")] {
        let fx = Fixture::new();
        let root = fx.placeholder(2);
        fs::write(root.join("data.txt"), "x").unwrap();
        let mut pairs = vec![];
        if let Some(alias) = alias {
            pairs.push(("WORKDIR_02_ALIAS", alias));
        }
        let err = slot1(&fx, &pairs).unwrap_err();
        let ConfigError::Slot { slot, problem, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!((*slot, problem), (2, &SlotProblem::ReservedFile));
        assert!(
            err.to_string().contains("reserved file .serverfs-disabled"),
            "{err}"
        );
    }
    // A sentinel that is not a regular file is a conflict as well.
    let fx = Fixture::new();
    fx.mkdir("02/.serverfs-disabled");
    assert!(matches!(
        slot1(&fx, &[]),
        Err(ConfigError::Slot {
            problem: SlotProblem::ReservedFile,
            ..
        })
    ));
}

#[test]
fn symlinked_or_file_slot_roots_are_errors() {
    let fx = Fixture::new();
    let target = fx.mkdir("elsewhere");
    fx.symlink(&target, "02");
    let err = slot1(&fx, &[("WORKDIR_02_ALIAS", "two")]).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Slot {
                slot: 2,
                problem: SlotProblem::Symlink,
                ..
            }
        ),
        "{err:?}"
    );
    // Even a link to the placeholder: the slot root must be a real directory.
    let fx = Fixture::new();
    let placeholder = fx.placeholder(9);
    fs::rename(&placeholder, fx.join("ph")).unwrap();
    fx.symlink(&fx.join("ph"), "09");
    assert!(matches!(
        slot1(&fx, &[]),
        Err(ConfigError::Slot {
            slot: 9,
            problem: SlotProblem::Symlink,
            ..
        })
    ));
    let fx = Fixture::new();
    fx.file("03", "not a dir");
    assert!(matches!(
        slot1(&fx, &[]),
        Err(ConfigError::Slot {
            slot: 3,
            problem: SlotProblem::NotADirectory,
            ..
        })
    ));
}

#[test]
fn a_disabled_slot_must_not_grant_anything() {
    let fx = Fixture::new();
    fx.placeholder(2);
    let cases = [
        ("WORKDIR_02_READ_ONLY", "false", "be made writable"),
        ("WORKDIR_02_AGENT_MODE", "review", "enable an agent mode"),
        ("WORKDIR_02_AGENT_RUNTIMES", "fake", "list agent runtimes"),
        (
            "WORKDIR_02_BINARY_TRANSFER_ENABLED",
            "true",
            "enable binary transfer",
        ),
        (
            "WORKDIR_02_READ_HARDLINKED_FILES",
            "true",
            "read hard-linked files",
        ),
    ];
    for (name, value, what) in cases {
        assert_eq!(
            message(slot1(&fx, &[(name, value)])),
            format!(
                "{name}: slot 02 is disabled (WORKDIR_02_ALIAS is not set) and must not {what}"
            )
        );
        // The same on a slot whose root does not exist at all.
        let missing = name.replace("_02_", "_05_");
        assert!(
            message(slot1(&fx, &[(&missing, value)]))
                .starts_with(&format!("{missing}: slot 05 is disabled"))
        );
    }
    // Harmless settings are fine on a disabled slot.
    assert!(
        slot1(
            &fx,
            &[
                ("WORKDIR_02_READ_ONLY", "true"),
                ("WORKDIR_02_AGENT_MODE", "disabled"),
                ("WORKDIR_02_BINARY_TRANSFER_ENABLED", "false"),
                ("WORKDIR_02_READ_HARDLINKED_FILES", "false"),
                ("WORKDIR_02_DESCRIPTION", "spare"),
            ]
        )
        .is_ok()
    );
}

#[test]
fn invalid_values_on_a_disabled_slot_are_still_errors() {
    let fx = Fixture::new();
    fx.placeholder(2);
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_02_READ_ONLY", "maybe")])),
        "WORKDIR_02_READ_ONLY: expected a boolean (true, false, 1, 0, yes, no, on or off), got \"maybe\""
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_02_MAX_READ_BYTES", "abc")])),
        "WORKDIR_02_MAX_READ_BYTES: expected a positive integer, got \"abc\""
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_02_MAX_READ_BYTES", "10")])),
        "WORKDIR_02_MAX_READ_BYTES: must be between 1024 and 67108864, got 10"
    );
    assert_eq!(
        message(slot1(&fx, &[("WORKDIR_02_AGENT_RUNTIMES", "gemini")])),
        "WORKDIR_02_AGENT_RUNTIMES: unknown agent runtime \"gemini\" \
         (expected codex, claude, qoder, fake or acp-<name>)"
    );
}

#[test]
fn all_slots_disabled_is_an_error() {
    let fx = Fixture::new();
    fx.placeholder(1);
    assert_eq!(
        message(fx.env_config(&[("WORKDIR_01_DESCRIPTION", "x")])),
        "no enabled workdir: every slot WORKDIR_01 … WORKDIR_16 is disabled: set \
         WORKDIR_NN_ALIAS and mount the directory at the slot root"
    );
}

#[test]
fn unknown_slot_variables_are_refused() {
    let fx = Fixture::new();
    for name in [
        "WORKDIR_01_READONLY",
        "WORKDIR_01_MAX_LIST_ENTRIES",
        "WORKDIR_01_",
    ] {
        let err = slot1(&fx, &[(name, "x")]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::UnknownVariable { name: n, .. } if n == name),
            "{err:?}"
        );
        assert!(err.to_string().starts_with(&format!(
            "{name}: unknown variable (per-slot names are ALIAS, PATH,"
        )));
    }
    for name in [
        "WORKDIR_17_ALIAS",
        "WORKDIR_00_ALIAS",
        "WORKDIR_1_ALIAS",
        "WORKDIR_001_ALIAS",
    ] {
        assert_eq!(
            message(slot1(&fx, &[(name, "x")])),
            format!(
                "{name}: unknown variable (slots are numbered with two digits, WORKDIR_01 … WORKDIR_16)"
            )
        );
    }
    // Not in the slot namespace at all.
    assert!(
        slot1(
            &fx,
            &[
                ("WORKDIR_ROOT", "x"),
                ("WORKDIRS", "y"),
                ("MY_WORKDIR_01_ALIAS", "z")
            ]
        )
        .is_ok()
    );
}

#[test]
fn workdirs_root_must_be_absolute() {
    let env = crate::test_support::env(&[
        ("SERVERFS_WORKDIRS_ROOT", "relative/dir"),
        ("WORKDIR_01_ALIAS", "one"),
    ]);
    assert_eq!(
        message(crate::Config::load(
            &crate::ConfigSource::Environment,
            &[],
            &env
        )),
        "SERVERFS_WORKDIRS_ROOT: expected an absolute path, got \"relative/dir\""
    );
}

#[test]
fn default_slot_roots_are_under_workdirs() {
    // No SERVERFS_WORKDIRS_ROOT: slot NN is /workdirs/NN, absent on a
    // development machine, so an alias there is the missing-root error.
    if std::path::Path::new("/workdirs").exists() {
        eprintln!("skipped: /workdirs exists on this machine");
        return;
    }
    let env = crate::test_support::env(&[("WORKDIR_03_ALIAS", "three")]);
    let err = crate::Config::load(&crate::ConfigSource::Environment, &[], &env).unwrap_err();
    assert_eq!(
        err,
        ConfigError::Slot {
            slot: 3,
            root: PathBuf::from("/workdirs/03"),
            alias: Some("three".to_owned()),
            problem: SlotProblem::MissingRoot,
        }
    );
}

/// The Agent Bridge on the host of a Compose deployment reads the same
/// variables, with each slot at its `WORKDIR_NN_PATH`, the endpoints in the
/// host directories the agent overlay mounts, and the slots' lease
/// identities, as the container does.
#[test]
fn the_compose_host_side_reads_slots_at_their_host_paths() {
    let fx = Fixture::new();
    let docs = fx.mkdir("srv/docs");
    let code = fx.mkdir("srv/code");
    let socket_dir = fx.mkdir("run/socket");
    let locks = fx.mkdir("run/locks");
    let env = crate::test_support::env(&[
        ("WORKDIR_01_ALIAS", "docs"),
        ("WORKDIR_01_PATH", docs.to_str().unwrap()),
        ("WORKDIR_03_ALIAS", "code"),
        ("WORKDIR_03_PATH", code.to_str().unwrap()),
        ("WORKDIR_03_READ_ONLY", "false"),
        ("WORKDIR_03_AGENT_MODE", "workspace-write"),
        ("WORKDIR_03_AGENT_RUNTIMES", "fake"),
        ("SERVERFS_AGENT_BRIDGE_ENABLED", "true"),
        (
            "SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR",
            socket_dir.to_str().unwrap(),
        ),
        ("SERVERFS_AGENT_LOCK_HOST_DIR", locks.to_str().unwrap()),
        // The container-side endpoints are the overlay's, not the host's.
        (
            "SERVERFS_AGENT_BRIDGE_SOCKET",
            "/run/serverfs-agent-bridge/bridge.sock",
        ),
    ]);
    let config = crate::Config::load(&crate::ConfigSource::ComposeHost, &[], &env).unwrap();
    assert_eq!(config.agent.bridge_socket, socket_dir.join("bridge.sock"));
    assert_eq!(config.agent.lock_dir, locks);
    let roots: Vec<(&str, PathBuf, Option<u8>, bool)> = config
        .workdirs
        .iter()
        .map(|w| (w.alias.as_str(), w.root.clone(), w.legacy_slot, w.read_only))
        .collect();
    assert_eq!(
        roots,
        [
            ("docs", docs, Some(1), true),
            ("code", code, Some(3), false),
        ]
    );
}

#[test]
fn the_compose_host_side_refuses_what_it_cannot_find() {
    let fx = Fixture::new();
    let docs = fx.mkdir("docs");
    let host = |pairs: &[(&str, &str)]| {
        let mut all = vec![
            ("WORKDIR_01_ALIAS", "docs"),
            ("SERVERFS_AGENT_BRIDGE_ENABLED", "true"),
        ];
        all.extend_from_slice(pairs);
        crate::Config::load(
            &crate::ConfigSource::ComposeHost,
            &[],
            &crate::test_support::env(&all),
        )
    };
    let dirs = [
        (
            "SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR",
            "/run/user/1000/sfs",
        ),
        ("SERVERFS_AGENT_LOCK_HOST_DIR", "/run/user/1000/sfs-locks"),
    ];

    // An alias without a host path.
    let error = host(&dirs).unwrap_err();
    assert!(
        matches!(
            error,
            ConfigError::Slot {
                slot: 1,
                problem: SlotProblem::MissingRoot,
                ..
            }
        ),
        "{error:?}"
    );
    // A relative one: Compose would resolve it beside compose.yml, the
    // Bridge cannot know where that is.
    let mut pairs = dirs.to_vec();
    pairs.push(("WORKDIR_01_PATH", "./docs"));
    assert_eq!(
        host(&pairs).unwrap_err().key().as_deref(),
        Some("WORKDIR_01_PATH")
    );
    // Without the host directories of the overlay's mounts.
    let path = docs.to_str().unwrap();
    for missing in dirs {
        let mut pairs: Vec<(&str, &str)> = dirs
            .iter()
            .copied()
            .filter(|pair| *pair != missing)
            .collect();
        pairs.push(("WORKDIR_01_PATH", path));
        let error = host(&pairs).unwrap_err();
        assert_eq!(error.key().as_deref(), Some(missing.0), "{error}");
    }
}
