//! The rules, driven through the TOML source (the environment and CLI
//! sources share this code; their own tests cover their keys).

use std::path::PathBuf;

use pretty_assertions::assert_eq;

use crate::test_support::{Fixture, env, message};
use crate::{AgentMode, AgentRuntime, CodexTransport, Config, ConfigError, QoderAuth, RootProblem};

/// One workdir `a` at `<fixture>/a`, plus `server`, `agent` and `workdir`
/// extra lines.
fn file(fx: &Fixture, server: &str, agent: &str, workdir: &str) -> Result<Config, ConfigError> {
    fx.mkdir("a");
    fx.toml(&format!(
        "[server]\n{server}\n[agent]\n{agent}\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n{workdir}\n"
    ))
}

/// `[agent]` lines enabling the Bridge at absolute paths.
const BRIDGE: &str =
    "enabled = true\nsocket = \"/run/sfs/bridge.sock\"\nlock_dir = \"/run/sfs/locks\"";

/// An `[[agent.acp_profiles]]` table defining `acp-zed`.
const ZED: &str = "[[agent.acp_profiles]]\nid = \"zed\"\ncommand = \"/opt/zed/bin/zed\"";

/// As `file`, with the Bridge off.
fn one(fx: &Fixture, server: &str, workdir: &str) -> Result<Config, ConfigError> {
    file(fx, server, "", workdir)
}

/// As `file`, with the Bridge enabled at absolute paths.
fn with_bridge(fx: &Fixture, server: &str, workdir: &str) -> Result<Config, ConfigError> {
    file(fx, server, BRIDGE, workdir)
}

const SERVER_LIMITS: [(&str, i64, i64); 8] = [
    ("default_list_limit", 1, 100_000),
    ("max_list_entries", 1, 100_000),
    ("default_search_results", 1, 10_000),
    ("max_search_results", 1, 10_000),
    ("max_walk_entries", 1, 100_000_000),
    ("search_timeout_ms", 100, 600_000),
    ("max_edits_per_call", 1, 1_000),
    ("search_max_file_bytes", 1, i64::MAX),
];

const AGENT_LIMITS: [(&str, i64, i64); 8] = [
    ("timeout_ms", 100, 3_600_000),
    ("max_active_tasks", 1, 64),
    ("task_timeout_seconds", 1, 604_800),
    ("interaction_timeout_seconds", 1, 604_800),
    ("retention_hours", 1, 8_760),
    ("result_spool_threshold_bytes", 1_024, 8_388_608),
    ("peer_uid", 0, 4_294_967_294),
    ("peer_gid", 0, 4_294_967_294),
];

const WORKDIR_LIMITS: [(&str, i64, i64); 4] = [
    ("max_read_lines", 1, 100_000),
    ("max_read_bytes", 1_024, 67_108_864),
    ("max_write_bytes", 1, 268_435_456),
    ("max_binary_transfer_bytes", 1, 1_073_741_824),
];

fn range_message(key: &str, min: i64, max: i64, got: i64) -> String {
    if max == i64::MAX {
        format!("{key}: must be at least {min}, got {got}")
    } else {
        format!("{key}: must be between {min} and {max}, got {got}")
    }
}

#[test]
fn server_limits_are_bounded_and_named() {
    let fx = Fixture::new();
    for (name, min, max) in SERVER_LIMITS {
        // Raise the maxima so the defaults do not trip the ordering rule.
        let lift = match name {
            "default_list_limit" => "max_list_entries = 100000\n",
            "default_search_results" => "max_search_results = 10000\n",
            _ => "",
        };
        for ok in [min, max] {
            let config = one(&fx, &format!("{lift}{name} = {ok}"), "");
            assert!(config.is_ok(), "{name} = {ok}: {config:?}");
        }
        let mut bad = vec![min - 1, -1];
        if max < i64::MAX {
            bad.push(max + 1);
        }
        for got in bad {
            let err = one(&fx, &format!("{lift}{name} = {got}"), "").unwrap_err();
            let key = format!("server.{name}");
            assert_eq!(err.to_string(), range_message(&key, min, max, got));
            assert_eq!(err.key(), Some(key));
        }
    }
}

#[test]
fn agent_limits_are_bounded_and_named() {
    let fx = Fixture::new();
    for (name, min, max) in AGENT_LIMITS {
        for ok in [min, max] {
            let config = file(&fx, "", &format!("{name} = {ok}"), "");
            assert!(config.is_ok(), "{name} = {ok}: {config:?}");
        }
        for got in [min - 1, max + 1] {
            let err = file(&fx, "", &format!("{name} = {got}"), "").unwrap_err();
            let key = format!("agent.{name}");
            assert_eq!(err.to_string(), range_message(&key, min, max, got));
            assert_eq!(err.key(), Some(key));
        }
    }
    let agent = |lines: &str| file(&fx, "", lines, "").unwrap().agent;
    assert_eq!(
        agent("retention_hours = 8760").retention_seconds,
        31_536_000
    );
    assert_eq!(agent("retention_hours = 1").retention_seconds, 3_600);
    let ids = agent("peer_uid = 0\npeer_gid = 4294967294");
    assert_eq!((ids.peer_uid, ids.peer_gid), (Some(0), Some(u32::MAX - 1)));
    assert_eq!(
        message(file(&fx, "", "max_active_tasks = \"4\"", "")),
        "agent.max_active_tasks: invalid type: string \"4\", expected an integer (line 4)"
    );
}

