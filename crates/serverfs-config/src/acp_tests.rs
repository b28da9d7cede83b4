//! ACP profiles: both spellings, the derived runtime, and every refusal
//! naming its key (seed 002 §18, configuration/authorization).

use pretty_assertions::assert_eq;

use crate::test_support::{Fixture, message};
use crate::{AcpProfile, AgentRuntime, Config, ConfigError, PassthroughProblem};

/// `[agent]` lines enabling the Bridge at absolute paths.
const BRIDGE: &str =
    "enabled = true\nsocket = \"/run/sfs/bridge.sock\"\nlock_dir = \"/run/sfs/locks\"";

/// A file with the Bridge on, `profiles` (raw TOML after `[agent]`) and
/// one writable workdir `a` whose agent policy is `policy`.
fn with_profiles(fx: &Fixture, profiles: &str, policy: &str) -> Result<Config, ConfigError> {
    fx.mkdir("a");
    fx.toml(&format!(
        "[agent]\n{BRIDGE}\n{profiles}\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\n\
         read_only = false\n{policy}\n"
    ))
}

/// One profile table with `id = "zed"`, an absolute command and `extra`.
fn zed(extra: &str) -> String {
    format!("[[agent.acp_profiles]]\nid = \"zed\"\ncommand = \"/opt/zed/bin/zed\"\n{extra}")
}

const ALLOW_ZED: &str = "agent_mode = \"workspace-write\"\nagent_runtimes = [\"acp-zed\"]";

#[test]
fn no_profile_changes_nothing_and_a_profile_is_a_runtime() {
    let fx = Fixture::new();
    let plain = with_profiles(&fx, "", "").unwrap();
    assert_eq!(plain.agent.acp_profiles, []);
    let config = with_profiles(&fx, &zed(""), ALLOW_ZED).unwrap();
    let runtime = AcpProfile::from_id("zed").unwrap();
    assert_eq!(
        config.workdirs[0].agent_runtimes,
        [AgentRuntime::Acp(runtime.clone())]
    );
    let profile = config.agent.acp_profile(&runtime).unwrap();
    assert_eq!((profile.id(), profile.runtime.as_str()), ("zed", "acp-zed"));
    assert!(
        !profile.session_scoped_allow_always,
        "not offered by default"
    );
    assert_eq!(
        (
            profile.request_timeout_ms,
            profile.probe_timeout_ms,
            profile.shutdown_timeout_ms
        ),
        (60_000, 30_000, 3_000)
    );
    // Defined, allowed nowhere: valid, and nothing runs it.
    assert!(with_profiles(&fx, &zed(""), "").is_ok());
}

#[test]
fn a_runtime_must_name_a_configured_profile() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_profiles(&fx, "", ALLOW_ZED)),
        "workdirs[0].agent_runtimes: runtime \"acp-zed\" is not a configured ACP profile \
         (define it with [[agent.acp_profiles]] id = \"zed\")"
    );
    // Inherited from the server-wide default: that key is named.
    fx.mkdir("a");
    let inherited = fx.toml(&format!(
        "[server]\nagent_mode = \"workspace-write\"\nagent_runtimes = [\"acp-other\"]\n\
         [agent]\n{BRIDGE}\n{}\n[[workdirs]]\nalias = \"a\"\npath = \"a\"\nread_only = false\n",
        zed("")
    ));
    assert_eq!(
        message(inherited),
        "server.agent_runtimes: runtime \"acp-other\" is not a configured ACP profile \
         (define it with [[agent.acp_profiles]] id = \"other\")"
    );
}

#[test]
fn acp_runtimes_need_a_writable_workspace_write_workdir() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_profiles(
            &fx,
            &zed(""),
            "agent_mode = \"review\"\nagent_runtimes = [\"acp-zed\"]"
        )),
        "workdirs[0].agent_runtimes: workdir \"a\": runtime \"acp-zed\" requires agent mode \
         \"workspace-write\", but the mode is \"review\" (workdirs[0].agent_mode)"
    );
    fx.mkdir("ro");
    let read_only = fx.toml(&format!(
        "[agent]\n{BRIDGE}\n{}\n[[workdirs]]\nalias = \"ro\"\npath = \"ro\"\n{ALLOW_ZED}\n",
        zed("")
    ));
    assert_eq!(
        message(read_only),
        "workdirs[0].agent_mode: workdir \"ro\": agent mode \"workspace-write\" requires a \
         writable workdir: set workdirs[0].read_only to false"
    );
}

