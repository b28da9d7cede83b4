//! The deployment files under `deploy/`, checked as data: the Compose files
//! parsed as YAML, the Dockerfile as instructions, the systemd unit as INI,
//! the `.env` templates line by line. What is pinned is the hardening a
//! careless edit could drop (read-only root, no capabilities, no published
//! port, read-only workdir mounts, loopback-only publishing, the systemd
//! sandbox) and the agreement between the files (every variable Compose
//! reads is documented, mount and server read the same `READ_ONLY`).
//!
//! Two checks run real programs when the machine has them, and say so when
//! it does not: the container health probe (`bash`) against a local
//! listener, and `systemd-analyze verify` on the unit.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_yaml_ng::Value;
use serverfs_testkit::TempWorkdir;

use crate::common::binary;

/// The base Compose service.
const SERVICE: &str = "serverfs-mcp";
/// The optional tunnel client service.
const TUNNEL: &str = "tunnel";
/// What the image runs by default (ENTRYPOINT followed by CMD).
const IMAGE_COMMAND: &[&str] = &["/usr/local/bin/serverfs", "serve", "--http", "0.0.0.0:8000"];
/// The systemd unit's command line.
const UNIT_EXEC_START: &str = "%h/.local/bin/serverfs serve \
     --config %h/.config/serverfs/serverfs.toml --http 127.0.0.1:8765";
/// The per-slot variables passed into the container (`PATH` is not: it is
/// the host side of the mount only).
const SLOT_VARIABLES: &[&str] = &[
    "ALIAS",
    "DESCRIPTION",
    "READ_ONLY",
    "ALLOW_HIDDEN",
    "DISABLE_DEFAULT_DENY",
    "EXTRA_DENY_GLOBS",
    "MAX_READ_BYTES",
    "MAX_READ_LINES",
    "MAX_WRITE_BYTES",
    "BINARY_TRANSFER_ENABLED",
    "MAX_BINARY_TRANSFER_BYTES",
    "READ_HARDLINKED_FILES",
];
/// `SERVERFS_*` variables of docs/configuration.md §3.2 that compose.yml
/// deliberately does not pass through, with the reason.
const NOT_PASSED: &[(&str, &str)] = &[
    (
        "SERVERFS_AGENT_",
        "the Agent Bridge is not part of the base deployment",
    ),
    (
        "SERVERFS_CODEX_",
        "read by the Agent Bridge only, which is not part of the base deployment",
    ),
    (
        "SERVERFS_CLAUDE_",
        "read by the Agent Bridge only, which is not part of the base deployment",
    ),
    (
        "SERVERFS_QODER_",
        "read by the Agent Bridge only, which is not part of the base deployment",
    ),
    (
        "SERVERFS_ACP_",
        "read by the Agent Bridge only, which is not part of the base deployment",
    ),
    (
        "SERVERFS_HTTP_BIND",
        "the image's command line sets the listener",
    ),
    (
        "SERVERFS_TOKEN_FILE",
        "the image fixes it on the state volume",
    ),
    (
        "SERVERFS_HTTP_OAUTH_STATE_FILE",
        "the image keeps it beside the token file on the state volume",
    ),
    (
        "SERVERFS_HTTP_OAUTH_EXTERNAL_JWKS_FILE",
        "a file would have to be mounted into the container: give the issuer's JWKS URL",
    ),
    (
        "SERVERFS_WORKDIRS_ROOT",
        "the slots are always /workdirs/NN in the image",
    ),
    (
        "SERVERFS_CONFIG",
        "the container is configured from the environment",
    ),
];

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let path = repo_root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn yaml(rel: &str) -> Value {
    serde_yaml_ng::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not valid YAML: {e}"))
}

fn slots() -> impl Iterator<Item = String> {
    (1..=16).map(|n| format!("{n:02}"))
}

/// The string items of a YAML sequence (panics naming `what` otherwise).
fn strings(value: &Value, what: &str) -> Vec<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("{what}: expected a list, got {value:?}"))
        .iter()
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("{what}: expected strings, got {v:?}"))
                .to_owned()
        })
        .collect()
}

fn str_of<'a>(value: &'a Value, what: &str) -> &'a str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{what}: expected a string, got {value:?}"))
}

/// The networks a service joins: the keys of the mapping form (the list
/// form is accepted too).
fn network_names(service: &Value, what: &str) -> Vec<String> {
    match &service["networks"] {
        Value::Mapping(map) => map.keys().map(|k| str_of(k, what).to_owned()).collect(),
        other => strings(other, what),
    }
}

/// A service's `environment` as a map (mapping form only: the list form
/// would hide which values are interpolated).
fn environment(service: &Value, what: &str) -> BTreeMap<String, String> {
    service["environment"]
        .as_mapping()
        .unwrap_or_else(|| panic!("{what}.environment: expected a mapping"))
        .iter()
        .map(|(k, v)| {
            let key = str_of(k, what).to_owned();
            let value = match v {
                Value::String(s) => s.clone(),
                other => panic!("{what}.environment.{key}: expected a string, got {other:?}"),
            };
            (key, value)
        })
        .collect()
}

/// Splits a Compose interpolation `${NAME:-default}` (or `${NAME}`) into
/// its name and default; None for anything else.
fn interpolation(expr: &str) -> Option<(&str, Option<&str>)> {
    let inner = expr.strip_prefix("${")?.strip_suffix('}')?;
    match inner.split_once(":-") {
        Some((name, default)) => Some((name, Some(default))),
        None => Some((inner, None)),
    }
}

/// Every variable name Compose interpolates in `text` (`${NAME…}`).
fn referenced_variables(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices("${") {
        let name: String = text[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        assert!(!name.is_empty(), "odd interpolation at byte {i}");
        names.insert(name);
    }
    names
}

/// The uncommented `KEY=value` lines of an env file, refusing duplicates
/// and anything Compose would not read literally.
fn env_file_entries(rel: &str) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    for (n, line) in read(rel).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        assert!(
            !line.starts_with("export "),
            "{rel}:{}: `export` is not env-file syntax",
            n + 1
        );
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{rel}:{}: expected KEY=value, got {line:?}", n + 1));
        assert_eq!(key, key.trim(), "{rel}:{}: space before '='", n + 1);
        assert!(
            !value.starts_with(' ') && !value.starts_with('"') && !value.starts_with('\''),
            "{rel}:{}: write values bare",
            n + 1
        );
        let previous = entries.insert(key.to_owned(), value.to_owned());
        assert!(previous.is_none(), "{rel}:{}: {key} is set twice", n + 1);
    }
    entries
}

/// `10s`, `1m30s`, `20` (seconds) → seconds.
fn seconds(text: &str) -> u64 {
    let text = text.trim();
    if let Ok(plain) = text.parse::<u64>() {
        return plain;
    }
    let mut total = 0;
    let mut digits = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            digits.push(c);
            rest = &rest[1..];
            continue;
        }
        let (unit, factor) = if let Some(r) = rest.strip_prefix("min") {
            (r, 60)
        } else if let Some(r) = rest.strip_prefix('m') {
            (r, 60)
        } else if let Some(r) = rest.strip_prefix('s') {
            (r, 1)
        } else if let Some(r) = rest.strip_prefix('h') {
            (r, 3600)
        } else {
            panic!("unsupported duration {text:?}")
        };
        let value: u64 = digits
            .parse()
            .unwrap_or_else(|_| panic!("bad duration {text:?}"));
        total += value * factor;
        digits.clear();
        rest = unit;
    }
    assert!(digits.is_empty(), "duration {text:?} lacks a unit");
    total
}

// ---------------------------------------------------------------------------
// compose.yml
// ---------------------------------------------------------------------------