#[test]
fn workdir_limits_are_bounded_at_both_levels() {
    let fx = Fixture::new();
    for (name, min, max) in WORKDIR_LIMITS {
        for ok in [min, max] {
            let server = one(&fx, &format!("{name} = {ok}"), "").unwrap();
            let own = one(&fx, "", &format!("{name} = {ok}")).unwrap();
            assert_eq!(server, own, "{name} = {ok}");
        }
        for got in [min - 1, max + 1, 0] {
            assert_eq!(
                message(one(&fx, &format!("{name} = {got}"), "")),
                range_message(&format!("server.{name}"), min, max, got)
            );
            assert_eq!(
                message(one(&fx, "", &format!("{name} = {got}"))),
                range_message(&format!("workdirs[0].{name}"), min, max, got)
            );
        }
    }
}

#[test]
fn a_written_default_above_its_maximum_is_refused() {
    let fx = Fixture::new();
    assert_eq!(
        message(one(
            &fx,
            "default_list_limit = 200\nmax_list_entries = 100",
            ""
        )),
        "server.default_list_limit: 200 exceeds server.max_list_entries (100)"
    );
    assert_eq!(
        message(one(
            &fx,
            "default_search_results = 60\nmax_search_results = 59",
            ""
        )),
        "server.default_search_results: 60 exceeds server.max_search_results (59)"
    );
    let equal = one(&fx, "default_list_limit = 7\nmax_list_entries = 7", "").unwrap();
    assert_eq!(equal.server.default_list_limit, 7);
}

#[test]
fn an_unwritten_default_follows_a_lower_maximum() {
    let fx = Fixture::new();
    let config = one(&fx, "max_list_entries = 10\nmax_search_results = 3", "").unwrap();
    assert_eq!(
        (
            config.server.default_list_limit,
            config.server.max_list_entries
        ),
        (10, 10)
    );
    assert_eq!(
        (
            config.server.default_search_results,
            config.server.max_search_results
        ),
        (3, 3)
    );
}

#[test]
fn alias_rule_edges() {
    let fx = Fixture::new();
    let ok32 = format!("a{}", "b".repeat(31));
    let bad33 = format!("a{}", "b".repeat(32));
    fx.mkdir("a");
    let with_alias = |alias: &str| {
        fx.toml(&format!(
            "[[workdirs]]\nalias = \"{alias}\"\npath = \"a\"\n"
        ))
    };
    for ok in [ok32.as_str(), "x", "My_Docs-2", "a-", "Z_"] {
        assert_eq!(with_alias(ok).unwrap().workdirs[0].alias.as_str(), ok);
    }
    for bad in [
        bad33.as_str(),
        "",
        "1docs",
        "_docs",
        "-docs",
        "my docs",
        "my.docs",
        " docs",
    ] {
        assert_eq!(
            message(with_alias(bad)),
            format!(
                "workdirs[0].alias: {bad:?} is not a valid workdir alias \
                 (a letter, then at most 31 letters, digits, '_' or '-')"
            )
        );
    }
}

#[test]
fn aliases_are_unique_ignoring_case() {
    let fx = Fixture::new();
    fx.mkdir("a");
    fx.mkdir("b");
    let err = fx
        .toml(
            "[[workdirs]]\nalias = \"docs\"\npath = \"a\"\n\
             [[workdirs]]\nalias = \"Docs\"\npath = \"b\"\n",
        )
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::DuplicateAlias {
            key: "workdirs[1].alias".to_owned(),
            alias: "Docs".to_owned(),
            first: "docs".to_owned(),
            first_key: "workdirs[0].alias".to_owned(),
        }
    );
    assert_eq!(
        err.to_string(),
        "workdirs[1].alias \"Docs\" duplicates \"docs\" from workdirs[0].alias \
         (aliases are unique ignoring case)"
    );
    // Same root twice under different aliases is allowed (e.g. ro + rw views).
    assert!(
        fx.toml(
            "[[workdirs]]\nalias = \"x\"\npath = \"a\"\n[[workdirs]]\nalias = \"y\"\npath = \"a\"\n"
        )
        .is_ok()
    );
}

#[test]
fn root_must_be_an_existing_real_directory() {
    let fx = Fixture::new();
    let real = fx.mkdir("real");
    fx.file("file.txt", "x");
    fx.symlink(&real, "link");
    fx.mkdir("parent/inner");
    let linked_parent = fx.symlink(&fx.join("parent"), "plink");
    let root_of =
        |path: &str| fx.toml(&format!("[[workdirs]]\nalias = \"w\"\npath = \"{path}\"\n"));
    let expect = |path: &str, problem: RootProblem| {
        let err = root_of(path).unwrap_err();
        assert_eq!(
            err,
            ConfigError::InvalidRoot {
                key: "workdirs[0].path".to_owned(),
                alias: "w".to_owned(),
                path: fx.join(path),
                problem,
            }
        );
        err.to_string()
    };
    assert_eq!(
        expect("missing", RootProblem::Missing),
        format!(
            "workdirs[0].path: root of workdir \"w\" ({:?}) does not exist",
            fx.join("missing")
        )
    );
    assert!(expect("file.txt", RootProblem::NotADirectory).ends_with("is not a directory"));
    assert!(expect("link", RootProblem::Symlink).contains("is a symbolic link"));
    // A symlink to a file is still a symlink.
    fx.symlink(&fx.join("file.txt"), "filelink");
    expect("filelink", RootProblem::Symlink);
    // A dangling link exists (lstat) but is a link.
    fx.symlink(&fx.join("nowhere"), "dangling");
    expect("dangling", RootProblem::Symlink);
    // Parents may be links; only the final component is checked.
    let config = root_of("plink/inner").unwrap();
    assert_eq!(config.workdirs[0].root, linked_parent.join("inner"));
    assert_eq!(root_of("real").unwrap().workdirs[0].root, real);
}