#[test]
fn ids_are_narrow_and_unique() {
    let fx = Fixture::new();
    for bad in ["", "Zed", "1zed", "_zed", "z.ed", "z ed", &"z".repeat(29)] {
        let profile = format!("[[agent.acp_profiles]]\nid = {bad:?}\ncommand = \"/bin/x\"");
        assert_eq!(
            message(with_profiles(&fx, &profile, "")),
            format!(
                "agent.acp_profiles[0].id: expected a profile id: a lower-case letter, then \
                 at most 27 lower-case letters, digits, '_' or '-', got {bad:?}"
            )
        );
    }
    let longest = "z".repeat(28);
    let profile = format!("[[agent.acp_profiles]]\nid = {longest:?}\ncommand = \"/bin/x\"");
    assert!(with_profiles(&fx, &profile, "").is_ok());
    // The built-in runtimes' names are reserved, though `acp-codex` could
    // never be taken for `codex` by the Bridge: a reader could.
    for reserved in ["codex", "claude", "qoder", "fake"] {
        let profile = format!("[[agent.acp_profiles]]\nid = {reserved:?}\ncommand = \"/bin/x\"");
        assert_eq!(
            message(with_profiles(&fx, &profile, "")),
            format!(
                "agent.acp_profiles[0].id: expected a profile id other than a built-in \
                 runtime's name (codex, claude, qoder and fake are reserved; e.g. codex-acp), \
                 got {reserved:?}"
            )
        );
    }
    for near in ["codex-acp", "claude-acp", "fakes", "opencode"] {
        let profile = format!("[[agent.acp_profiles]]\nid = {near:?}\ncommand = \"/bin/x\"");
        assert!(with_profiles(&fx, &profile, "").is_ok(), "{near}");
    }
    assert_eq!(
        message(with_profiles(&fx, &format!("{}\n{}", zed(""), zed("")), "")),
        "agent.acp_profiles[1].id: the ACP profile id \"zed\" is used by an earlier profile \
         (ids are unique)"
    );
}

#[test]
fn commands_are_absolute_and_arguments_are_plain_text() {
    let fx = Fixture::new();
    for (command, expected) in [
        (
            "opencode",
            "an absolute path to the agent's executable (never looked up on PATH)",
        ),
        (
            "bin/opencode",
            "an absolute path to the agent's executable (never looked up on PATH)",
        ),
        (
            "./opencode",
            "an absolute path to the agent's executable (never looked up on PATH)",
        ),
        (
            "",
            "an absolute path to the agent's executable (never looked up on PATH)",
        ),
        (
            "/bin/x\n",
            "an absolute path without NUL, CR or LF characters",
        ),
    ] {
        let profile = format!("[[agent.acp_profiles]]\nid = \"zed\"\ncommand = {command:?}");
        assert_eq!(
            message(with_profiles(&fx, &profile, "")),
            format!("agent.acp_profiles[0].command: expected {expected}, got {command:?}")
        );
    }
    // Shell syntax is never evaluated: it reaches the agent as written.
    let config =
        with_profiles(&fx, &zed("args = [\"acp\", \"; rm -rf /\", \"$HOME\"]"), "").unwrap();
    assert_eq!(
        config.agent.acp_profiles[0].args,
        ["acp", "; rm -rf /", "$HOME"]
    );
    assert_eq!(
        message(with_profiles(&fx, &zed("args = [\"a\\u0000b\"]"), "")),
        "agent.acp_profiles[0].args[0]: expected an argument of at most 4096 bytes without \
         NUL, got \"a\\0b\""
    );
    let many: Vec<String> = (0..33).map(|i| format!("\"{i}\"")).collect();
    assert_eq!(
        message(with_profiles(
            &fx,
            &zed(&format!("args = [{}]", many.join(", "))),
            ""
        )),
        "agent.acp_profiles[0].args: expected at most 32 arguments, got \"33 arguments\""
    );
}