#[test]
fn compose_service_runs_hardened() {
    let compose = yaml("deploy/docker/compose.yml");
    let svc = &compose["services"][SERVICE];
    assert!(svc.is_mapping(), "compose.yml has no service {SERVICE}");

    assert_eq!(
        svc["read_only"],
        Value::Bool(true),
        "read-only root filesystem"
    );
    assert_eq!(strings(&svc["cap_drop"], "cap_drop"), ["ALL"]);
    assert!(
        strings(&svc["security_opt"], "security_opt")
            .contains(&"no-new-privileges:true".to_owned()),
        "no-new-privileges"
    );
    let tmpfs = strings(&svc["tmpfs"], "tmpfs");
    assert!(
        tmpfs.iter().any(|t| t == "/tmp" || t.starts_with("/tmp:")),
        "a tmpfs on /tmp: {tmpfs:?}"
    );
    // Non-root by default: the image's 10001 unless .env says otherwise.
    assert_eq!(
        str_of(&svc["user"], "user"),
        "${SERVERFS_UID:-10001}:${SERVERFS_GID:-10001}"
    );
    assert_eq!(svc["init"], Value::Bool(true), "an init forwards SIGTERM");
    let grace = seconds(str_of(&svc["stop_grace_period"], "stop_grace_period"));
    assert!(
        grace > 10,
        "stop_grace_period {grace}s must exceed the server's 10 s shutdown grace"
    );
    // The image's command (serve --http 0.0.0.0:8000) is what runs.
    assert!(svc.get("command").is_none() && svc.get("entrypoint").is_none());
    let probe = strings(&svc["healthcheck"]["test"], "healthcheck.test").join(" ");
    assert!(probe.contains("healthcheck"), "{probe}");
    assert!(
        !probe.contains("curl") && !probe.contains("wget"),
        "the image has neither: {probe}"
    );

    // Nothing in the base file publishes a port or loosens the sandbox.
    for (name, service) in compose["services"].as_mapping().unwrap() {
        let name = str_of(name, "service name");
        assert!(
            service.get("ports").is_none(),
            "{name}: no published port in compose.yml"
        );
        for key in [
            "privileged",
            "cap_add",
            "network_mode",
            "pid",
            "ipc",
            "devices",
            "userns_mode",
        ] {
            assert!(
                service.get(key).is_none(),
                "{name}: `{key}` must not be set"
            );
        }
        assert_eq!(
            service["read_only"],
            Value::Bool(true),
            "{name}: read-only root"
        );
        assert_eq!(strings(&service["cap_drop"], "cap_drop"), ["ALL"], "{name}");
    }
}

#[test]
fn compose_service_is_reachable_only_on_internal_networks() {
    let compose = yaml("deploy/docker/compose.yml");
    let networks = network_names(&compose["services"][SERVICE], "networks");
    assert!(!networks.is_empty());
    for network in &networks {
        assert_eq!(
            compose["networks"][network.as_str()]["internal"],
            Value::Bool(true),
            "network {network} of {SERVICE} must be internal: true"
        );
    }
    // The tunnel shares the internal network (and has its own way out).
    let tunnel = network_names(&compose["services"][TUNNEL], "tunnel networks");
    assert!(tunnel.iter().any(|n| networks.contains(n)), "{tunnel:?}");
    assert!(
        tunnel
            .iter()
            .any(|n| compose["networks"][n.as_str()]["internal"] != Value::Bool(true)),
        "the tunnel needs an egress network: {tunnel:?}"
    );
}

#[test]
fn compose_workdir_mounts_are_read_only_unless_the_slot_says_otherwise() {
    let compose = yaml("deploy/docker/compose.yml");
    let svc = &compose["services"][SERVICE];
    let env = environment(svc, SERVICE);
    let mounts = svc["volumes"].as_sequence().expect("volumes: a list");
    let mut bind_targets = Vec::new();
    for mount in mounts {
        assert!(mount.is_mapping(), "use the long volume syntax: {mount:?}");
        match str_of(&mount["type"], "volume type") {
            "bind" => bind_targets.push(str_of(&mount["target"], "target").to_owned()),
            "volume" => {
                assert_eq!(str_of(&mount["target"], "target"), "/var/lib/serverfs");
                let name = str_of(&mount["source"], "source");
                assert!(
                    compose["volumes"][name].is_mapping(),
                    "volume {name} is declared"
                );
            }
            other => panic!("unexpected mount type {other}"),
        }
    }
    let expected: Vec<String> = slots().map(|nn| format!("/workdirs/{nn}")).collect();
    assert_eq!(
        bind_targets, expected,
        "exactly one bind mount per slot, nothing else"
    );

    for nn in slots() {
        let target = format!("/workdirs/{nn}");
        let mount = mounts
            .iter()
            .find(|m| m["target"].as_str() == Some(target.as_str()))
            .unwrap();
        assert_eq!(
            str_of(&mount["source"], "source"),
            format!("${{WORKDIR_{nn}_PATH:-./empty-slot}}"),
            "slot {nn}: the host path, else the disabled placeholder"
        );
        let read_only = str_of(&mount["read_only"], "read_only");
        assert_eq!(
            read_only,
            format!("${{WORKDIR_{nn}_READ_ONLY:-true}}"),
            "slot {nn}"
        );
        assert_eq!(
            interpolation(read_only).unwrap().1,
            Some("true"),
            "read-only by default"
        );
        assert_eq!(
            mount["bind"]["create_host_path"],
            Value::Bool(false),
            "slot {nn}: a missing host path is an error, not a new empty directory"
        );
        // Mount and server read the same variable with the same default.
        assert_eq!(
            env[&format!("WORKDIR_{nn}_READ_ONLY")],
            read_only,
            "slot {nn}"
        );
    }

    // The placeholder holds the sentinel and nothing else.
    let placeholder = repo_root().join("deploy/docker/empty-slot");
    let entries: Vec<String> = std::fs::read_dir(&placeholder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(entries, [".serverfs-disabled"]);
    assert!(
        std::fs::symlink_metadata(placeholder.join(".serverfs-disabled"))
            .unwrap()
            .is_file()
    );
}

#[test]
fn compose_environment_passes_server_settings_only() {
    let compose = yaml("deploy/docker/compose.yml");
    let env = environment(&compose["services"][SERVICE], SERVICE);
    for (key, value) in &env {
        let slot_var = key.strip_prefix("WORKDIR_").and_then(|rest| {
            let (nn, var) = rest.split_once('_')?;
            slots().any(|s| s == nn).then_some(var)
        });
        assert!(
            key.starts_with("SERVERFS_") || slot_var.is_some_and(|v| SLOT_VARIABLES.contains(&v)),
            "{key}: only SERVERFS_* and per-slot settings enter the container"
        );
        assert!(
            !key.ends_with("_PATH"),
            "{key}: host paths stay outside the container"
        );
        // Every value comes from .env under the same name.
        let (name, _) = interpolation(value).unwrap_or_else(|| panic!("{key}: {value:?}"));
        assert_eq!(name, key, "{key} is read from a variable of another name");
    }
    for nn in slots() {
        for var in SLOT_VARIABLES {
            assert!(
                env.contains_key(&format!("WORKDIR_{nn}_{var}")),
                "WORKDIR_{nn}_{var} missing"
            );
        }
    }
    let default_of = |key: &str| interpolation(&env[key]).unwrap().1.unwrap_or("").to_owned();
    assert!(
        default_of("SERVERFS_HTTP_ALLOWED_HOSTS")
            .split(',')
            .any(|h| h.trim() == "serverfs-mcp:8000")
    );
    assert_eq!(default_of("SERVERFS_HTTP_AUTH"), "bearer");
    assert_eq!(default_of("SERVERFS_HTTP_TRUST_NETWORK"), "false");

    // Every documented global is passed through or deliberately left out.
    let reference = read("docs/configuration.md");
    let documented: BTreeSet<String> = reference
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .filter(|name| name.starts_with("SERVERFS_"))
        .map(str::to_owned)
        .collect();
    assert!(
        documented.contains("SERVERFS_LOG_LEVEL"),
        "the variable table of docs/configuration.md §3.2 was not found"
    );
    for name in &documented {
        let left_out = NOT_PASSED
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix));
        match left_out {
            Some((_, reason)) => assert!(
                !env.contains_key(name),
                "{name} is passed although it should not be: {reason}"
            ),
            None => assert!(
                env.contains_key(name),
                "{name} is documented but compose.yml does not pass it \
                 (add it, or list it in NOT_PASSED with the reason)"
            ),
        }
    }
}