#[test]
fn deny_lists_union_global_first_without_duplicates() {
    let fx = Fixture::new();
    let config = one(
        &fx,
        "deny = [\"*.log\", \"build/**\", \"*.log\"]",
        "deny = [\"secret*\", \"build/**\", \"x?\"]",
    )
    .unwrap();
    assert_eq!(
        config.workdirs[0].deny,
        ["*.log", "build/**", "secret*", "x?"]
    );
    // Disabling the built-in rules never drops the extra globs.
    let off = one(&fx, "deny = [\"*.log\"]", "default_deny = false").unwrap();
    assert_eq!(
        (off.workdirs[0].default_deny, off.workdirs[0].deny.clone()),
        (false, vec!["*.log".to_owned()])
    );
}

#[test]
fn deny_globs_must_compile() {
    let fx = Fixture::new();
    let err = one(&fx, "", "deny = [\"ok*\", \"[abc\"]").unwrap_err();
    let ConfigError::InvalidGlob {
        key, item, glob, ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (key.as_str(), *item, glob.as_str()),
        ("workdirs[0].deny", 2, "[abc")
    );
    assert!(
        err.to_string()
            .starts_with("workdirs[0].deny: item 2 (\"[abc\") is not a valid glob: "),
        "{err}"
    );
    assert!(
        message(one(&fx, "deny = [\"a{b\"]", ""))
            .starts_with("server.deny: item 1 (\"a{b\") is not a valid glob: ")
    );
    assert_eq!(
        message(one(&fx, "deny = [\"\"]", "")),
        "server.deny: item 1 (\"\") is not a valid glob: a glob must not be empty"
    );
    assert!(one(&fx, "deny = [\"[!a]x\", \"logs_*/**\", \"?\"]", "").is_ok());
}

#[test]
fn agent_modes_need_the_bridge() {
    let fx = Fixture::new();
    assert_eq!(
        message(one(
            &fx,
            "",
            "agent_mode = \"review\"\nagent_runtimes = [\"fake\"]"
        )),
        "workdirs[0].agent_mode: workdir \"a\": agent mode \"review\" needs the Agent Bridge: \
         set agent.enabled to true"
    );
    let config = with_bridge(
        &fx,
        "",
        "agent_mode = \"review\"\nagent_runtimes = [\"fake\"]",
    )
    .unwrap();
    assert_eq!(config.workdirs[0].agent_mode, AgentMode::Review);
    assert_eq!(config.workdirs[0].agent_runtimes, [AgentRuntime::Fake]);
    assert!(config.agent_tools_enabled());
    // The Bridge alone offers no agent tools.
    assert!(!with_bridge(&fx, "", "").unwrap().agent_tools_enabled());
}

#[test]
fn workspace_write_requires_a_writable_workdir() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_bridge(
            &fx,
            "",
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\"]"
        )),
        "workdirs[0].agent_mode: workdir \"a\": agent mode \"workspace-write\" requires a \
         writable workdir: set workdirs[0].read_only to false"
    );
    let ok = with_bridge(
        &fx,
        "",
        "read_only = false\nagent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\", \"claude\", \"qoder\"]",
    )
    .unwrap();
    assert_eq!(
        ok.workdirs[0].agent_runtimes,
        [
            AgentRuntime::Claude,
            AgentRuntime::Codex,
            AgentRuntime::Qoder
        ]
    );
}

#[test]
fn native_runtimes_require_workspace_write() {
    let fx = Fixture::new();
    for native in ["codex", "claude", "qoder"] {
        assert_eq!(
            message(with_bridge(
                &fx,
                "",
                &format!("agent_mode = \"review\"\nagent_runtimes = [\"fake\", \"{native}\"]")
            )),
            format!(
                "workdirs[0].agent_runtimes: workdir \"a\": runtime \"{native}\" requires agent \
                 mode \"workspace-write\", but the mode is \"review\" (workdirs[0].agent_mode)"
            )
        );
    }
    // An ACP agent edits files through its own tools as well, with no
    // read-only mode ServerFS could prove (seed 002 §5.4).
    assert_eq!(
        message(file(
            &fx,
            "",
            &format!("{BRIDGE}\n{ZED}"),
            "agent_mode = \"review\"\nagent_runtimes = [\"acp-zed\", \"fake\"]"
        )),
        "workdirs[0].agent_runtimes: workdir \"a\": runtime \"acp-zed\" requires agent \
         mode \"workspace-write\", but the mode is \"review\" (workdirs[0].agent_mode)"
    );
    assert!(
        with_bridge(
            &fx,
            "",
            "agent_mode = \"review\"\nagent_runtimes = [\"fake\"]"
        )
        .is_ok()
    );
}

#[test]
fn enabled_modes_need_runtimes_and_disabled_modes_refuse_them() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_bridge(&fx, "", "agent_mode = \"review\"")),
        "workdirs[0].agent_mode: workdir \"a\": agent mode \"review\" needs at least one \
         runtime (server.agent_runtimes)"
    );
    assert_eq!(
        message(with_bridge(
            &fx,
            "",
            "agent_mode = \"review\"\nagent_runtimes = []"
        )),
        "workdirs[0].agent_mode: workdir \"a\": agent mode \"review\" needs at least one \
         runtime (workdirs[0].agent_runtimes)"
    );
    assert_eq!(
        message(with_bridge(&fx, "", "agent_runtimes = [\"fake\"]")),
        "workdirs[0].agent_runtimes: workdir \"a\": agent runtime \"fake\" is allowed but the \
         agent mode is \"disabled\" (server.agent_mode)"
    );
    assert_eq!(
        message(with_bridge(
            &fx,
            "",
            "agent_mode = \"disabled\"\nagent_runtimes = [\"fake\"]"
        )),
        "workdirs[0].agent_runtimes: workdir \"a\": agent runtime \"fake\" is allowed but the \
         agent mode is \"disabled\" (workdirs[0].agent_mode)"
    );
}

