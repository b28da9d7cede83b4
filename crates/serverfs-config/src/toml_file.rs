//! The native source: `serverfs.toml`.
//!
//! The file is deserialized into structs that deny unknown fields and
//! accept only the TOML type each key documents (no string coercion), then
//! turned into [`RawConfig`]. Deserialization errors are rewritten to name
//! the dotted key at fault (`workdirs[1].read_only`), found from the error's
//! byte span in a spanned parse of the same text.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::de::{DeTable, DeValue};

use crate::acp::AcpProfileEntry;
use crate::agent::AgentMode;
use crate::approvals::{Word, word};
use crate::cli_runtime::{self, StreamJsonCli};
use crate::codex::{self, CodexTransport};
use crate::env::{native_bridge_paths, native_state_dir, native_token_file};
use crate::error::{ConfigError, one_line};
use crate::http::HttpAuth;
use crate::limits;
use crate::model::{LogLevel, TextContent};
use crate::oauth::{RawOAuth, RawOAuthClient};
use crate::provider_cgroup::ProviderCgroup;
use crate::qoder_auth::QoderAuth;
use crate::raw::{
    RawAgent, RawCliRuntime, RawCodex, RawConfig, RawConnectionLimits, RawDefaults, RawHttp,
    RawProxyRuntimes, RawServer, RawWorkdir, Val,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    #[serde(default)]
    server: ServerToml,
    #[serde(default)]
    agent: AgentToml,
    #[serde(default)]
    http: HttpToml,
    #[serde(default)]
    workdirs: Vec<WorkdirToml>,
}

// Integers are read as i64 (TOML's integer type) so that a negative or
// oversized value reaches the bounds check and gets its key in the message.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerToml {
    log_level: Option<String>,
    text_content: Option<String>,
    default_list_limit: Option<i64>,
    max_list_entries: Option<i64>,
    default_search_results: Option<i64>,
    max_search_results: Option<i64>,
    max_walk_entries: Option<i64>,
    search_timeout_ms: Option<i64>,
    search_max_file_bytes: Option<i64>,
    max_edits_per_call: Option<i64>,
    // Defaults inherited by every workdir.
    allow_hidden: Option<bool>,
    default_deny: Option<bool>,
    deny: Option<Vec<String>>,
    binary_transfer: Option<bool>,
    read_hardlinked_files: Option<bool>,
    max_read_lines: Option<i64>,
    max_read_bytes: Option<i64>,
    max_write_bytes: Option<i64>,
    max_binary_transfer_bytes: Option<i64>,
    agent_mode: Option<String>,
    agent_runtimes: Option<Vec<String>>,
    approvals: Option<String>,
    approval_paths: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentToml {
    enabled: Option<bool>,
    socket: Option<PathBuf>,
    timeout_ms: Option<i64>,
    lock_dir: Option<PathBuf>,
    // The Bridge's own settings (serverfs ignores them).
    state_dir: Option<PathBuf>,
    max_active_tasks: Option<i64>,
    task_timeout_seconds: Option<i64>,
    interaction_timeout_seconds: Option<i64>,
    retention_hours: Option<i64>,
    result_spool_threshold_bytes: Option<i64>,
    peer_uid: Option<i64>,
    peer_gid: Option<i64>,
    proxy_runtimes: Option<Vec<String>>,
    provider_cgroup: Option<String>,
    // The Codex runtime (flat keys: the Bridge's other settings are flat too).
    codex_bin: Option<String>,
    codex_home: Option<PathBuf>,
    codex_transport: Option<String>,
    codex_autostart: Option<bool>,
    codex_request_timeout_seconds: Option<Seconds>,
    codex_env_passthrough: Option<Vec<String>>,
    // The stream-json CLI runtimes, flat in the same way.
    claude_bin: Option<String>,
    claude_request_timeout_seconds: Option<Seconds>,
    claude_env_passthrough: Option<Vec<String>>,
    qoder_bin: Option<String>,
    qoder_request_timeout_seconds: Option<Seconds>,
    qoder_env_passthrough: Option<Vec<String>>,
    qoder_auth: Option<String>,
    // ACP agent profiles: `[[agent.acp_profiles]]` tables, one per agent.
    acp_profiles: Option<Vec<AcpProfileEntry>>,
}