/// The whole chain an operator relies on, with the real parser: the
/// environment compose.yml gives the container (interpolated from
/// .env.example plus two filled-in slots, the second read-write) and the
/// slot roots its mounts lay out are accepted by `serverfs check-config`,
/// and the mount flag agrees with the server's policy.
#[test]
fn compose_environment_is_accepted_by_the_server() {
    let compose = yaml("deploy/docker/compose.yml");
    let svc = &compose["services"][SERVICE];
    let mut dotenv = env_file_entries("deploy/docker/.env.example");
    for (key, value) in [
        ("WORKDIR_01_ALIAS", "docs"),
        ("WORKDIR_01_PATH", "/srv/docs"),
        ("WORKDIR_02_ALIAS", "notes"),
        ("WORKDIR_02_PATH", "/srv/notes"),
        ("WORKDIR_02_READ_ONLY", "false"),
    ] {
        dotenv.insert(key.to_owned(), value.to_owned());
    }
    // Compose's `${NAME:-default}`: the .env value unless unset or empty.
    let resolve = |expr: &str| -> String {
        let (name, default) = interpolation(expr).unwrap_or_else(|| panic!("{expr:?}"));
        match dotenv.get(name).filter(|v| !v.is_empty()) {
            Some(value) => value.clone(),
            None => default.unwrap_or("").to_owned(),
        }
    };

    // /workdirs/NN as the mounts would make it: the host directory where a
    // PATH is set, the placeholder (sentinel only) elsewhere.
    let scratch = TempWorkdir::new();
    let slots_root = scratch.root();
    let env = environment(svc, SERVICE);
    let mut writable = Vec::new();
    for mount in svc["volumes"].as_sequence().unwrap() {
        if mount["type"].as_str() != Some("bind") {
            continue;
        }
        let target = str_of(&mount["target"], "target");
        let nn = target.strip_prefix("/workdirs/").unwrap();
        let dir = slots_root.join(nn);
        std::fs::create_dir(&dir).unwrap();
        if resolve(str_of(&mount["source"], "source")) == "./empty-slot" {
            std::fs::write(dir.join(".serverfs-disabled"), "").unwrap();
        } else {
            std::fs::write(dir.join("README.md"), "hello\n").unwrap();
        }
        let mount_read_only = resolve(str_of(&mount["read_only"], "read_only"));
        let server_read_only = resolve(&env[&format!("WORKDIR_{nn}_READ_ONLY")]);
        assert_eq!(mount_read_only, server_read_only, "slot {nn}");
        if mount_read_only == "false" {
            writable.push(nn.to_owned());
        }
    }
    assert_eq!(writable, ["02"]);

    let mut command = Command::new(binary());
    command
        .arg("check-config")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SERVERFS_WORKDIRS_ROOT", &slots_root)
        .stdin(Stdio::null());
    for (key, value) in &env {
        command.env(key, resolve(value));
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "check-config refused the Compose environment: {stderr}"
    );
    for needle in ["docs (slot 01)", "notes (slot 02)", "read-write"] {
        assert!(stdout.contains(needle), "{needle:?} not in:\n{stdout}");
    }
}

#[test]
fn compose_tunnel_is_optional_and_carries_no_credentials() {
    let compose = yaml("deploy/docker/compose.yml");
    let tunnel = &compose["services"][TUNNEL];
    assert_eq!(
        strings(&tunnel["profiles"], "profiles"),
        ["tunnel"],
        "opt-in only"
    );
    let env = environment(tunnel, TUNNEL);
    assert_eq!(env["MCP_SERVER_URL"], "http://serverfs-mcp:8000/mcp");
    assert_eq!(
        env.len(),
        1,
        "credentials come from tunnel.env, not compose.yml: {env:?}"
    );
    let env_file = &tunnel["env_file"].as_sequence().expect("env_file: a list")[0];
    assert_eq!(str_of(&env_file["path"], "env_file.path"), "./tunnel.env");
    assert_eq!(env_file["required"], Value::Bool(false));
    assert_eq!(
        str_of(&tunnel["depends_on"][SERVICE]["condition"], "depends_on"),
        "service_healthy"
    );
    assert!(
        strings(&tunnel["security_opt"], "security_opt")
            .contains(&"no-new-privileges:true".to_owned())
    );
    assert!(
        tunnel.get("volumes").is_none(),
        "the tunnel sees no workdir"
    );
    let image = str_of(&tunnel["image"], "image");
    let (name, default) = interpolation(image).expect("the image comes from TUNNEL_IMAGE");
    assert_eq!(name, "TUNNEL_IMAGE");
    assert!(!default.unwrap_or("").ends_with(":latest"), "{image}");

    // No tunnel or provider secret is named in the MCP service or anywhere
    // in compose.yml: they live in tunnel.env only.
    let text = read("deploy/docker/compose.yml");
    for secret in [
        "CONTROL_PLANE_API_KEY",
        "CONTROL_PLANE_TUNNEL_ID",
        "TUNNEL_TOKEN",
        "PASSWORD",
    ] {
        assert!(!text.contains(secret), "compose.yml mentions {secret}");
    }
}

#[test]
fn env_examples_document_every_variable_with_safe_defaults() {
    let example = env_file_entries("deploy/docker/.env.example");
    for rel in [
        "deploy/docker/compose.yml",
        "deploy/docker/compose.publish-loopback.yml",
    ] {
        for name in referenced_variables(&read(rel)) {
            assert!(
                example.contains_key(&name),
                "{rel} reads {name}, which .env.example does not set"
            );
        }
    }
    for (name, value) in &example {
        assert!(
            !value.contains(' ') || name.ends_with("DESCRIPTION"),
            "{name}={value}"
        );
    }
    for nn in slots() {
        assert_eq!(
            example[&format!("WORKDIR_{nn}_READ_ONLY")],
            "true",
            "slot {nn}"
        );
        assert_eq!(example[&format!("WORKDIR_{nn}_ALIAS")], "", "slot {nn}");
        assert_eq!(example[&format!("WORKDIR_{nn}_PATH")], "", "slot {nn}");
        for var in SLOT_VARIABLES.iter().filter(|v| **v != "READ_ONLY") {
            assert_eq!(
                example[&format!("WORKDIR_{nn}_{var}")],
                "",
                "WORKDIR_{nn}_{var}"
            );
        }
    }
    let expect = [
        ("SERVERFS_HTTP_AUTH", "bearer"),
        ("SERVERFS_HTTP_TRUST_NETWORK", "false"),
        ("SERVERFS_HTTP_ALLOWED_ORIGINS", ""),
        ("SERVERFS_ALLOW_HIDDEN", "false"),
        ("SERVERFS_DISABLE_DEFAULT_DENY", "false"),
        ("SERVERFS_BINARY_TRANSFER_ENABLED", "false"),
        ("SERVERFS_READ_HARDLINKED_FILES", "false"),
        ("SERVERFS_UID", "10001"),
        ("SERVERFS_GID", "10001"),
    ];
    for (name, value) in expect {
        assert_eq!(example[name], value, "{name}");
    }

    // The tunnel template commits no credential: every line is a comment.
    let tunnel = env_file_entries("deploy/docker/tunnel.env.example");
    assert!(tunnel.is_empty(), "tunnel.env.example sets {tunnel:?}");
    // The filled-in copies are never committed.
    let ignored: Vec<String> = read("deploy/docker/.gitignore")
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    for name in [".env", "tunnel.env"] {
        assert!(
            ignored.iter().any(|l| l == name),
            "deploy/docker/.gitignore lacks {name}"
        );
    }
}

// ---------------------------------------------------------------------------
// compose.agent.yml
// ---------------------------------------------------------------------------