#[test]
fn the_environment_is_explicit_and_never_reserved() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_profiles(
            &fx,
            &zed("env_passthrough = [\"HTTPS_PROXY\"]"),
            ""
        )),
        format!(
            "agent.acp_profiles[0].env_passthrough: \"HTTPS_PROXY\" {}",
            PassthroughProblem::Proxy
        )
    );
    for (name, problem) in [
        ("PATH", PassthroughProblem::SetByBridge),
        ("LD_PRELOAD", PassthroughProblem::Loader),
        ("SERVERFS_CONFIG", PassthroughProblem::ServerfsSetting),
        ("no_proxy", PassthroughProblem::Proxy),
        ("A-B", PassthroughProblem::NotAName),
    ] {
        assert_eq!(
            message(with_profiles(
                &fx,
                &zed(&format!("env = {{ {name:?} = \"x\" }}")),
                ""
            )),
            format!("agent.acp_profiles[0].env: {name:?} {problem}")
        );
    }
    assert_eq!(
        message(with_profiles(
            &fx,
            &zed("env_passthrough = [\"KEY\"]\nenv = { KEY = \"fixed\" }"),
            ""
        )),
        "agent.acp_profiles[0].env: \"KEY\" is also in agent.acp_profiles[0].env_passthrough: \
         a variable is either fixed or passed through"
    );
    assert_eq!(
        message(with_profiles(
            &fx,
            &zed("env = { MODE = \"a\\u0000\" }"),
            ""
        )),
        "agent.acp_profiles[0].env.MODE: expected a value of at most 4096 bytes without NUL, \
         got \"a\\0\""
    );
}

#[test]
fn timeouts_are_bounded_in_seconds() {
    let fx = Fixture::new();
    for (key, bad, expected) in [
        (
            "request_timeout_seconds",
            "0.01",
            "a number of seconds from 0.1 to 600",
        ),
        (
            "probe_timeout_seconds",
            "601",
            "a number of seconds from 0.1 to 600",
        ),
        (
            "shutdown_timeout_seconds",
            "3.5",
            "a number of seconds from 0.1 to 3",
        ),
        (
            "shutdown_timeout_seconds",
            "nan",
            "a number of seconds from 0.1 to 3",
        ),
    ] {
        assert_eq!(
            message(with_profiles(&fx, &zed(&format!("{key} = {bad}")), "")),
            format!(
                "agent.acp_profiles[0].{key}: expected {expected}, got {:?}",
                bad.replace("nan", "NaN")
            )
        );
    }
    let config = with_profiles(
        &fx,
        &zed("shutdown_timeout_seconds = 0.1\nrequest_timeout_seconds = 600"),
        "",
    )
    .unwrap();
    let profile = &config.agent.acp_profiles[0];
    assert_eq!(
        (profile.shutdown_timeout_ms, profile.request_timeout_ms),
        (100, 600_000)
    );
}

#[test]
fn unknown_keys_and_wrong_types_are_refused() {
    let fx = Fixture::new();
    assert_eq!(
        message(with_profiles(&fx, &zed("cwd = \"/tmp\""), "")),
        "agent.acp_profiles[0].cwd: unknown field `cwd`, expected one of `id`, `command`, \
         `args`, `env_passthrough`, `env`, `request_timeout_seconds`, `probe_timeout_seconds`, \
         `shutdown_timeout_seconds`, `session_scoped_allow_always` (line 8)"
    );
    assert_eq!(
        message(with_profiles(&fx, &zed("args = \"acp\""), "")),
        "agent.acp_profiles[0].args: invalid type: string \"acp\", expected an array (line 8)"
    );
    assert_eq!(
        message(with_profiles(
            &fx,
            &zed("session_scoped_allow_always = \"yes\""),
            ""
        )),
        "agent.acp_profiles[0].session_scoped_allow_always: invalid type: string \"yes\", \
         expected a boolean (line 8)"
    );
    let missing = with_profiles(&fx, "[[agent.acp_profiles]]\nid = \"zed\"", "");
    assert!(
        message(missing).starts_with("agent.acp_profiles[0]: missing field `command`"),
        "a profile needs its command"
    );
}