#[test]
fn the_global_agent_pair_must_be_consistent() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_bridge(&fx, "agent_mode = \"review\"", "")),
        "server.agent_mode: agent mode \"review\" needs at least one runtime in server.agent_runtimes"
    );
    assert_eq!(
        message(with_bridge(&fx, "agent_runtimes = [\"fake\"]", "")),
        "server.agent_runtimes: agent runtimes are listed but server.agent_mode is \"disabled\""
    );
}

#[test]
fn inherited_agent_policy_and_explicit_disabled_reset() {
    let fx = Fixture::new();
    fx.mkdir("b");
    let config = fx
        .toml(
            "[server]\nagent_mode = \"workspace-write\"\n\
             agent_runtimes = [\"fake\", \"acp-b\", \"acp-a\"]\n\
             [agent]\nenabled = true\nsocket = \"/s/bridge.sock\"\nlock_dir = \"/s/locks\"\n\
             [[agent.acp_profiles]]\nid = \"a\"\ncommand = \"/bin/a\"\n\
             [[agent.acp_profiles]]\nid = \"b\"\ncommand = \"/bin/b\"\n\
             [[workdirs]]\nalias = \"a\"\npath = \"b\"\nread_only = false\n\
             [[workdirs]]\nalias = \"b\"\npath = \"b\"\nagent_mode = \"disabled\"\n",
        )
        .unwrap();
    let names: Vec<&str> = config.workdirs[0]
        .agent_runtimes
        .iter()
        .map(AgentRuntime::as_str)
        .collect();
    assert_eq!(config.workdirs[0].agent_mode, AgentMode::WorkspaceWrite);
    assert_eq!(names, ["acp-a", "acp-b", "fake"]);
    assert_eq!(config.workdirs[1].agent_mode, AgentMode::Disabled);
    assert_eq!(config.workdirs[1].agent_runtimes, []);
}

#[test]
fn inherited_mode_conflicts_name_the_key_that_supplied_it() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_bridge(
            &fx,
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\"]",
            ""
        )),
        "server.agent_mode: workdir \"a\": agent mode \"workspace-write\" requires a writable \
         workdir: set workdirs[0].read_only to false"
    );
}

#[test]
fn runtime_names_are_checked() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_bridge(
            &fx,
            "",
            "agent_mode = \"review\"\nagent_runtimes = [\"fake\", \"fake\"]"
        )),
        "workdirs[0].agent_runtimes: agent runtime \"fake\" is listed more than once"
    );
    assert_eq!(
        message(with_bridge(
            &fx,
            "",
            "agent_mode = \"review\"\nagent_runtimes = [\"gemini\"]"
        )),
        "workdirs[0].agent_runtimes: unknown agent runtime \"gemini\" \
         (expected codex, claude, qoder, fake or acp-<name>)"
    );
    assert_eq!(
        message(one(&fx, "agent_runtimes = [\"Codex\"]", "")),
        "server.agent_runtimes: unknown agent runtime \"Codex\" \
         (expected codex, claude, qoder, fake or acp-<name>)"
    );
}

#[test]
fn bridge_paths_must_be_absolute_when_enabled() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let wd = "[[workdirs]]\nalias = \"a\"\npath = \"a\"\n";
    assert_eq!(
        message(fx.toml(&format!(
            "[agent]\nenabled = true\nsocket = \"run/b.sock\"\nlock_dir = \"/l\"\n{wd}"
        ))),
        "agent.socket: must be an absolute path while agent.enabled is on, got \"run/b.sock\""
    );
    assert_eq!(
        message(fx.toml(&format!(
            "[agent]\nenabled = true\nsocket = \"/b.sock\"\nlock_dir = \"locks\"\n{wd}"
        ))),
        "agent.lock_dir: must be an absolute path while agent.enabled is on, got \"locks\""
    );
    // No XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME: no usable default.
    assert_eq!(
        message(fx.toml(&format!("[agent]\nenabled = true\n{wd}"))),
        "agent.socket: must be an absolute path while agent.enabled is on, got \"serverfs/bridge.sock\""
    );
    // Disabled: anything goes, nothing will use it.
    assert!(
        fx.toml(&format!("[agent]\nsocket = \"rel.sock\"\n{wd}"))
            .is_ok()
    );
    assert_eq!(
        message(fx.toml(&format!("[agent]\ntimeout_ms = 99\n{wd}"))),
        "agent.timeout_ms: must be between 100 and 3600000, got 99"
    );
}

#[test]
fn bridge_state_dir_must_be_absolute_when_enabled() {
    let fx = Fixture::new();
    assert_eq!(
        message(file(
            &fx,
            "",
            &format!("{BRIDGE}\nstate_dir = \"state\""),
            ""
        )),
        "agent.state_dir: must be an absolute path while agent.enabled is on, got \"state\""
    );
    // Disabled: anything goes, nothing will use it.
    let off = file(&fx, "", "state_dir = \"state\"", "").unwrap();
    assert_eq!(off.agent.state_dir, PathBuf::from("state"));
    // An unresolvable default (no XDG_STATE_HOME or HOME) does not stop
    // serverfs, which never uses the state directory; the Bridge refuses it.
    let unresolved = file(&fx, "", BRIDGE, "").unwrap();
    assert_eq!(
        unresolved.agent.state_dir,
        PathBuf::from("serverfs-agent-bridge")
    );
}