/// The Bridge settings the overlay passes into the container.
const AGENT_GLOBALS: &[&str] = &[
    "SERVERFS_AGENT_BRIDGE_ENABLED",
    "SERVERFS_AGENT_BRIDGE_TIMEOUT_SECONDS",
    "SERVERFS_AGENT_PEER_UID",
    "SERVERFS_AGENT_PEER_GID",
    "SERVERFS_AGENT_MODE",
    "SERVERFS_AGENT_RUNTIMES",
];
/// The per-slot agent variables the overlay passes.
const AGENT_SLOT_VARIABLES: &[&str] = &["AGENT_MODE", "AGENT_RUNTIMES"];
/// Where the overlay mounts the host Bridge's directories (the container
/// defaults of docs/configuration.md §3.2).
const AGENT_MOUNTS: &[(&str, &str)] = &[
    (
        "SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR",
        "/run/serverfs-agent-bridge",
    ),
    ("SERVERFS_AGENT_LOCK_HOST_DIR", "/run/serverfs-agent-locks"),
];

/// Compose's interpolation of every `${…}` in `text` from `dotenv`:
/// `${NAME:-default}` is the value unless unset or empty, `${NAME:?msg}`
/// is the value or an error carrying `msg`, `${NAME}` the value or "".
fn compose_render(text: &str, dotenv: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find('}')
            .ok_or_else(|| format!("unclosed interpolation in {text:?}"))?;
        let inner = &rest[start + 2..start + end];
        let value = |name: &str| dotenv.get(name).filter(|v| !v.is_empty()).cloned();
        let rendered = if let Some((name, default)) = inner.split_once(":-") {
            value(name).unwrap_or_else(|| default.to_owned())
        } else if let Some((name, message)) = inner.split_once(":?") {
            value(name).ok_or_else(|| format!("{name}: {message}"))?
        } else {
            value(inner).unwrap_or_default()
        };
        out.push_str(&rendered);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// What `docker compose -f compose.yml -f compose.agent.yml` gives
/// serverfs-mcp: its environment (the overlay's added to the base's) and
/// user, interpolated from `dotenv`.
struct RenderedAgentService {
    environment: BTreeMap<String, String>,
    user: String,
    /// (source, target, read_only) of every bind mount, base first.
    binds: Vec<(String, String, String)>,
}

fn render_agent_service(dotenv: &BTreeMap<String, String>) -> Result<RenderedAgentService, String> {
    let base = yaml("deploy/docker/compose.yml");
    let overlay = yaml("deploy/docker/compose.agent.yml");
    let (base, overlay) = (&base["services"][SERVICE], &overlay["services"][SERVICE]);
    let mut rendered_env = BTreeMap::new();
    for (key, value) in environment(base, SERVICE)
        .into_iter()
        .chain(environment(overlay, SERVICE))
    {
        rendered_env.insert(key, compose_render(&value, dotenv)?);
    }
    let mut binds = Vec::new();
    for mount in [base, overlay]
        .iter()
        .flat_map(|svc| svc["volumes"].as_sequence().unwrap())
    {
        if mount["type"].as_str() != Some("bind") {
            continue;
        }
        let read_only = match &mount["read_only"] {
            Value::Bool(flag) => flag.to_string(),
            other => compose_render(str_of(other, "read_only"), dotenv)?,
        };
        binds.push((
            compose_render(str_of(&mount["source"], "source"), dotenv)?,
            str_of(&mount["target"], "target").to_owned(),
            read_only,
        ));
    }
    let user = compose_render(str_of(&overlay["user"], "user"), dotenv)?;
    Ok(RenderedAgentService {
        environment: rendered_env,
        user,
        binds,
    })
}

#[test]
fn agent_overlay_adds_only_the_bridge_mounts_identity_and_agent_settings() {
    let overlay = yaml("deploy/docker/compose.agent.yml");
    let services = overlay["services"].as_mapping().unwrap();
    assert_eq!(services.len(), 1, "the overlay adds no service");
    assert!(
        overlay.get("networks").is_none() && overlay.get("volumes").is_none(),
        "the overlay adds no network or volume"
    );
    let svc = &overlay["services"][SERVICE];
    let keys: BTreeSet<&str> = svc
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| str_of(k, SERVICE))
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["user", "environment", "volumes"]),
        "no image, network, port, env_file or capability change in the overlay"
    );
    // The container's identity is required, from the same .env.
    assert_eq!(
        referenced_variables(str_of(&svc["user"], "user")),
        BTreeSet::from(["SERVERFS_UID".to_owned(), "SERVERFS_GID".to_owned()])
    );

    let env = environment(svc, SERVICE);
    let mut expected: BTreeSet<String> = AGENT_GLOBALS.iter().map(|s| (*s).to_owned()).collect();
    for nn in slots() {
        for var in AGENT_SLOT_VARIABLES {
            expected.insert(format!("WORKDIR_{nn}_{var}"));
        }
    }
    assert_eq!(env.keys().cloned().collect::<BTreeSet<_>>(), expected);
    for (key, value) in &env {
        let (name, _) = interpolation(value).unwrap_or_else(|| panic!("{key}: {value:?}"));
        assert_eq!(name, key, "{key} is read from a variable of another name");
    }
    // Off unless .env turns it on.
    assert_eq!(
        interpolation(&env["SERVERFS_AGENT_BRIDGE_ENABLED"])
            .unwrap()
            .1,
        Some("false")
    );

    // Exactly the two host directories, read-only, never created by
    // Compose, at the container's default paths.
    let mounts = svc["volumes"].as_sequence().unwrap();
    assert_eq!(mounts.len(), AGENT_MOUNTS.len());
    for (mount, (variable, target)) in mounts.iter().zip(AGENT_MOUNTS) {
        assert_eq!(mount["type"].as_str(), Some("bind"));
        assert_eq!(str_of(&mount["target"], "target"), *target);
        assert_eq!(mount["read_only"], Value::Bool(true), "{target}");
        assert_eq!(mount["bind"]["create_host_path"], Value::Bool(false));
        let source = str_of(&mount["source"], "source");
        assert_eq!(
            referenced_variables(source),
            BTreeSet::from([(*variable).to_owned()])
        );
        assert!(source.contains(":?"), "{variable} is required: {source}");
    }

    // Every variable it reads is documented in .env.example, agent mode off.
    let example = env_file_entries("deploy/docker/.env.example");
    for name in referenced_variables(&read("deploy/docker/compose.agent.yml")) {
        assert!(
            example.contains_key(&name),
            "compose.agent.yml reads {name}, which .env.example does not set"
        );
    }
    assert_eq!(example["SERVERFS_AGENT_BRIDGE_ENABLED"], "false");
    // Without the host directories, Compose refuses the overlay by name.
    let error = render_agent_service(&example).err().unwrap();
    assert!(
        error.contains("SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR"),
        "{error}"
    );
}

/// A filled-in `.env` for the agent overlay: `.env.example` plus the host
/// directories under `host`, the container as this process's identity, and
/// `slots` as (slot, mode, runtimes, read_only).
fn agent_dotenv(
    host: &Path,
    globals: &[(&str, &str)],
    slots: &[(&str, &str, &str, bool)],
) -> BTreeMap<String, String> {
    let mut dotenv = env_file_entries("deploy/docker/.env.example");
    let mut set = |key: &str, value: String| {
        dotenv.insert(key.to_owned(), value);
    };
    for dir in ["sockets", "locks", "state"] {
        std::fs::create_dir(host.join(dir)).unwrap();
    }
    let path = |dir: &str| host.join(dir).to_str().unwrap().to_owned();
    set("SERVERFS_AGENT_BRIDGE_ENABLED", "true".into());
    set("SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR", path("sockets"));
    set("SERVERFS_AGENT_LOCK_HOST_DIR", path("locks"));
    set("SERVERFS_AGENT_BRIDGE_STATE_DIR", path("state"));
    set(
        "SERVERFS_UID",
        rustix::process::geteuid().as_raw().to_string(),
    );
    set(
        "SERVERFS_GID",
        rustix::process::getegid().as_raw().to_string(),
    );
    for (key, value) in globals {
        set(key, (*value).to_owned());
    }
    for (nn, mode, runtimes, read_only) in slots {
        let workdir = host.join(format!("workdir-{nn}"));
        std::fs::create_dir(&workdir).unwrap();
        std::fs::write(workdir.join("README.md"), "hello\n").unwrap();
        set(&format!("WORKDIR_{nn}_ALIAS"), format!("slot{nn}"));
        set(
            &format!("WORKDIR_{nn}_PATH"),
            workdir.to_str().unwrap().to_owned(),
        );
        set(&format!("WORKDIR_{nn}_READ_ONLY"), read_only.to_string());
        set(&format!("WORKDIR_{nn}_AGENT_MODE"), (*mode).to_owned());
        set(
            &format!("WORKDIR_{nn}_AGENT_RUNTIMES"),
            (*runtimes).to_owned(),
        );
    }
    dotenv
}