/// A duration in seconds written as a TOML (or JSON) integer or float
/// (`10`, `2.5`). Range and finiteness (`inf`, `nan` are TOML floats) are
/// checked by validation, with the key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seconds(pub(crate) f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Seconds, D::Error> {
        struct SecondsVisitor;

        impl Visitor<'_> for SecondsVisitor {
            type Value = Seconds;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number of seconds")
            }

            // Whole seconds convert exactly up to 2^53, far past any bound.
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Seconds, E> {
                Ok(Seconds(value as f64))
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Seconds, E> {
                Ok(Seconds(value as f64))
            }

            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Seconds, E> {
                Ok(Seconds(value))
            }
        }

        deserializer.deserialize_any(SecondsVisitor)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpToml {
    // A string, parsed as a socket address by validation so the error can
    // say what an address looks like.
    bind: Option<String>,
    auth: Option<String>,
    trust_network: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    token_file: Option<PathBuf>,
    request_timeout_ms: Option<i64>,
    max_concurrent_requests: Option<i64>,
    shutdown_grace_ms: Option<i64>,
    header_timeout_ms: Option<i64>,
    body_timeout_ms: Option<i64>,
    max_connections: Option<i64>,
    session_idle_timeout_ms: Option<i64>,
    max_sessions: Option<i64>,
    max_sessions_per_token: Option<i64>,
    oauth: Option<OAuthToml>,
}

/// `[http.oauth]`: the settings of `auth = "oauth"`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthToml {
    public_url: Option<String>,
    state_file: Option<PathBuf>,
    access_token_ttl_s: Option<i64>,
    refresh_token_ttl_s: Option<i64>,
    allowed_redirect_uris: Option<Vec<String>>,
    dynamic_registration: Option<bool>,
    client_metadata_documents: Option<bool>,
    accept_bearer_tokens: Option<bool>,
    clients: Option<Vec<OAuthClientToml>>,
    external_issuer: Option<String>,
    external_jwks_file: Option<PathBuf>,
    external_jwks_url: Option<String>,
    external_audience: Option<String>,
}

/// `[[http.oauth.clients]]`: a client the operator registers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthClientToml {
    client_id: String,
    name: String,
    redirect_uris: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkdirToml {
    alias: String,
    path: PathBuf,
    description: Option<String>,
    read_only: Option<bool>,
    allow_hidden: Option<bool>,
    default_deny: Option<bool>,
    deny: Option<Vec<String>>,
    binary_transfer: Option<bool>,
    read_hardlinked_files: Option<bool>,
    max_read_lines: Option<i64>,
    max_read_bytes: Option<i64>,
    max_write_bytes: Option<i64>,
    max_binary_transfer_bytes: Option<i64>,
    agent_mode: Option<String>,
    agent_runtimes: Option<Vec<String>>,
    approvals: Option<String>,
    approval_paths: Option<String>,
}

/// Parses a `serverfs.toml` text. Relative workdir paths are resolved
/// against `base_dir` (the file's directory); `env` only supplies the
/// defaults of the Bridge socket, lock and state directories and of the
/// token file (XDG variables, HOME).
pub(crate) fn raw_from_toml(
    text: &str,
    base_dir: &Path,
    env: &BTreeMap<String, String>,
) -> Result<RawConfig, ConfigError> {
    // Parse once with spans: syntax errors are reported from here, and the
    // spans let type errors below be attributed to a key path.
    let spanned = DeTable::parse(text).map_err(|err| {
        let (line, column) = err
            .span()
            .map_or((1, 1), |span| line_column(text, span.start));
        ConfigError::TomlSyntax {
            line,
            column,
            message: one_line(err.message()),
        }
    })?;
    let file: FileToml = toml::from_str(text).map_err(|err| {
        let offset = err.span().map_or(0, |span| span.start);
        let (line, column) = line_column(text, offset);
        let message = plain_words(&one_line(err.message()));
        match key_path_at(spanned.get_ref(), offset) {
            Some(key) => ConfigError::TomlKey { key, line, message },
            None => ConfigError::TomlSyntax {
                line,
                column,
                message,
            },
        }
    })?;
    into_raw(file, base_dir, env)
}