#[test]
fn bridge_state_dir_defaults_to_xdg_state_home_then_home() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let state_dir = |agent: &str, pairs: &[(&str, &str)]| {
        let text = format!("[agent]\n{agent}\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n");
        Config::from_toml_str_with_env(&text, fx.path(), &env(pairs))
            .unwrap()
            .agent
            .state_dir
    };
    // XDG_RUNTIME_DIR moves the socket, never the state.
    assert_eq!(
        state_dir(
            BRIDGE,
            &[
                ("XDG_RUNTIME_DIR", "/run/user/7"),
                ("XDG_STATE_HOME", "/st"),
                ("HOME", "/h")
            ]
        ),
        PathBuf::from("/st/serverfs-agent-bridge")
    );
    assert_eq!(
        state_dir(BRIDGE, &[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]),
        PathBuf::from("/h/.local/state/serverfs-agent-bridge")
    );
    assert_eq!(
        state_dir("", &[("XDG_STATE_HOME", "rel"), ("HOME", "rel")]),
        PathBuf::from("serverfs-agent-bridge")
    );
    // Written as is, never resolved against the file's directory.
    assert_eq!(
        state_dir("state_dir = \"/srv/state\"", &[("XDG_STATE_HOME", "/st")]),
        PathBuf::from("/srv/state")
    );
}

/// `[agent]` lines with the Bridge on and `proxy`, and two workdirs:
/// `a` allows codex and fake, `b` allows acp-zed.
fn proxied(fx: &Fixture, proxy: &str) -> Result<Config, ConfigError> {
    fx.mkdir("a");
    fx.toml(&format!(
        "[agent]\n{BRIDGE}\n{proxy}\n{ZED}\n\
         [[workdirs]]\nalias = \"a\"\npath = \"a\"\nread_only = false\n\
         agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\", \"codex\"]\n\
         [[workdirs]]\nalias = \"b\"\npath = \"a\"\nread_only = false\n\
         agent_mode = \"workspace-write\"\nagent_runtimes = [\"acp-zed\"]\n"
    ))
}

#[test]
fn proxy_runtimes_must_be_allowed_by_some_workdir() {
    let fx = Fixture::new();
    let runtimes = |proxy: &str| proxied(&fx, proxy).unwrap().agent.proxy_runtimes;
    assert_eq!(runtimes(""), []);
    assert_eq!(runtimes("proxy_runtimes = []"), []);
    assert_eq!(
        runtimes("proxy_runtimes = [\"fake\", \"acp-zed\", \"codex\"]"),
        [
            AgentRuntime::parse("acp-zed").unwrap(),
            AgentRuntime::Codex,
            AgentRuntime::Fake
        ]
    );
    assert_eq!(
        message(proxied(&fx, "proxy_runtimes = [\"codex\", \"claude\"]")),
        "agent.proxy_runtimes: runtime \"claude\" is not in any workdir's agent_runtimes, \
         so routing it through the agent proxy would have no effect"
    );
    // The same with the Bridge off, where no workdir can allow anything.
    assert_eq!(
        message(file(&fx, "", "proxy_runtimes = [\"codex\"]", "")),
        "agent.proxy_runtimes: runtime \"codex\" is not in any workdir's agent_runtimes, \
         so routing it through the agent proxy would have no effect"
    );
}

#[test]
fn proxy_runtime_names_are_checked() {
    let fx = Fixture::new();
    assert_eq!(
        message(proxied(
            &fx,
            "proxy_runtimes = [\"codex\", \"fake\", \"codex\"]"
        )),
        "agent.proxy_runtimes: agent runtime \"codex\" is listed more than once"
    );
    for unknown in ["gemini", "Codex", "acp-", ""] {
        assert_eq!(
            message(proxied(&fx, &format!("proxy_runtimes = [\"{unknown}\"]"))),
            format!(
                "agent.proxy_runtimes: unknown agent runtime {unknown:?} \
                 (expected codex, claude, qoder, fake or acp-<name>)"
            )
        );
    }
    assert_eq!(
        message(proxied(&fx, "proxy_runtimes = \"codex\"")),
        "agent.proxy_runtimes: invalid type: string \"codex\", expected an array (line 5)"
    );
}

/// The three native runtimes: the prefix of their `[agent]` keys, and
/// what `Config` holds for them.
const NATIVE: [&str; 3] = ["codex", "claude", "qoder"];

fn native_settings(config: &Config, runtime: &str) -> (String, u64, Vec<String>) {
    let a = &config.agent;
    match runtime {
        "codex" => (
            a.codex.bin.clone(),
            a.codex.request_timeout_ms,
            a.codex.env_passthrough.clone(),
        ),
        "claude" => (
            a.claude.bin.clone(),
            a.claude.request_timeout_ms,
            a.claude.env_passthrough.clone(),
        ),
        "qoder" => (
            a.qoder.cli.bin.clone(),
            a.qoder.cli.request_timeout_ms,
            a.qoder.cli.env_passthrough.clone(),
        ),
        other => panic!("not a native runtime: {other}"),
    }
}