fn write_dotenv(path: &Path, dotenv: &BTreeMap<String, String>) {
    let text: String = dotenv.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// `serverfs check-config` on the container side of `rendered`: each
/// `/workdirs/NN` laid out under `container` as its mount would make it.
fn container_check_config(
    rendered: &RenderedAgentService,
    container: &Path,
) -> std::process::Output {
    let workdirs = container.join("workdirs");
    std::fs::create_dir(&workdirs).unwrap();
    for (source, target, _) in &rendered.binds {
        let Some(nn) = target.strip_prefix("/workdirs/") else {
            continue;
        };
        // A copy of what the mount shows (slot roots must be real
        // directories, so no symbolic link to the host directory).
        let dir = workdirs.join(nn);
        std::fs::create_dir(&dir).unwrap();
        let source = if source == "./empty-slot" {
            repo_root().join("deploy/docker/empty-slot")
        } else {
            PathBuf::from(source)
        };
        for entry in std::fs::read_dir(source).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
    }
    let mut command = Command::new(binary());
    command
        .arg("check-config")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SERVERFS_WORKDIRS_ROOT", &workdirs)
        .envs(&rendered.environment)
        .stdin(Stdio::null());
    command.output().unwrap()
}

fn bridge_check_config(env_file: &Path) -> std::process::Output {
    let bridge = serverfs_testkit::binaries::workspace_binary(
        "serverfs-agent-bridge",
        "serverfs-agent-bridge",
    );
    Command::new(bridge)
        .arg("check-config")
        .arg("--env-file")
        .arg(env_file)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env_file.parent().unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The overlay renders for each slot combination, deterministically from
/// `.env`, and both processes accept what it renders: `serverfs
/// check-config` the container's environment and slots, the Bridge
/// `check-config --env-file` the same file on the host side.
#[test]
fn agent_overlay_renders_from_env_and_both_check_configs_accept_it() {
    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str, &'a str, bool)],
    );
    let cases: &[Case] = &[
        // One read-write slot delegating with write access.
        (&[], &[("01", "workspace-write", "fake", false)]),
        // Two slots, one review-only, one without agents.
        (
            &[],
            &[("01", "review", "fake", true), ("03", "disabled", "", true)],
        ),
        // Defaults for every slot, one slot opting out, a high slot.
        (
            &[
                ("SERVERFS_AGENT_MODE", "review"),
                ("SERVERFS_AGENT_RUNTIMES", "fake"),
            ],
            &[
                ("02", "", "", true),
                ("07", "disabled", "", true),
                ("16", "workspace-write", "fake", false),
            ],
        ),
    ];
    for (globals, slots) in cases {
        let scratch = TempWorkdir::new();
        let host = &scratch.root();
        let dotenv = agent_dotenv(host, globals, slots);
        let rendered = render_agent_service(&dotenv).unwrap();
        // Deterministic: the same .env in another order renders the same.
        let reordered: BTreeMap<String, String> = dotenv.clone().into_iter().rev().collect();
        let again = render_agent_service(&reordered).unwrap();
        assert_eq!(rendered.environment, again.environment);
        assert_eq!(rendered.binds, again.binds);

        assert_eq!(
            rendered.user,
            format!("{}:{}", dotenv["SERVERFS_UID"], dotenv["SERVERFS_GID"])
        );
        for (variable, target) in AGENT_MOUNTS {
            assert!(
                rendered.binds.contains(&(
                    dotenv[*variable].clone(),
                    (*target).to_owned(),
                    "true".into()
                )),
                "{target} is not mounted read-only from {variable}"
            );
        }
        for (nn, mode, runtimes, _) in *slots {
            assert_eq!(
                rendered.environment[&format!("WORKDIR_{nn}_AGENT_MODE")],
                *mode
            );
            assert_eq!(
                rendered.environment[&format!("WORKDIR_{nn}_AGENT_RUNTIMES")],
                *runtimes
            );
        }
        // Nothing of the host side enters the container.
        for (key, value) in &rendered.environment {
            assert!(
                !value.contains(host.to_str().unwrap()),
                "{key}={value}: a host path in the container"
            );
        }

        let container = host.join("container");
        std::fs::create_dir(&container).unwrap();
        let out = container_check_config(&rendered, &container);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "serverfs check-config refused the overlay's environment ({slots:?}): {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (nn, ..) in *slots {
            assert!(
                stdout.contains(&format!("(slot {nn})")),
                "slot {nn}:\n{stdout}"
            );
        }

        let env_file = host.join(".env");
        write_dotenv(&env_file, &dotenv);
        let out = bridge_check_config(&env_file);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "the Bridge refused the same .env ({slots:?}): {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let socket =
            Path::new(&dotenv["SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR"]).join("bridge.sock");
        assert!(
            stdout.contains(&format!("socket: {}", socket.display())),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!(
                "lock_dir: {}",
                dotenv["SERVERFS_AGENT_LOCK_HOST_DIR"]
            )),
            "{stdout}"
        );
    }
}

/// The Bridge refuses a `.env` whose container identity is not the one it
/// serves, naming the variable to change; nothing is created.
#[test]
fn agent_overlay_bridge_refuses_a_container_of_another_identity() {
    let scratch = TempWorkdir::new();
    let host = &scratch.root();
    let own = rustix::process::geteuid().as_raw();
    let other = (own + 1).to_string();
    let mut dotenv = agent_dotenv(host, &[], &[("01", "review", "fake", true)]);
    dotenv.insert("SERVERFS_UID".into(), other.clone());
    let env_file = host.join(".env");
    write_dotenv(&env_file, &dotenv);
    let out = bridge_check_config(&env_file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("set SERVERFS_UID={own} in the .env")),
        "{stderr}"
    );
    let sockets = std::fs::read_dir(host.join("sockets")).unwrap().count();
    assert_eq!(sockets, 0, "a refused start leaves nothing behind");
}

// ---------------------------------------------------------------------------
// compose.publish-loopback.yml
// ---------------------------------------------------------------------------

#[test]
fn publish_override_binds_loopback_only() {
    let base = yaml("deploy/docker/compose.yml");
    let overlay = yaml("deploy/docker/compose.publish-loopback.yml");
    let services = overlay["services"].as_mapping().expect("services");
    assert_eq!(services.len(), 1, "the override touches {SERVICE} only");
    let svc = &overlay["services"][SERVICE];
    let keys: BTreeSet<&str> = svc
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| str_of(k, "key"))
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["networks", "ports"]),
        "nothing else is changed"
    );

    let ports = svc["ports"].as_sequence().expect("ports: a list");
    assert!(!ports.is_empty());
    for port in ports {
        assert_eq!(str_of(&port["host_ip"], "host_ip"), "127.0.0.1", "{port:?}");
        assert_eq!(port["target"].as_u64(), Some(8000), "{port:?}");
    }
    // Still on the internal network (the tunnel keeps working); the added
    // network exists so that Docker can publish at all.
    let networks = network_names(svc, "networks");
    for network in network_names(&base["services"][SERVICE], "base networks") {
        assert!(
            networks.contains(&network),
            "{network} dropped by the override"
        );
    }
    for network in &networks {
        assert!(
            base["networks"][network.as_str()].is_mapping()
                || overlay["networks"][network.as_str()].is_mapping(),
            "network {network} is not declared"
        );
    }
    // Docker maps ports only for the network the container is created on,
    // never for an internal one: the first network (highest priority) must
    // be an ordinary one.
    let priority = |n: &str| svc["networks"][n]["priority"].as_i64().unwrap_or(0);
    let top = networks.iter().map(|n| priority(n)).max().unwrap();
    assert!(top > 0, "give the publishing network a priority");
    for network in networks.iter().filter(|n| priority(n) == top) {
        let internal = base["networks"][network.as_str()]["internal"] == Value::Bool(true)
            || overlay["networks"][network.as_str()]["internal"] == Value::Bool(true);
        assert!(!internal, "{network} is joined first but is internal");
    }
}