fn into_raw(
    file: FileToml,
    base_dir: &Path,
    env: &BTreeMap<String, String>,
) -> Result<RawConfig, ConfigError> {
    let s = file.server;
    let num = |value: Option<i64>, limit: limits::Limit, name: &str| {
        Val::or_default(value, limit.default_i64(), format!("server.{name}"))
    };
    let log_level = match s.log_level {
        None => LogLevel::default(),
        Some(text) => LogLevel::parse(&text).ok_or(ConfigError::InvalidValue {
            key: "server.log_level".to_owned(),
            expected: "one of \"debug\", \"info\", \"warning\", \"error\"",
            got: text,
        })?,
    };
    let text_content = match s.text_content {
        None => TextContent::default(),
        Some(text) => TextContent::parse(&text).ok_or(ConfigError::InvalidValue {
            key: "server.text_content".to_owned(),
            expected: "one of \"full\", \"summary\"",
            got: text,
        })?,
    };
    let server = RawServer {
        log_level,
        text_content,
        default_list_limit: num(
            s.default_list_limit,
            limits::DEFAULT_LIST_LIMIT,
            "default_list_limit",
        ),
        max_list_entries: num(
            s.max_list_entries,
            limits::MAX_LIST_ENTRIES,
            "max_list_entries",
        ),
        default_search_results: num(
            s.default_search_results,
            limits::DEFAULT_SEARCH_RESULTS,
            "default_search_results",
        ),
        max_search_results: num(
            s.max_search_results,
            limits::MAX_SEARCH_RESULTS,
            "max_search_results",
        ),
        max_walk_entries: num(
            s.max_walk_entries,
            limits::MAX_WALK_ENTRIES,
            "max_walk_entries",
        ),
        search_timeout_ms: num(
            s.search_timeout_ms,
            limits::SEARCH_TIMEOUT_MS,
            "search_timeout_ms",
        ),
        search_max_file_bytes: num(
            s.search_max_file_bytes,
            limits::SEARCH_MAX_FILE_BYTES,
            "search_max_file_bytes",
        ),
        max_edits_per_call: num(
            s.max_edits_per_call,
            limits::MAX_EDITS_PER_CALL,
            "max_edits_per_call",
        ),
    };
    let defaults = RawDefaults {
        allow_hidden: s.allow_hidden.unwrap_or(false),
        default_deny: s.default_deny.unwrap_or(true),
        deny: Val::or_default(s.deny, Vec::new(), "server.deny"),
        binary_transfer: s.binary_transfer.unwrap_or(false),
        // Every serverfs.toml is a configuration new to this implementation
        // (the format came with it), so the unwritten default refuses
        // (docs/configuration.md §5.8).
        read_hardlinked_files: s.read_hardlinked_files.unwrap_or(false),
        max_read_lines: num(s.max_read_lines, limits::MAX_READ_LINES, "max_read_lines"),
        max_read_bytes: num(s.max_read_bytes, limits::MAX_READ_BYTES, "max_read_bytes"),
        max_write_bytes: num(
            s.max_write_bytes,
            limits::MAX_WRITE_BYTES,
            "max_write_bytes",
        ),
        max_binary_transfer_bytes: num(
            s.max_binary_transfer_bytes,
            limits::MAX_BINARY_TRANSFER_BYTES,
            "max_binary_transfer_bytes",
        ),
        agent_mode: Val::or_default(
            s.agent_mode
                .map(|m| agent_mode(&m, "server.agent_mode"))
                .transpose()?,
            AgentMode::Disabled,
            "server.agent_mode",
        ),
        agent_runtimes: Val::or_default(s.agent_runtimes, Vec::new(), "server.agent_runtimes"),
        approvals: optional_word(s.approvals, "server.approvals")?.unwrap_or_default(),
        approval_paths: optional_word(s.approval_paths, "server.approval_paths")?
            .unwrap_or_default(),
    };

    let agent = agent_table(file.agent, env)?;
    let http = http_table(file.http, base_dir, env)?;

    let workdirs = file
        .workdirs
        .into_iter()
        .enumerate()
        .map(|(index, w)| workdir(index, w, base_dir))
        .collect::<Result<Vec<_>, _>>()?;

    Ok(RawConfig {
        server,
        defaults,
        agent,
        http,
        workdirs,
        clamp_defaults: false,
        empty_hint: "the configuration file has no [[workdirs]] table".to_owned(),
    })
}