#[test]
fn bins_must_be_absolute_or_a_bare_command_name() {
    let fx = Fixture::new();
    for runtime in NATIVE {
        let key = format!("agent.{runtime}_bin");
        let bin = |value: &str| file(&fx, "", &format!("{runtime}_bin = {value}"), "");
        let accepted = |value: &str| native_settings(&bin(value).unwrap(), runtime).0;
        assert_eq!(accepted("\"codex\""), "codex");
        assert_eq!(accepted("\"/opt/cli/bin/cli\""), "/opt/cli/bin/cli");
        assert_eq!(accepted("\"claude-2.1\""), "claude-2.1");
        let refused = "an absolute path, or a bare command name looked up on PATH \
                       (no '/' unless the path is absolute)";
        for (written, got) in [
            ("\"bin/cli\"", "\"bin/cli\""),
            ("\"./cli\"", "\"./cli\""),
            ("\"../tools/cli\"", "\"../tools/cli\""),
        ] {
            let err = bin(written).unwrap_err();
            assert_eq!(err.key().as_deref(), Some(key.as_str()));
            assert_eq!(
                err.to_string(),
                format!("{key}: expected {refused}, got {got}")
            );
        }
        for written in ["\"\"", "\"  \""] {
            assert_eq!(
                message(bin(written)),
                format!(
                    "{key}: expected a command name or an absolute path, \
                     not an empty one, got {written}"
                )
            );
        }
        for (written, got) in [
            ("\"cl\\u0000i\"", "\"cl\\0i\""),
            ("\"cli\\n\"", "\"cli\\n\""),
            ("\"/usr/bin/cli\\r\"", "\"/usr/bin/cli\\r\""),
        ] {
            assert_eq!(
                message(bin(written)),
                format!(
                    "{key}: expected a command name or path without NUL, CR or LF \
                     characters, got {got}"
                )
            );
        }
    }
}

#[test]
fn codex_home_must_be_absolute_when_set() {
    let fx = Fixture::new();
    let home = |value: &str| file(&fx, "", &format!("codex_home = \"{value}\""), "");
    assert_eq!(
        home("/srv/codex").unwrap().agent.codex.home,
        Some(PathBuf::from("/srv/codex"))
    );
    for relative in [".codex", "home/.codex", "~/.codex", ""] {
        assert_eq!(
            message(home(relative)),
            format!("agent.codex_home: expected an absolute path, got {relative:?}")
        );
    }
    // With the Bridge on as well: the rule does not depend on it.
    assert_eq!(
        message(file(
            &fx,
            "",
            &format!("{BRIDGE}\ncodex_home = \"rel\""),
            ""
        )),
        "agent.codex_home: expected an absolute path, got \"rel\""
    );
}

#[test]
fn codex_transport_spelling_is_exact() {
    let fx = Fixture::new();
    let transport = |value: &str| file(&fx, "", &format!("codex_transport = \"{value}\""), "");
    assert_eq!(
        transport("stdio").unwrap().agent.codex.transport,
        CodexTransport::Stdio
    );
    assert_eq!(
        transport("daemon").unwrap().agent.codex.transport,
        CodexTransport::Daemon
    );
    for bad in ["Daemon", "socket", "", " stdio"] {
        assert_eq!(
            message(transport(bad)),
            format!("agent.codex_transport: expected one of \"stdio\", \"daemon\", got {bad:?}")
        );
    }
}

#[test]
fn codex_autostart_needs_the_daemon_transport() {
    let fx = Fixture::new();
    let codex = |lines: &str| file(&fx, "", lines, "");
    let refused = "agent.codex_autostart: codex_autostart needs agent.codex_transport = \
                   \"daemon\": with \"stdio\" the Bridge runs its own app-server for each \
                   task, so there is no daemon to start";
    assert_eq!(message(codex("codex_autostart = true")), refused);
    assert_eq!(
        message(codex("codex_transport = \"stdio\"\ncodex_autostart = true")),
        refused
    );
    let err = codex("codex_autostart = true").unwrap_err();
    assert_eq!(err.key().as_deref(), Some("agent.codex_autostart"));
    let on = codex("codex_transport = \"daemon\"\ncodex_autostart = true").unwrap();
    assert_eq!(
        (on.agent.codex.transport, on.agent.codex.autostart),
        (CodexTransport::Daemon, true)
    );
    assert!(
        !codex("codex_autostart = false")
            .unwrap()
            .agent
            .codex
            .autostart
    );
    assert!(
        !codex("codex_transport = \"daemon\"")
            .unwrap()
            .agent
            .codex
            .autostart
    );
}

#[test]
fn request_timeouts_are_bounded_in_seconds() {
    let fx = Fixture::new();
    for runtime in NATIVE {
        let key = format!("agent.{runtime}_request_timeout_seconds");
        let timeout = |value: &str| {
            file(
                &fx,
                "",
                &format!("{runtime}_request_timeout_seconds = {value}"),
                "",
            )
        };
        for (ok, ms) in [
            ("0.1", 100),
            ("600", 600_000),
            ("600.0", 600_000),
            ("10", 10_000),
            ("60", 60_000),
        ] {
            assert_eq!(
                native_settings(&timeout(ok).unwrap(), runtime).1,
                ms,
                "{key} = {ok}"
            );
        }
        for (bad, got) in [
            ("0.05", "0.05"),
            ("0", "0"),
            ("-1", "-1"),
            ("600.5", "600.5"),
            ("601", "601"),
            ("inf", "inf"),
            ("nan", "NaN"),
            ("-0.0", "-0"),
        ] {
            let err = timeout(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{key}: expected a number of seconds from 0.1 to 600, got {got:?}"),
                "{bad}"
            );
            assert_eq!(err.key().as_deref(), Some(key.as_str()));
        }
    }
}