// ---------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------

/// The instructions of a Dockerfile: continuation lines joined, comments
/// dropped, as (upper-case keyword, arguments).
fn dockerfile_instructions(text: &str) -> Vec<(String, String)> {
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current
                    .split_once(char::is_whitespace)
                    .unwrap_or((&current, ""));
                instructions.push((keyword.to_ascii_uppercase(), args.trim().to_owned()));
                current.clear();
            }
        }
    }
    assert!(
        current.is_empty(),
        "the Dockerfile ends inside a continuation"
    );
    instructions
}

#[test]
fn dockerfile_builds_in_stages_and_runs_unprivileged() {
    let instructions = dockerfile_instructions(&read("deploy/docker/Dockerfile"));
    let stages: Vec<usize> = instructions
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| k == "FROM")
        .map(|(i, _)| i)
        .collect();
    assert!(stages.len() >= 2, "a builder stage and a runtime stage");

    let from = |i: usize| -> Vec<String> {
        instructions[i]
            .1
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let builder = from(stages[0]);
    assert!(builder[0].starts_with("rust:"), "builder: {builder:?}");
    assert!(
        builder.len() == 3 && builder[1].eq_ignore_ascii_case("as"),
        "named stage: {builder:?}"
    );
    let builder_end = stages[1];
    let build = instructions[stages[0]..builder_end]
        .iter()
        .find(|(k, a)| k == "RUN" && a.contains("cargo build"))
        .expect("the builder runs cargo build");
    for flag in ["--release", "--locked", "-p serverfs"] {
        assert!(
            build.1.contains(flag),
            "cargo build lacks {flag}: {}",
            build.1
        );
    }

    let last = *stages.last().unwrap();
    let runtime = from(last);
    assert!(
        !runtime[0].starts_with("rust:"),
        "a small runtime image: {runtime:?}"
    );
    let final_stage = &instructions[last..];
    let find = |keyword: &str| -> Vec<&str> {
        final_stage
            .iter()
            .filter(|(k, _)| k == keyword)
            .map(|(_, a)| a.as_str())
            .collect()
    };
    let user = *find("USER").last().expect("a USER in the runtime stage");
    let uid = user.split(':').next().unwrap();
    assert!(uid != "root" && uid != "0", "runs as {user}");
    assert_eq!(user, "10001:10001");
    assert_eq!(find("EXPOSE"), ["8000"]);

    let json = |keyword: &str| -> Vec<String> {
        let args = *find(keyword)
            .last()
            .unwrap_or_else(|| panic!("no {keyword}"));
        serde_json::from_str(args).unwrap_or_else(|e| panic!("{keyword} must be exec form: {e}"))
    };
    let mut command = json("ENTRYPOINT");
    command.extend(json("CMD"));
    assert_eq!(command, IMAGE_COMMAND);

    let healthcheck = *find("HEALTHCHECK").last().expect("a HEALTHCHECK");
    assert!(
        healthcheck.contains("CMD") && healthcheck.contains("healthcheck"),
        "{healthcheck}"
    );
    assert!(!healthcheck.contains("curl") && !healthcheck.contains("wget"));

    let text = read("deploy/docker/Dockerfile");
    for needle in [
        "/workdirs/",
        ".serverfs-disabled",
        "/var/lib/serverfs",
        "VOLUME",
    ] {
        assert!(
            text.contains(needle),
            "the Dockerfile does not mention {needle}"
        );
    }

    // Every file COPY'd from the context exists and passes the
    // .dockerignore (re-included by a `!` line after the leading `*`).
    let ignore = read("deploy/docker/Dockerfile.dockerignore");
    let ignore: Vec<&str> = ignore.lines().map(str::trim).collect();
    assert!(ignore.contains(&"*"), "the context is an allowlist");
    for (keyword, args) in &instructions {
        if keyword != "COPY" || args.contains("--from=") {
            continue;
        }
        let words: Vec<&str> = args
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .collect();
        for source in &words[..words.len() - 1] {
            assert!(
                repo_root().join(source).exists(),
                "COPY source {source} does not exist"
            );
            let allowed = ignore.iter().any(|l| {
                l.strip_prefix('!')
                    .is_some_and(|p| p.trim_end_matches('/') == *source)
            });
            assert!(
                allowed,
                "COPY source {source} is excluded by the .dockerignore"
            );
        }
    }
}

/// Serves one connection on `listener` with `status_line`, returning the
/// request head it received (empty when nobody connected within 10 s).
fn answer_once(
    listener: TcpListener,
    status_line: &'static str,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let mut waited = Duration::ZERO;
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if waited > Duration::from_secs(10) {
                        return String::new();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    waited += Duration::from_millis(20);
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut head = String::new();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let body = "ok\n";
        let _ = write!(
            stream,
            "{status_line}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        head
    })
}

/// Runs deploy/docker/healthcheck.sh against `port` (bounded to 10 s).
fn run_probe(port: u16) -> std::process::Output {
    let script = repo_root().join("deploy/docker/healthcheck.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bash");
    // The probe bounds its own read; this bounds a hung connect.
    for _ in 0..200 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the health probe did not finish within 10 s");
    }
    child.wait_with_output().unwrap()
}

#[test]
fn health_probe_wants_200_from_healthz() {
    if Command::new("bash")
        .arg("-c")
        .arg("exit 0")
        .status()
        .is_err()
    {
        eprintln!("skipped: bash is not installed here (the image has it)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = answer_once(listener, "HTTP/1.1 200 OK");
    let out = run_probe(port);
    let head = server.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(head.starts_with("GET /healthz HTTP/1."), "{head}");
    assert!(
        head.contains(&format!("Host: 127.0.0.1:{port}\r\n")),
        "a loopback Host: {head}"
    );

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = answer_once(listener, "HTTP/1.1 421 Misdirected Request");
    let out = run_probe(port);
    server.join().unwrap();
    assert!(!out.status.success(), "a non-200 answer is unhealthy");

    // Nothing listening.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert!(
        !run_probe(port).status.success(),
        "a refused connection is unhealthy"
    );
}

// ---------------------------------------------------------------------------
// systemd user unit
// ---------------------------------------------------------------------------

/// An INI-like unit file: section → (key, value) in order (keys repeat).
fn unit_sections(text: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut sections: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        assert!(
            !line.ends_with('\\'),
            "line {}: keep directives on one line",
            n + 1
        );
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.to_owned());
            sections.entry(name.to_owned()).or_default();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: expected Key=value, got {line:?}", n + 1));
        let section = current
            .clone()
            .unwrap_or_else(|| panic!("line {}: outside a section", n + 1));
        sections
            .get_mut(&section)
            .unwrap()
            .push((key.trim().to_owned(), value.trim().to_owned()));
    }
    sections
}