fn agent_table(a: AgentToml, env: &BTreeMap<String, String>) -> Result<RawAgent, ConfigError> {
    let num = |value: Option<i64>, limit: limits::Limit, name: &str| {
        Val::or_default(value, limit.default_i64(), format!("agent.{name}"))
    };
    let (default_socket, default_lock_dir) = native_bridge_paths(env, a.socket.as_deref());
    let codex_transport = a
        .codex_transport
        .map(|text| {
            CodexTransport::parse(&text).ok_or(ConfigError::InvalidValue {
                key: "agent.codex_transport".to_owned(),
                expected: "one of \"stdio\", \"daemon\"",
                got: text,
            })
        })
        .transpose()?;
    let qoder_auth = a
        .qoder_auth
        .map(|text| {
            QoderAuth::parse(&text).ok_or(ConfigError::InvalidValue {
                key: "agent.qoder_auth".to_owned(),
                expected: QoderAuth::EXPECTED,
                got: text,
            })
        })
        .transpose()?;
    let provider_cgroup = a
        .provider_cgroup
        .map(|text| {
            ProviderCgroup::parse(&text).ok_or(ConfigError::InvalidValue {
                key: "agent.provider_cgroup".to_owned(),
                expected: ProviderCgroup::EXPECTED,
                got: text,
            })
        })
        .transpose()?;
    Ok(RawAgent {
        enabled: Val::or_default(a.enabled, false, "agent.enabled"),
        socket: Val::or_default(a.socket, default_socket, "agent.socket"),
        timeout_ms: num(a.timeout_ms, limits::BRIDGE_TIMEOUT_MS, "timeout_ms"),
        lock_dir: Val::or_default(a.lock_dir, default_lock_dir, "agent.lock_dir"),
        state_dir: Val::or_default(a.state_dir, native_state_dir(env), "agent.state_dir"),
        max_active_tasks: num(
            a.max_active_tasks,
            limits::MAX_ACTIVE_TASKS,
            "max_active_tasks",
        ),
        task_timeout_seconds: num(
            a.task_timeout_seconds,
            limits::TASK_TIMEOUT_SECONDS,
            "task_timeout_seconds",
        ),
        interaction_timeout_seconds: num(
            a.interaction_timeout_seconds,
            limits::INTERACTION_TIMEOUT_SECONDS,
            "interaction_timeout_seconds",
        ),
        retention_hours: num(
            a.retention_hours,
            limits::TASK_RETENTION_HOURS,
            "retention_hours",
        ),
        result_spool_threshold_bytes: num(
            a.result_spool_threshold_bytes,
            limits::RESULT_SPOOL_THRESHOLD_BYTES,
            "result_spool_threshold_bytes",
        ),
        peer_uid: a.peer_uid.map(|id| Val::set(id, "agent.peer_uid")),
        peer_gid: a.peer_gid.map(|id| Val::set(id, "agent.peer_gid")),
        proxy_runtimes: RawProxyRuntimes::Named(Val::or_default(
            a.proxy_runtimes,
            Vec::new(),
            "agent.proxy_runtimes",
        )),
        provider_cgroup: Val::or_default(
            provider_cgroup,
            ProviderCgroup::Auto,
            "agent.provider_cgroup",
        ),
        codex: RawCodex {
            bin: Val::or_default(
                a.codex_bin,
                codex::DEFAULT_BIN.to_owned(),
                "agent.codex_bin",
            ),
            // Used as written, like every [agent] path: validation refuses a
            // relative one instead of resolving it against the file.
            home: a.codex_home.map(|home| Val::set(home, "agent.codex_home")),
            transport: Val::or_default(
                codex_transport,
                CodexTransport::default(),
                "agent.codex_transport",
            ),
            autostart: Val::or_default(a.codex_autostart, false, "agent.codex_autostart"),
            request_timeout_seconds: Val::or_default(
                a.codex_request_timeout_seconds.map(|Seconds(s)| s),
                limits::CODEX_REQUEST_TIMEOUT_MS.default_seconds(),
                "agent.codex_request_timeout_seconds",
            ),
            env_passthrough: Val::or_default(
                a.codex_env_passthrough,
                Vec::new(),
                "agent.codex_env_passthrough",
            ),
        },
        claude: cli_runtime_keys(
            &cli_runtime::CLAUDE,
            a.claude_bin,
            a.claude_request_timeout_seconds,
            a.claude_env_passthrough,
        ),
        qoder: cli_runtime_keys(
            &cli_runtime::QODER,
            a.qoder_bin,
            a.qoder_request_timeout_seconds,
            a.qoder_env_passthrough,
        ),
        qoder_auth: Val::or_default(qoder_auth, QoderAuth::default(), "agent.qoder_auth"),
        acp_profiles: Val::or_default(
            a.acp_profiles.map(|profiles| {
                profiles
                    .into_iter()
                    .enumerate()
                    .map(|(index, entry)| entry.into_raw(&format!("agent.acp_profiles[{index}]")))
                    .collect()
            }),
            Vec::new(),
            "agent.acp_profiles",
        ),
    })
}