#[test]
fn passthrough_lists_keep_valid_names_in_order() {
    let fx = Fixture::new();
    for runtime in NATIVE {
        let config = file(
            &fx,
            "",
            &format!(
                "{runtime}_env_passthrough = [\"OPENAI_API_KEY\", \"ANTHROPIC_API_KEY\", \
                 \"_private\", \"path\", \"x9\"]"
            ),
            "",
        )
        .unwrap();
        assert_eq!(
            native_settings(&config, runtime).2,
            [
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "_private",
                "path",
                "x9"
            ],
            "{runtime}"
        );
        let empty = file(&fx, "", &format!("{runtime}_env_passthrough = []"), "").unwrap();
        assert_eq!(native_settings(&empty, runtime).2, Vec::<String>::new());
    }
}

#[test]
fn passthrough_lists_refuse_bad_names() {
    let fx = Fixture::new();
    for runtime in NATIVE {
        let key = format!("agent.{runtime}_env_passthrough");
        let list = |items: &str| {
            file(
                &fx,
                "",
                &format!("{runtime}_env_passthrough = [{items}]"),
                "",
            )
        };
        let not_a_name = "is not an environment variable name \
                          (a letter or '_', then letters, digits or '_')";
        for (items, name) in [
            ("\"\"", "\"\""),
            ("\"OK\", \"A=B\"", "\"A=B\""),
            ("\"A\\u0000\"", "\"A\\0\""),
            ("\"1ST\"", "\"1ST\""),
            ("\"MY-KEY\"", "\"MY-KEY\""),
            ("\" KEY\"", "\" KEY\""),
            ("\"KEY\\n\"", "\"KEY\\n\""),
            ("\"CLÉ\"", "\"CLÉ\""),
        ] {
            let err = list(items).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{key}: {name} {not_a_name}"),
                "{items}"
            );
            assert_eq!(err.key().as_deref(), Some(key.as_str()));
        }
        assert_eq!(
            message(list("\"A_KEY\", \"B_KEY\", \"A_KEY\"")),
            format!("{key}: \"A_KEY\" is listed more than once")
        );
        // Names are case-sensitive, as the environment is.
        assert!(list("\"A_KEY\", \"a_key\"").is_ok());
    }
}

#[test]
fn passthrough_lists_refuse_reserved_names() {
    let fx = Fixture::new();
    let proxy = "is reserved: proxy variables are set by the Bridge alone \
                 (a runtime uses the agent proxy only through proxy_runtimes)";
    let own = "is reserved: SERVERFS_* variables are settings of ServerFS itself, \
               never handed to a provider";
    let set = "is reserved: the Bridge sets it for the provider itself";
    let loader = "is reserved: a dynamic-loader variable could make the provider run other code";
    let cases = [
        ("HTTPS_PROXY", proxy),
        ("https_proxy", proxy),
        ("HTTP_PROXY", proxy),
        ("http_proxy", proxy),
        ("NO_PROXY", proxy),
        ("no_proxy", proxy),
        ("ALL_PROXY", proxy),
        ("all_proxy", proxy),
        ("GRPC_PROXY", proxy),
        ("SERVERFS_AGENT_PROXY_URL", proxy),
        ("SERVERFS_CONFIG", own),
        ("serverfs_log_level", own),
        ("SERVERFS_CLAUDE_BIN", own),
        ("PATH", set),
        ("HOME", set),
        ("PWD", set),
        ("CODEX_HOME", set),
        ("QODER_SDK_AUTH_PAYLOAD_FILE", set),
        ("LD_PRELOAD", loader),
        ("LD_LIBRARY_PATH", loader),
    ];
    for runtime in NATIVE {
        let key = format!("agent.{runtime}_env_passthrough");
        for (name, reason) in cases {
            let err = file(
                &fx,
                "",
                &format!("{runtime}_env_passthrough = [\"ANTHROPIC_API_KEY\", \"{name}\"]"),
                "",
            )
            .unwrap_err();
            assert_eq!(err.to_string(), format!("{key}: {name:?} {reason}"));
            assert_eq!(err.key().as_deref(), Some(key.as_str()));
        }
    }
}

#[test]
fn codex_passthrough_needs_the_stdio_transport() {
    let fx = Fixture::new();
    let codex = |lines: &str| file(&fx, "", lines, "");
    assert_eq!(
        message(codex(
            "codex_transport = \"daemon\"\ncodex_env_passthrough = [\"OPENAI_API_KEY\"]"
        )),
        "agent.codex_env_passthrough: codex_env_passthrough needs agent.codex_transport = \
         \"stdio\": the managed daemon keeps the environment it was started with, so no \
         variable can be handed to it"
    );
    // An empty list asks for nothing, and a bad name is reported first.
    assert!(codex("codex_transport = \"daemon\"\ncodex_env_passthrough = []").is_ok());
    assert_eq!(
        codex("codex_transport = \"daemon\"\ncodex_env_passthrough = [\"PATH\"]")
            .unwrap_err()
            .to_string(),
        "agent.codex_env_passthrough: \"PATH\" is reserved: the Bridge sets it for the provider itself"
    );
    let stdio =
        codex("codex_transport = \"stdio\"\ncodex_env_passthrough = [\"OPENAI_API_KEY\"]").unwrap();
    assert_eq!(stdio.agent.codex.env_passthrough, ["OPENAI_API_KEY"]);
}