#[test]
fn systemd_unit_is_sandboxed() {
    let sections = unit_sections(&read("deploy/systemd/serverfs.service"));
    let service = &sections["Service"];
    let values = |key: &str| -> Vec<&str> {
        service
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    let one = |key: &str| -> &str {
        match values(key).as_slice() {
            [value] => value,
            other => panic!("[Service] {key}: expected one value, got {other:?}"),
        }
    };
    assert_eq!(one("ExecStart"), UNIT_EXEC_START);
    let expected = [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "read-only"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("PrivateUsers", "yes"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectKernelLogs", "yes"),
        ("ProtectControlGroups", "yes"),
        ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
        ("RestrictNamespaces", "yes"),
        ("LockPersonality", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("SystemCallArchitectures", "native"),
        ("SystemCallFilter", "@system-service"),
        ("UMask", "0077"),
        ("Restart", "on-failure"),
        ("RestartPreventExitStatus", "2"),
        ("KillSignal", "SIGTERM"),
    ];
    for (key, value) in expected {
        assert_eq!(one(key), value, "[Service] {key}");
    }
    // Far above max_connections' 512 x 2 (issue 14: descriptor exhaustion).
    let files: u64 = one("LimitNOFILE").parse().unwrap();
    assert!(files >= 4096, "LimitNOFILE={files}");
    let stop = seconds(one("TimeoutStopSec"));
    assert!(
        stop > 12,
        "TimeoutStopSec={stop}s must exceed the 10 s shutdown grace + 2 s"
    );

    // A user unit: no identity switch, and write access only where a
    // read-write workdir needs it (placeholders are commented out).
    for key in ["User", "Group", "DynamicUser"] {
        assert!(values(key).is_empty(), "{key}= has no place in a user unit");
    }
    for path in values("ReadWritePaths") {
        let path = path.trim_start_matches('-');
        assert!(
            ![
                "/",
                "%h",
                "%h/",
                "/home",
                "%h/.config",
                "%h/.config/serverfs"
            ]
            .contains(&path),
            "ReadWritePaths={path} is far too broad"
        );
    }
    let bind = UNIT_EXEC_START.rsplit(' ').next().unwrap();
    assert!(bind.starts_with("127.0.0.1:"), "loopback only: {bind}");
    assert_eq!(
        sections["Install"],
        [("WantedBy".to_owned(), "default.target".to_owned())]
    );
}

#[test]
fn systemd_unit_passes_systemd_analyze_verify() {
    verify_unit(
        "serverfs.service",
        "%h/.local/bin/serverfs serve",
        &format!("{} serve", binary()),
    );
}

#[test]
fn bridge_systemd_unit_passes_systemd_analyze_verify() {
    let bridge = serverfs_testkit::binaries::workspace_binary(
        "serverfs-agent-bridge",
        "serverfs-agent-bridge",
    );
    verify_unit(
        "serverfs-agent-bridge.service",
        "%h/.local/bin/serverfs-agent-bridge serve",
        &format!("{} serve", bridge.display()),
    );
}

/// `systemd-analyze verify` on `deploy/systemd/<name>`, with the unit's
/// `ExecStart` program (which need not exist here; verify checks that it is
/// executable) replaced by the binary under test. Nothing else is changed.
fn verify_unit(name: &str, exec: &str, binary_exec: &str) {
    let scratch = TempWorkdir::new();
    let unit = read(&format!("deploy/systemd/{name}"));
    assert!(unit.contains(exec), "{name} does not run {exec}");
    let unit = unit.replace(exec, binary_exec);
    let path = scratch.root().join(name);
    std::fs::write(&path, unit).unwrap();
    verify_unit_file(&path);
}

/// `systemd-analyze verify` on the unit at `path` (skipped with a printed
/// reason where the machine cannot run it).
fn verify_unit_file(path: &Path) {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("skipped: systemd-analyze is not installed");
        return;
    };
    if !version.status.success() {
        eprintln!("skipped: systemd-analyze --version failed");
        return;
    }
    let name = path.file_name().unwrap().to_str().unwrap();
    let scratch = TempWorkdir::new();
    let dir = scratch.root();
    // The user manager wants a runtime directory; give it a private one.
    let runtime = dir.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();

    let mut attempts = Vec::new();
    for mode in [&["--user"][..], &[][..]] {
        let out = Command::new("systemd-analyze")
            .args(mode)
            .arg("verify")
            .arg(path)
            .env("XDG_RUNTIME_DIR", &runtime)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Complaints about the unit name it; anything else is about this
        // machine (no user manager, no /run/user, …).
        let about_unit: Vec<&str> = text.lines().filter(|l| l.contains(name)).collect();
        assert!(
            about_unit.is_empty(),
            "systemd-analyze {mode:?} verify:\n{text}"
        );
        if out.status.success() {
            return;
        }
        attempts.push(format!("{mode:?}: {}", text.trim()));
    }
    eprintln!(
        "skipped: systemd-analyze verify could not run on this machine (no complaint about the \
         unit itself): {attempts:?}"
    );
}

// ---------------------------------------------------------------------------
// serverfs install-units
// ---------------------------------------------------------------------------

const UNIT_NAMES: [&str; 2] = ["serverfs-agent-bridge.service", "serverfs.service"];

fn bridge_binary() -> PathBuf {
    serverfs_testkit::binaries::workspace_binary("serverfs-agent-bridge", "serverfs-agent-bridge")
}

/// `serverfs install-units` with `args`, HOME and XDG_CONFIG_HOME as
/// given; returns (exit code, stdout, stderr).
fn install_units(args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String, String) {
    let mut command = Command::new(binary());
    command
        .arg("install-units")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether two paths name one file (same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The units it writes carry this machine's binaries and configuration,
/// keep everything else of the committed templates, pass `systemd-analyze
/// --user verify`, and the output says how to start them.
#[test]
fn install_units_writes_both_units_with_the_real_paths() {
    let scratch = TempWorkdir::new();
    let root = scratch.root();
    let config = root.join("serverfs.toml");
    std::fs::write(&config, "").unwrap();
    let bridge = bridge_binary();
    let xdg = root.join("xdg");
    let (code, stdout, stderr) = install_units(
        &[
            "--config",
            config.to_str().unwrap(),
            "--bridge",
            bridge.to_str().unwrap(),
        ],
        &[("XDG_CONFIG_HOME", &xdg), ("HOME", &root)],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let dir = xdg.join("systemd/user");
    for name in UNIT_NAMES {
        let path = dir.join(name);
        assert!(
            stdout.contains(&format!("wrote {}", path.display())),
            "{stdout}"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o644
        );
        assert!(
            !text.contains("ExecStart=%h"),
            "{name} still has the template's paths"
        );
        verify_unit_file(&path);
    }
    let bridge_unit = std::fs::read_to_string(dir.join("serverfs-agent-bridge.service")).unwrap();
    assert!(bridge_unit.contains(&format!(
        "\nExecStart={} serve --config {}\n",
        bridge.display(),
        config.display()
    )));
    let server_unit = std::fs::read_to_string(dir.join("serverfs.service")).unwrap();
    // The running binary's own path (however the test spells it).
    let exec_start = server_unit
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart="))
        .unwrap();
    let (program, rest) = exec_start.split_once(' ').unwrap();
    assert!(
        same_file(Path::new(program), Path::new(binary())),
        "{exec_start}"
    );
    assert_eq!(
        rest,
        format!("serve --config {} --http 127.0.0.1:8765", config.display())
    );
    let serverfs = PathBuf::from(program);
    // Everything but ExecStart is the committed template.
    for (name, text) in [
        ("serverfs-agent-bridge.service", &bridge_unit),
        ("serverfs.service", &server_unit),
    ] {
        let template = read(&format!("deploy/systemd/{name}"));
        let differing: Vec<&str> = text
            .lines()
            .zip(template.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a)
            .collect();
        assert_eq!(differing.len(), 1, "{name}: {differing:?}");
        assert!(differing[0].starts_with("ExecStart="));
    }
    for command in [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now serverfs-agent-bridge.service",
        "systemctl --user enable --now serverfs.service",
        "loginctl enable-linger",
    ] {
        assert!(stdout.contains(command), "{command}:\n{stdout}");
    }

    // Again: nothing changes. The Bridge next to serverfs is the default.
    let (code, stdout, stderr) = install_units(
        &[
            "--config",
            config.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        same_file(&serverfs.with_file_name("serverfs-agent-bridge"), &bridge),
        "the test builds both binaries into one directory"
    );
    assert_eq!(code, Some(0), "{stderr}");
    for name in UNIT_NAMES {
        assert!(
            stdout.contains(&format!("unchanged {}", dir.join(name).display())),
            "{stdout}"
        );
    }
}

/// A unit that differs is refused (nothing written, the other unit
/// included) unless --force; bad inputs are refused with their code.
#[test]
fn install_units_refuses_to_overwrite_and_bad_inputs() {
    let scratch = TempWorkdir::new();
    let root = scratch.root();
    let config = root.join("serverfs.toml");
    std::fs::write(&config, "").unwrap();
    let bridge = bridge_binary();
    let dir = root.join("units");
    std::fs::create_dir(&dir).unwrap();
    let edited = dir.join("serverfs.service");
    std::fs::write(&edited, "[Service]\nExecStart=/bin/true\n").unwrap();
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut all = vec![
            "--config".to_owned(),
            config.to_str().unwrap().to_owned(),
            "--bridge".to_owned(),
            bridge.to_str().unwrap().to_owned(),
            "--dir".to_owned(),
            dir.to_str().unwrap().to_owned(),
        ];
        all.extend(extra.iter().map(|s| (*s).to_owned()));
        all
    };
    let run = |all: &[String]| {
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        install_units(&refs, &[])
    };
    let (code, stdout, stderr) = run(&args(&[]));
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stderr.contains("UNIT_EXISTS") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&edited).unwrap(),
        "[Service]\nExecStart=/bin/true\n"
    );
    assert!(
        !dir.join("serverfs-agent-bridge.service").exists(),
        "nothing is written"
    );
    let (code, stdout, stderr) = run(&args(&["--force"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("replaced {}", edited.display())),
        "{stdout}"
    );
    assert!(
        std::fs::read_to_string(&edited)
            .unwrap()
            .contains("--http 127.0.0.1:8765")
    );

    // Bad inputs: each its code, nothing written.
    let fresh = root.join("fresh");
    let spaced = root.join("with space");
    std::fs::create_dir(&spaced).unwrap();
    let spaced_config = spaced.join("serverfs.toml");
    std::fs::write(&spaced_config, "").unwrap();
    let missing = root.join("missing.toml");
    let not_exec = root.join("serverfs.toml");
    for (args, code) in [
        (
            vec![
                "--config",
                missing.to_str().unwrap(),
                "--bridge",
                bridge.to_str().unwrap(),
            ],
            "CONFIG_NOT_FOUND",
        ),
        (
            vec![
                "--config",
                config.to_str().unwrap(),
                "--bridge",
                not_exec.to_str().unwrap(),
            ],
            "BRIDGE_NOT_FOUND",
        ),
        (
            vec![
                "--config",
                spaced_config.to_str().unwrap(),
                "--bridge",
                bridge.to_str().unwrap(),
            ],
            "UNIT_PATH_UNSAFE",
        ),
    ] {
        let mut all = args.clone();
        all.extend(["--dir", fresh.to_str().unwrap()]);
        let (status, _, stderr) = install_units(&all, &[]);
        assert_eq!(status, Some(1), "{code}: {stderr}");
        assert!(
            stderr.starts_with(&format!("serverfs: install-units: {code}: ")),
            "{stderr}"
        );
        assert!(!fresh.exists(), "{code}: nothing is written");
    }
    // No HOME, no XDG_CONFIG_HOME, no --dir.
    let (status, _, stderr) = install_units(
        &[
            "--config",
            config.to_str().unwrap(),
            "--bridge",
            bridge.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(status, Some(1));
    assert!(stderr.contains("NO_UNIT_DIR"), "{stderr}");
    // Every code is documented.
    let guide = read("docs/deploy.md");
    for code in [
        "CONFIG_NOT_FOUND",
        "BRIDGE_NOT_FOUND",
        "BINARY_UNKNOWN",
        "UNIT_PATH_UNSAFE",
        "NO_UNIT_DIR",
        "UNIT_EXISTS",
        "UNIT_WRITE_FAILED",
    ] {
        assert!(
            guide.contains(&format!("`{code}`")),
            "docs/deploy.md lacks {code}"
        );
    }
}

/// The Bridge's user unit: stops within its shutdown bound, restarts on
/// failure but not after a configuration error, kills the whole cgroup
/// (provider process groups included), is delegated its cgroup for task
/// cgroups, no identity switch.
#[test]
fn bridge_systemd_unit_stops_gracefully_and_restarts_on_failure() {
    let sections = unit_sections(&read("deploy/systemd/serverfs-agent-bridge.service"));
    let service = &sections["Service"];
    let one = |key: &str| -> &str {
        let values: Vec<&str> = service
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect();
        match values.as_slice() {
            [value] => value,
            other => panic!("[Service] {key}: expected one value, got {other:?}"),
        }
    };
    assert!(
        one("ExecStart").contains("serverfs-agent-bridge serve --config "),
        "{}",
        one("ExecStart")
    );
    for (key, value) in [
        ("Restart", "on-failure"),
        ("RestartPreventExitStatus", "2"),
        ("KillSignal", "SIGTERM"),
        ("KillMode", "control-group"),
        ("Delegate", "yes"),
        ("NoNewPrivileges", "yes"),
    ] {
        assert_eq!(one(key), value, "[Service] {key}");
    }
    // 15 s for runners plus the 10 s provider interrupt bound.
    let stop = seconds(one("TimeoutStopSec"));
    assert!(
        stop >= 25,
        "TimeoutStopSec={stop}s is shorter than the shutdown bounds"
    );
    for key in ["User", "Group", "DynamicUser"] {
        assert!(
            service.iter().all(|(k, _)| k != key),
            "{key}= has no place in a user unit"
        );
    }
    assert_eq!(
        sections["Install"],
        [("WantedBy".to_owned(), "default.target".to_owned())]
    );
}

// ---------------------------------------------------------------------------
// docs/deploy.md
// ---------------------------------------------------------------------------

/// docs/agent-bridge.md opens with the five-step first run (install,
/// authenticate, enable one workdir, doctor, submit), for the fake runtime
/// and Codex; the demo script shows both doctors before it serves.
#[test]
fn agent_guide_starts_with_the_five_step_first_run() {
    let guide = read("docs/agent-bridge.md");
    let first_section = guide
        .lines()
        .find(|line| line.starts_with("## "))
        .unwrap_or("");
    assert_eq!(first_section, "## First run in five steps");
    let section: String = guide
        .split("## First run in five steps")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap()
        .to_owned();
    for (n, step) in [
        "Install a runtime",
        "Authenticate it",
        "Enable one workdir",
        "Run `doctor`",
        "Submit from a client",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            section.contains(&format!("{}. **{step}", n + 1)),
            "step {} ({step}) missing",
            n + 1
        );
    }
    for needle in [
        "serverfs-agent-bridge doctor --config",
        "serverfs doctor --config",
        "serverfs install-units --config",
        "codex login",
        "agent_runtimes = [\"fake\"]",
        "submit_agent_task",
    ] {
        assert!(
            section.contains(needle),
            "{needle} missing from the first run"
        );
    }

    let demo = read("scripts/demo-agent.sh");
    let position = |needle: &str| {
        demo.find(needle)
            .unwrap_or_else(|| panic!("demo-agent.sh lacks {needle}"))
    };
    let serve = position("\"$bin/serverfs\" serve");
    assert!(position("\"$bin/serverfs-agent-bridge\" doctor") < serve);
    assert!(position("\"$bin/serverfs\" doctor") < serve);
    assert!(
        position("\"$bin/serverfs-agent-bridge\" doctor")
            < position("== ServerFS with agent tools")
    );
}

#[test]
fn deploy_guide_covers_the_files_and_the_usual_failures() {
    let guide = read("docs/deploy.md");
    for file in [
        "compose.yml",
        "compose.publish-loopback.yml",
        "compose.agent.yml",
        ".env.example",
        "tunnel.env.example",
        "Dockerfile",
        "serverfs.service",
        "empty-slot",
    ] {
        assert!(
            guide.contains(file),
            "docs/deploy.md does not mention {file}"
        );
    }
    for status in ["401", "421", "403", "413", "exit status 2", "doctor"] {
        assert!(
            guide.contains(status),
            "docs/deploy.md does not cover {status}"
        );
    }
}