/// One stream-json runtime's `[agent] <name>_*` keys.
fn cli_runtime_keys(
    cli: &StreamJsonCli,
    bin: Option<String>,
    request_timeout_seconds: Option<Seconds>,
    env_passthrough: Option<Vec<String>>,
) -> RawCliRuntime {
    let key = |field: &str| format!("agent.{}_{field}", cli.name);
    RawCliRuntime {
        bin: Val::or_default(bin, cli.default_bin.to_owned(), key("bin")),
        request_timeout_seconds: Val::or_default(
            request_timeout_seconds.map(|Seconds(s)| s),
            limits::STREAM_JSON_REQUEST_TIMEOUT_MS.default_seconds(),
            key("request_timeout_seconds"),
        ),
        env_passthrough: Val::or_default(env_passthrough, Vec::new(), key("env_passthrough")),
    }
}

fn http_table(
    h: HttpToml,
    base_dir: &Path,
    env: &BTreeMap<String, String>,
) -> Result<RawHttp, ConfigError> {
    let num = |value: Option<i64>, limit: limits::Limit, name: &str| {
        Val::or_default(value, limit.default_i64(), format!("http.{name}"))
    };
    let auth = h
        .auth
        .map(|text| {
            HttpAuth::parse(&text).ok_or(ConfigError::InvalidValue {
                key: "http.auth".to_owned(),
                expected: "one of \"bearer\", \"none\", \"oauth\"",
                got: text,
            })
        })
        .transpose()?;
    let token_file = h
        .token_file
        .map(|path| {
            resolve_path(&path, base_dir).ok_or_else(|| ConfigError::InvalidValue {
                key: "http.token_file".to_owned(),
                expected: "a file path",
                got: path.display().to_string(),
            })
        })
        .transpose()?;
    let oauth = oauth_table(h.oauth.unwrap_or_default(), base_dir)?;
    Ok(RawHttp {
        oauth,
        bind: h.bind.map(|bind| Val::set(bind, "http.bind")),
        auth: Val::or_default(auth, HttpAuth::default(), "http.auth"),
        trust_network: Val::or_default(h.trust_network, false, "http.trust_network"),
        allowed_hosts: Val::or_default(h.allowed_hosts, Vec::new(), "http.allowed_hosts"),
        allowed_origins: Val::or_default(h.allowed_origins, Vec::new(), "http.allowed_origins"),
        token_file: Val::or_default(token_file, native_token_file(env), "http.token_file"),
        request_timeout_ms: num(
            h.request_timeout_ms,
            limits::HTTP_REQUEST_TIMEOUT_MS,
            "request_timeout_ms",
        ),
        max_concurrent_requests: num(
            h.max_concurrent_requests,
            limits::HTTP_MAX_CONCURRENT_REQUESTS,
            "max_concurrent_requests",
        ),
        shutdown_grace_ms: num(
            h.shutdown_grace_ms,
            limits::HTTP_SHUTDOWN_GRACE_MS,
            "shutdown_grace_ms",
        ),
        connections: RawConnectionLimits {
            header_timeout_ms: num(
                h.header_timeout_ms,
                limits::HTTP_HEADER_TIMEOUT_MS,
                "header_timeout_ms",
            ),
            body_timeout_ms: num(
                h.body_timeout_ms,
                limits::HTTP_BODY_TIMEOUT_MS,
                "body_timeout_ms",
            ),
            max_connections: num(
                h.max_connections,
                limits::HTTP_MAX_CONNECTIONS,
                "max_connections",
            ),
            session_idle_timeout_ms: num(
                h.session_idle_timeout_ms,
                limits::HTTP_SESSION_IDLE_TIMEOUT_MS,
                "session_idle_timeout_ms",
            ),
            max_sessions: num(h.max_sessions, limits::HTTP_MAX_SESSIONS, "max_sessions"),
            max_sessions_per_token: num(
                h.max_sessions_per_token,
                limits::HTTP_MAX_SESSIONS_PER_TOKEN,
                "max_sessions_per_token",
            ),
        },
    })
}