#[test]
fn qoder_auth_spelling_is_exact_and_a_token_must_be_passed_through() {
    let fx = Fixture::new();
    let qoder = |lines: &str| file(&fx, "", lines, "");
    assert_eq!(qoder("").unwrap().agent.qoder.auth, QoderAuth::Login);
    assert_eq!(
        qoder("qoder_auth = \"login\"").unwrap().agent.qoder.auth,
        QoderAuth::Login
    );
    for bad in ["Login", "pat", "", "accessToken"] {
        assert_eq!(
            message(qoder(&format!("qoder_auth = \"{bad}\""))),
            format!(
                "agent.qoder_auth: expected one of \"login\", \"personal-access-token\", \
                 got {bad:?}"
            )
        );
    }
    let refused = "agent.qoder_auth: \"personal-access-token\" reads the token from \
                   QODER_PERSONAL_ACCESS_TOKEN: add \"QODER_PERSONAL_ACCESS_TOKEN\" to \
                   agent.qoder_env_passthrough so the Bridge may hand it to qodercli";
    assert_eq!(
        message(qoder("qoder_auth = \"personal-access-token\"")),
        refused
    );
    // Another runtime's list does not count: the token is Qoder's alone.
    assert_eq!(
        message(qoder(
            "qoder_auth = \"personal-access-token\"\n\
             claude_env_passthrough = [\"QODER_PERSONAL_ACCESS_TOKEN\"]"
        )),
        refused
    );
    let token = qoder(
        "qoder_auth = \"personal-access-token\"\n\
         qoder_env_passthrough = [\"QODER_CONFIG_DIR\", \"QODER_PERSONAL_ACCESS_TOKEN\"]",
    )
    .unwrap();
    assert_eq!(token.agent.qoder.auth, QoderAuth::PersonalAccessToken);
    // Checked like the other settings, with no workdir allowing qoder.
    assert!(token.workdirs[0].agent_runtimes.is_empty());
}

#[test]
fn runtime_settings_are_checked_even_where_no_workdir_allows_the_runtime() {
    // Bridge off, no agent anywhere: a typo still never waits for the day
    // the runtime is enabled (the Bridge's other settings behave the same).
    let fx = Fixture::new();
    for runtime in NATIVE {
        assert!(file(&fx, "", &format!("{runtime}_bin = \"bin/cli\""), "").is_err());
        assert!(
            file(
                &fx,
                "",
                &format!("{runtime}_request_timeout_seconds = 0"),
                ""
            )
            .is_err()
        );
        assert!(
            file(
                &fx,
                "",
                &format!("{runtime}_env_passthrough = [\"HOME\"]"),
                ""
            )
            .is_err()
        );
    }
    let allowed = file(
        &fx,
        "",
        BRIDGE,
        "read_only = false\nagent_mode = \"workspace-write\"\n\
         agent_runtimes = [\"codex\", \"claude\", \"qoder\"]",
    )
    .unwrap();
    assert_eq!(allowed.agent.codex, crate::CodexSettings::default());
    assert_eq!(
        allowed.agent.claude,
        crate::CliRuntimeSettings::claude_default()
    );
    assert_eq!(allowed.agent.qoder, crate::QoderSettings::default());
}

#[test]
fn native_bridge_defaults_follow_xdg() {
    let fx = Fixture::new();
    fx.mkdir("a");
    let text = "[agent]\nenabled = true\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n";
    let agent = |pairs: &[(&str, &str)]| {
        let config = Config::from_toml_str_with_env(text, fx.path(), &env(pairs)).unwrap();
        (config.agent.bridge_socket, config.agent.lock_dir)
    };
    let paths = |socket: &str, locks: &str| (PathBuf::from(socket), PathBuf::from(locks));
    assert_eq!(
        agent(&[
            ("XDG_RUNTIME_DIR", "/run/user/7"),
            ("XDG_STATE_HOME", "/st"),
            ("HOME", "/h")
        ]),
        paths(
            "/run/user/7/serverfs/bridge.sock",
            "/run/user/7/serverfs/locks"
        )
    );
    assert_eq!(
        agent(&[
            ("XDG_RUNTIME_DIR", "relative"),
            ("XDG_STATE_HOME", "/st"),
            ("HOME", "/h")
        ]),
        paths("/st/serverfs/bridge.sock", "/st/serverfs/locks")
    );
    assert_eq!(
        agent(&[("HOME", "/h")]),
        paths(
            "/h/.local/state/serverfs/bridge.sock",
            "/h/.local/state/serverfs/locks"
        )
    );
    let explicit = Config::from_toml_str_with_env(
        "[agent]\nenabled = true\nsocket = \"/b/x.sock\"\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n",
        fx.path(),
        &env(&[("HOME", "/h")]),
    )
    .unwrap();
    assert_eq!(explicit.agent.lock_dir, PathBuf::from("/b/locks"));
}

#[test]
fn descriptions_are_trimmed_and_empty_means_none() {
    let fx = Fixture::new();
    assert_eq!(
        one(&fx, "", "description = \"  hi there \"")
            .unwrap()
            .workdirs[0]
            .description,
        Some("hi there".to_owned())
    );
    assert_eq!(
        one(&fx, "", "description = \" \\t \"").unwrap().workdirs[0].description,
        None
    );
}

#[test]
fn every_error_is_one_line() {
    // A newline smuggled into a value must not break the one-line rule.
    let fx = Fixture::new();
    let text = message(one(&fx, "", "agent_mode = \"re\\nview\""));
    assert_eq!(
        text,
        "workdirs[0].agent_mode: expected one of \"disabled\", \"review\", \"workspace-write\", got \"re\\nview\""
    );
}