#[test]
fn at_most_sixteen_profiles() {
    let fx = Fixture::new();
    let profiles: Vec<String> = (0..17)
        .map(|i| format!("[[agent.acp_profiles]]\nid = \"p{i}\"\ncommand = \"/bin/p\""))
        .collect();
    assert_eq!(
        message(with_profiles(&fx, &profiles.join("\n"), "")),
        "agent.acp_profiles: expected at most 16 ACP profiles, got \"17 profiles\""
    );
    assert!(with_profiles(&fx, &profiles[..16].join("\n"), "").is_ok());
}

#[test]
fn the_environment_source_takes_one_json_array() {
    let fx = Fixture::new();
    fx.slot(1);
    let load = |json: &str| {
        fx.env_config(&[
            ("WORKDIR_01_ALIAS", "one"),
            ("WORKDIR_01_READ_ONLY", "false"),
            ("WORKDIR_01_AGENT_MODE", "workspace-write"),
            ("WORKDIR_01_AGENT_RUNTIMES", "acp-opencode"),
            ("SERVERFS_AGENT_BRIDGE_ENABLED", "true"),
            ("SERVERFS_ACP_PROFILES_JSON", json),
        ])
    };
    let config =
        load(r#"[{"id": "opencode", "command": "/usr/local/bin/opencode", "args": ["acp"]}]"#)
            .unwrap();
    assert_eq!(
        config.workdirs[0].agent_runtimes,
        [AgentRuntime::parse("acp-opencode").unwrap()]
    );
    assert_eq!(config.agent.acp_profiles[0].args, ["acp"]);
    assert_eq!(
        message(load("")),
        "WORKDIR_01_AGENT_RUNTIMES: runtime \"acp-opencode\" is not a configured ACP profile \
         (define it with [[agent.acp_profiles]] id = \"opencode\")"
    );
    let malformed = message(load("[{\"id\": \"opencode\""));
    assert!(
        malformed
            .starts_with("SERVERFS_ACP_PROFILES_JSON: expected a JSON array of ACP profiles ("),
        "{malformed}"
    );
    let unknown = message(load(
        r#"[{"id": "opencode", "command": "/x", "shell": true}]"#,
    ));
    assert!(unknown.contains("unknown field `shell`"), "{unknown}");
    assert_eq!(
        message(load(
            r#"[{"id": "claude", "command": "/usr/local/bin/claude-agent-acp"}]"#
        )),
        "SERVERFS_ACP_PROFILES_JSON[0].id: expected a profile id other than a built-in \
         runtime's name (codex, claude, qoder and fake are reserved; e.g. codex-acp), \
         got \"claude\""
    );
    assert_eq!(
        message(load(r#"[{"id": "opencode", "command": "opencode"}]"#)),
        "SERVERFS_ACP_PROFILES_JSON[0].command: expected an absolute path to the agent's \
         executable (never looked up on PATH), got \"opencode\""
    );
}

#[test]
fn the_report_shows_each_profile_without_values() {
    let fx = Fixture::new();
    let config = with_profiles(
        &fx,
        &format!(
            "{}\n[[agent.acp_profiles]]\nid = \"idle\"\ncommand = \"/bin/idle\"",
            zed(
                "args = [\"acp\", \"a b\"]\nenv_passthrough = [\"ZED_KEY\"]\n\
                 env = { ZED_MODE = \"quiet-value\" }\nsession_scoped_allow_always = true"
            )
        ),
        ALLOW_ZED,
    )
    .unwrap();
    let report = config.policy_report();
    let expected = "    acp-zed runtime (ACP):\n      command: /opt/zed/bin/zed\n      \
                    args (2): \"acp\" \"a b\"\n      env passthrough (1): ZED_KEY\n      \
                    fixed env (1): ZED_MODE\n      timeouts: request 60000 ms, probe 30000 ms, \
                    shutdown 3000 ms\n      allow_always: session-scoped, offered as \
                    approve_session\n    acp-idle runtime: defined, not allowed by any workdir\n";
    assert!(report.contains(expected), "{report}");
    assert!(!report.contains("quiet-value"), "{report}");
}