fn oauth_table(o: OAuthToml, base_dir: &Path) -> Result<RawOAuth, ConfigError> {
    let key = |name: &str| format!("http.oauth.{name}");
    let path = |path: Option<PathBuf>, name: &str| {
        path.map(|path| {
            resolve_path(&path, base_dir)
                .map(|resolved| Val::set(resolved, key(name)))
                .ok_or_else(|| ConfigError::InvalidValue {
                    key: key(name),
                    expected: "a file path",
                    got: path.display().to_string(),
                })
        })
        .transpose()
    };
    let mut raw = RawOAuth::defaults(key);
    raw.public_url = o.public_url.map(|v| Val::set(v, key("public_url")));
    raw.state_file = path(o.state_file, "state_file")?;
    let set_i64 = |target: &mut Val<i64>, value: Option<i64>| {
        if let Some(value) = value {
            *target = Val::set(value, target.key.clone());
        }
    };
    set_i64(&mut raw.access_token_ttl_s, o.access_token_ttl_s);
    set_i64(&mut raw.refresh_token_ttl_s, o.refresh_token_ttl_s);
    if let Some(uris) = o.allowed_redirect_uris {
        raw.allowed_redirect_uris = Val::set(uris, key("allowed_redirect_uris"));
    }
    let set_bool = |target: &mut Val<bool>, value: Option<bool>| {
        if let Some(value) = value {
            *target = Val::set(value, target.key.clone());
        }
    };
    set_bool(&mut raw.dynamic_registration, o.dynamic_registration);
    set_bool(
        &mut raw.client_metadata_documents,
        o.client_metadata_documents,
    );
    set_bool(&mut raw.accept_bearer_tokens, o.accept_bearer_tokens);
    raw.clients = o
        .clients
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, c)| {
            let key = |name: &str| format!("http.oauth.clients[{index}].{name}");
            RawOAuthClient {
                client_id: Val::set(c.client_id, key("client_id")),
                name: Val::set(c.name, key("name")),
                redirect_uris: Val::set(c.redirect_uris, key("redirect_uris")),
            }
        })
        .collect();
    raw.external_issuer = o
        .external_issuer
        .map(|v| Val::set(v, key("external_issuer")));
    raw.external_jwks_file = path(o.external_jwks_file, "external_jwks_file")?;
    raw.external_jwks_url = o
        .external_jwks_url
        .map(|v| Val::set(v, key("external_jwks_url")));
    raw.external_audience = o
        .external_audience
        .map(|v| Val::set(v, key("external_audience")));
    Ok(raw)
}

fn workdir(index: usize, w: WorkdirToml, base_dir: &Path) -> Result<RawWorkdir, ConfigError> {
    let key = |name: &str| format!("workdirs[{index}].{name}");
    let root = resolve_path(&w.path, base_dir).ok_or_else(|| ConfigError::InvalidValue {
        key: key("path"),
        expected: "a directory path",
        got: w.path.display().to_string(),
    })?;
    let number = |value: Option<i64>, name: &str| value.map(|v| Val::set(v, key(name)));
    let mut raw = RawWorkdir::new(
        Val::set(w.alias, key("alias")),
        Val::set(root, key("path")),
        Val::or_default(w.read_only, true, key("read_only")),
    );
    raw.description = w.description;
    raw.allow_hidden = w.allow_hidden;
    raw.default_deny = w.default_deny;
    raw.deny = w.deny.map(|d| Val::set(d, key("deny")));
    raw.binary_transfer = w.binary_transfer;
    raw.read_hardlinked_files = w.read_hardlinked_files;
    raw.max_read_lines = number(w.max_read_lines, "max_read_lines");
    raw.max_read_bytes = number(w.max_read_bytes, "max_read_bytes");
    raw.max_write_bytes = number(w.max_write_bytes, "max_write_bytes");
    raw.max_binary_transfer_bytes =
        number(w.max_binary_transfer_bytes, "max_binary_transfer_bytes");
    raw.agent_mode = w
        .agent_mode
        .map(|m| agent_mode(&m, &key("agent_mode")).map(|mode| Val::set(mode, key("agent_mode"))))
        .transpose()?;
    raw.agent_runtimes = w.agent_runtimes.map(|r| Val::set(r, key("agent_runtimes")));
    raw.approvals = optional_word(w.approvals, &key("approvals"))?;
    raw.approval_paths = optional_word(w.approval_paths, &key("approval_paths"))?;
    Ok(raw)
}

/// `path` if absolute, else `base_dir/path`, made absolute against the
/// current directory if `base_dir` itself is relative. `None` for an empty
/// path. No symlink is resolved: a root's own kind is checked later by
/// `lstat`, and the kernel opens it with `O_NOFOLLOW`.
fn resolve_path(path: &Path, base_dir: &Path) -> Option<PathBuf> {
    if path.as_os_str().is_empty() {
        return None;
    }
    std::path::absolute(base_dir.join(path)).ok()
}

fn agent_mode(text: &str, key: &str) -> Result<AgentMode, ConfigError> {
    AgentMode::parse(text).ok_or_else(|| ConfigError::InvalidValue {
        key: key.to_owned(),
        expected: "one of \"disabled\", \"review\", \"workspace-write\"",
        got: text.to_owned(),
    })
}

/// A written one-of-a-few-words setting (`approvals`, `approval_paths`),
/// parsed exactly; `None` when unwritten.
fn optional_word<T: Word>(text: Option<String>, key: &str) -> Result<Option<T>, ConfigError> {
    text.map(|text| word(key, &text, &text)).transpose()
}

/// Rewords serde's Rust type names in deserialization messages into the
/// TOML words an operator knows.
fn plain_words(message: &str) -> String {
    message
        .replace(" as i128", "")
        .replace("expected i64", "expected an integer")
        .replace("expected a sequence", "expected an array")
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The dotted key path (`workdirs[1].read_only`) of the smallest key or
/// value whose span contains `offset`. Table headers are the spans of
/// tables, so an error about a whole `[[workdirs]]` entry (a missing key)
/// names that entry.
fn key_path_at(table: &DeTable<'_>, offset: usize) -> Option<String> {
    let mut best: Option<Candidate> = None;
    visit_table(table, "", 0, offset, &mut best);
    best.map(|c| c.path)
}

struct Candidate {
    len: usize,
    depth: usize,
    path: String,
}

fn consider(
    span: Range<usize>,
    path: &str,
    depth: usize,
    offset: usize,
    best: &mut Option<Candidate>,
) {
    let hit = span.contains(&offset) || (span.is_empty() && span.start == offset);
    if !hit {
        return;
    }
    let len = span.len();
    // Prefer the tightest span; on a tie (an array-of-tables entry shares
    // its header span with the array key) prefer the deeper path.
    let better = best
        .as_ref()
        .is_none_or(|b| len < b.len || (len == b.len && depth > b.depth));
    if better {
        *best = Some(Candidate {
            len,
            depth,
            path: path.to_owned(),
        });
    }
}

fn visit_table(
    table: &DeTable<'_>,
    prefix: &str,
    depth: usize,
    offset: usize,
    best: &mut Option<Candidate>,
) {
    for (key, value) in table.iter() {
        let path = join_key(prefix, key.get_ref());
        consider(key.span(), &path, depth + 1, offset, best);
        consider(value.span(), &path, depth + 1, offset, best);
        visit_value(value.get_ref(), &path, depth + 1, offset, best);
    }
}

fn visit_value(
    value: &DeValue<'_>,
    path: &str,
    depth: usize,
    offset: usize,
    best: &mut Option<Candidate>,
) {
    match value {
        DeValue::Table(table) => visit_table(table, path, depth, offset, best),
        DeValue::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{index}]");
                consider(item.span(), &item_path, depth + 1, offset, best);
                visit_value(item.get_ref(), &item_path, depth + 1, offset, best);
            }
        }
        DeValue::String(_)
        | DeValue::Integer(_)
        | DeValue::Float(_)
        | DeValue::Boolean(_)
        | DeValue::Datetime(_) => {}
    }
}

fn join_key(prefix: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
#[path = "toml_file_tests.rs"]
mod tests;
