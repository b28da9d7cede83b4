//! `serverfs doctor`: read-only health checks for the operator.
//!
//! Every check prints one line to stdout, `OK   <check>: <detail>`,
//! `WARN <check>: <detail>` or `FAIL <check>: <detail>`, and a summary line
//! closes the report. Exit status: 0 without any FAIL (warnings allowed), 1
//! with at least one, 2 when the configuration cannot be parsed (then the
//! usual one line `serverfs: configuration error: …` goes to stderr and
//! nothing to stdout).
//!
//! Nothing is modified: the write capability of a read-write workdir is
//! probed with `access(W_OK|X_OK)`, the HTTP address is bound and released
//! at once, the token file is only read, and the only request sent to an
//! Agent Bridge is the read-only `bridge.peer` (`peer.rs`). The report is for the operator's
//! terminal and names host paths, but never a token, a token hash, a secret
//! or any file's content (ARCHITECTURE.md §1 invariant 9).
//!
//! A workdir root that is missing, a symbolic link or not a directory is a
//! configuration error for every other command; doctor reports it as a
//! FAIL line for that workdir (exit 1) instead, since finding such problems
//! is what it is for. Loading stops at the first such root, so the checks
//! that need the whole configuration are skipped, and a WARN line says so.

mod peer;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;

use rustix::fs::Access;
use serverfs_config::{
    Config, ConfigError, ConfigSource, DOCTOR_EXIT_CONFIG, DoctorReport, HttpAuth, SlotProblem,
    WorkdirConfig, one_line, plural, select_source,
};
use serverfs_fs::{EntryDetail, PathPolicy, RelPath, Resolver, Workdir};

use crate::cli::DoctorArgs;
use crate::service::lease_id;
use crate::tokens::{TokenStore, check_private};

/// The report on standard output.
type Report = DoctorReport<std::io::Stdout>;

/// Runs the checks, prints the report and returns the exit status.
pub fn run(args: &DoctorArgs, env: &BTreeMap<String, String>) -> ExitCode {
    let resolver = match crate::cli::resolver_from_env(env) {
        Ok(resolver) => resolver,
        Err(reason) => return config_error(&reason.to_string()),
    };
    let source = match select_source(args.config.config.clone(), &args.config.workdirs, env) {
        Ok(source) => source,
        Err(e) => return config_error(&e.to_string()),
    };
    // With --config, --workdir specs are extra workdirs (as for `serve`).
    let extra: &[String] = if args.config.config.is_some() {
        &args.config.workdirs
    } else {
        &[]
    };
    let loaded = match Config::load(&source, extra, env) {
        Ok(config) => Ok(config),
        Err(e) => match root_failure(&e) {
            Some(failure) => Err(failure),
            None => return config_error(&e.to_string()),
        },
    };

    let mut report = DoctorReport::stdout();
    match &loaded {
        Ok(config) => {
            report.ok(
                "configuration",
                format!(
                    "{}, {}",
                    describe_source(&source, extra.len()),
                    plural(config.workdirs.len(), "workdir", "workdirs")
                ),
            );
            for workdir in &config.workdirs {
                check_workdir(&mut report, workdir, resolver);
            }
        }
        Err((check, detail)) => {
            report.fail(check, detail);
            report.warn(
                "configuration",
                format!(
                    "{}: loading stopped at this root, so the other workdirs, HTTP and the \
                     Agent Bridge were not checked; fix it and run doctor again",
                    describe_source(&source, extra.len())
                ),
            );
        }
    }
    check_confinement(&mut report, resolver);
    if let Ok(config) = &loaded {
        check_http(&mut report, config, args.http);
        check_bridge(&mut report, config);
    }
    report.finish()
}

/// One line on stderr, exit 2, as every command reports configuration
/// errors.
fn config_error(reason: &str) -> ExitCode {
    eprintln!("serverfs: configuration error: {}", one_line(reason));
    ExitCode::from(DOCTOR_EXIT_CONFIG)
}

/// A configuration error that is a problem of one workdir's root (missing,
/// a symbolic link, not a directory, not inspectable), as a check name and
/// detail; None for every other error.
fn root_failure(error: &ConfigError) -> Option<(String, String)> {
    match error {
        ConfigError::InvalidRoot {
            key,
            alias,
            path,
            problem,
        } => Some((
            format!("workdir {alias} root"),
            format!("{path:?} {problem} ({key})"),
        )),
        ConfigError::Slot {
            slot,
            alias,
            problem:
                SlotProblem::MissingRoot
                | SlotProblem::NotADirectory
                | SlotProblem::Symlink
                | SlotProblem::Inaccessible(_),
            ..
        } => {
            let name = alias
                .clone()
                .unwrap_or_else(|| format!("WORKDIR_{slot:02}"));
            Some((format!("workdir {name} root"), error.to_string()))
        }
        _ => None,
    }
}

fn describe_source(source: &ConfigSource, extra: usize) -> String {
    let base = match source {
        ConfigSource::Toml(path) => format!("TOML file {path:?}"),
        ConfigSource::Environment => "environment variables (WORKDIR_NN_* slots)".to_owned(),
        // Only the Agent Bridge reads a Compose .env on the host side.
        ConfigSource::ComposeHost => "a Compose .env read on the host".to_owned(),
        ConfigSource::Cli(specs) => plural(specs.len(), "--workdir spec", "--workdir specs"),
    };
    if extra == 0 {
        base
    } else {
        format!(
            "{base} plus {}",
            plural(extra, "--workdir spec", "--workdir specs")
        )
    }
}

/// Root kind, confined open, a policy-filtered listing and the write
/// capability of one workdir. Later checks are skipped once one fails.
fn check_workdir(report: &mut Report, workdir: &WorkdirConfig, resolver: Resolver) {
    let alias = workdir.alias.as_str();
    let root = &workdir.root;
    let access = if workdir.read_only {
        "read-only"
    } else {
        "read-write"
    };

    let check = format!("workdir {alias} root");
    match std::fs::symlink_metadata(root) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return report.fail(&check, format!("{root:?} does not exist"));
        }
        Err(e) => return report.fail(&check, format!("{root:?} cannot be inspected: {e}")),
        Ok(meta) if meta.file_type().is_symlink() => {
            return report.fail(
                &check,
                format!("{root:?} is a symbolic link (the root must be a real directory)"),
            );
        }
        Ok(meta) if !meta.is_dir() => {
            return report.fail(&check, format!("{root:?} is not a directory"));
        }
        Ok(_) => report.ok(&check, format!("{root:?} is a directory ({access})")),
    }

    let check = format!("workdir {alias} open");
    let policy = match PathPolicy::new(workdir.allow_hidden, workdir.default_deny, &workdir.deny) {
        Ok(policy) => policy,
        Err(e) => return report.fail(&check, format!("invalid deny glob: {e}")),
    };
    let fs = match Workdir::open(root, policy, resolver) {
        Ok(fs) => fs,
        Err(e) => {
            return report.fail(
                &check,
                format!("the confined kernel cannot open the root: {e}"),
            );
        }
    };
    report.ok(&check, "the confined kernel opens the root");

    let check = format!("workdir {alias} list");
    match fs.list_directory(&RelPath::root(), 0, 1, EntryDetail::Metadata) {
        Ok(_) => report.ok(&check, "the root can be listed (policy-filtered, limit 1)"),
        Err(e) => return report.fail(&check, format!("the root cannot be listed: {e}")),
    }

    // access(2) decides on the process's identity and the mount flags
    // (EROFS) without creating anything.
    let check = format!("workdir {alias} write");
    let writable =
        rustix::fs::access(root, Access::WRITE_OK | Access::EXEC_OK).map_err(std::io::Error::from);
    match (workdir.read_only, writable) {
        (false, Ok(())) => report.ok(
            &check,
            "the root is writable (probed with access, nothing written)",
        ),
        (false, Err(e)) => report.fail(
            &check,
            format!("read-write workdir, but this process cannot write to the root: {e}"),
        ),
        (true, Ok(())) => report.warn(
            &check,
            "read-only workdir, but this process could write to the root: a read-only mount \
             or directory permissions add defence in depth",
        ),
        (true, Err(_)) => report.ok(
            &check,
            "read-only workdir, and the root is not writable by this process",
        ),
    }
}

fn check_confinement(report: &mut Report, resolver: Resolver) {
    const CHECK: &str = "kernel confinement";
    match resolver {
        Resolver::Walk => report.warn(
            CHECK,
            "SERVERFS_FS_RESOLVER=walk: the O_NOFOLLOW walker is used (still confined)",
        ),
        Resolver::Auto if serverfs_fs::openat2_available() => {
            report.ok(CHECK, "openat2 (RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS)");
        }
        Resolver::Auto => report.warn(
            CHECK,
            "openat2 unavailable: the O_NOFOLLOW walker is used (still confined)",
        ),
    }
}

/// The HTTP transport, when a bind address is configured or given with
/// `--http`: the authentication rule, the address, the token file.
fn check_http(report: &mut Report, config: &Config, cli_bind: Option<SocketAddr>) {
    let Some(bind) = cli_bind.or(config.http.bind) else {
        return report.ok("http", "no HTTP bind address configured: stdio only");
    };
    let from = if cli_bind.is_some() {
        "--http"
    } else {
        "the configuration"
    };
    let effective = match config.http.effective(cli_bind) {
        Ok(http) => {
            report.ok("http settings", format!("listener {bind} (from {from})"));
            Some(http)
        }
        Err(e) => {
            report.fail("http settings", e.to_string());
            None
        }
    };

    // Bound and released at once: only whether `serve` could bind it now.
    match TcpListener::bind(bind) {
        Ok(listener) => {
            drop(listener);
            let detail = if bind.port() == 0 {
                format!("{bind} can be bound (port 0: the system picks a free port)")
            } else {
                format!("{bind} is free")
            };
            report.ok("http bind", detail);
        }
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            if answers_like_serverfs(bind) {
                report.warn(
                    "http bind",
                    format!("{bind} is in use by a running ServerFS (its /healthz answered)"),
                );
            } else {
                report.fail("http bind", format!("{bind} is in use by another process"));
            }
        }
        Err(e) => report.fail("http bind", format!("{bind} cannot be bound: {e}")),
    }

    let Some(http) = effective else {
        return;
    };
    match http.auth {
        HttpAuth::Bearer => {
            report.ok("http auth", "bearer tokens");
            check_token_file(report, &http.token_file);
        }
        HttpAuth::OAuth => {
            report.ok("http auth", "OAuth 2.1 (built-in authorization server)");
            check_token_file(report, &http.token_file);
            check_oauth(report, &http);
        }
        HttpAuth::None if http.bind.ip().to_canonical().is_loopback() => {
            report.ok("http auth", "none, on a loopback address");
        }
        HttpAuth::None => report.warn(
            "http auth",
            format!(
                "none on {bind} (trust_network): anyone who can reach this address can use \
                 every workdir"
            ),
        ),
    }
}

/// The OAuth settings: the public URL clients are given, the redirect
/// allowlist, the state file and an external issuer's keys. Never prints
/// a token, hash or key.
fn check_oauth(report: &mut Report, http: &serverfs_config::EffectiveHttp) {
    let oauth = &http.oauth;
    let resource = oauth.canonical_resource(http.bind);
    match &oauth.public_url {
        Some(url) if url.scheme() == "https" => report.ok(
            "oauth public url",
            format!("{resource}: tokens are bound to it; give clients exactly this URL"),
        ),
        Some(_) => report.warn(
            "oauth public url",
            format!(
                "{resource} is plain http on loopback: hosted clients (claude.ai, ChatGPT) need \
                 a public https URL, e.g. through a tunnel"
            ),
        ),
        None => report.warn(
            "oauth public url",
            format!(
                "not set: the canonical resource is {resource}, usable by clients on this \
                 machine only; set http.oauth.public_url to the tunnel's https URL for hosted \
                 clients"
            ),
        ),
    }
    let hosted = serverfs_config::HOSTED_CLIENT_CALLBACKS;
    let allowed = &oauth.allowed_redirect_uris;
    if allowed.is_empty() {
        report.warn(
            "oauth redirect allowlist",
            "empty: self-registered clients may only use loopback redirects (claude.ai and \
             ChatGPT cannot connect)",
        );
    } else {
        let others = allowed
            .iter()
            .filter(|u| !hosted.contains(&u.as_str()))
            .count();
        report.ok(
            "oauth redirect allowlist",
            format!(
                "{} besides loopback ({} of them not a known hosted client's callback)",
                plural(allowed.len(), "redirect URI", "redirect URIs"),
                others
            ),
        );
    }
    for client in &oauth.clients {
        report.ok(
            "oauth client",
            format!(
                "{} ({}): {}",
                client.client_id,
                client.name,
                plural(client.redirect_uris.len(), "redirect URI", "redirect URIs")
            ),
        );
    }
    match crate::oauth::store::OAuthStore::new(oauth.state_file.clone()).inspect() {
        Ok(state) => report.ok(
            "oauth state file",
            format!(
                "{:?}: {}, {}",
                oauth.state_file,
                plural(state.grants, "grant", "grants"),
                plural(
                    state.clients,
                    "self-registered client",
                    "self-registered clients"
                )
            ),
        ),
        Err(e @ crate::oauth::store::StoreError::NotPrivate { .. }) => {
            report.fail("oauth state file", e.to_string());
        }
        Err(_) => report.fail(
            "oauth state file",
            format!("{:?} is unreadable or malformed", oauth.state_file),
        ),
    }
    if let Some(external) = &oauth.external {
        check_external_keys(report, external);
    }
}

/// An external issuer's key material: a file is read and checked for
/// usable public keys; a URL is only named (doctor makes no requests).
fn check_external_keys(report: &mut Report, external: &serverfs_config::ExternalIssuer) {
    const CHECK: &str = "oauth external issuer";
    let path = match &external.jwks {
        serverfs_config::JwksSource::Url(url) => {
            return report.ok(
                CHECK,
                format!(
                    "{}: keys fetched from {url} when a token arrives",
                    external.issuer
                ),
            );
        }
        serverfs_config::JwksSource::File(path) => path,
    };
    let set = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<jsonwebtoken::jwk::JwkSet>(&bytes).ok());
    match set {
        None => report.fail(
            CHECK,
            format!("{path:?} is unreadable or not a JSON Web Key Set"),
        ),
        Some(set) => {
            let usable = set
                .keys
                .iter()
                .filter(|k| {
                    !matches!(
                        k.algorithm,
                        jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
                    ) && jsonwebtoken::DecodingKey::from_jwk(k).is_ok()
                })
                .count();
            if usable == 0 {
                report.fail(CHECK, format!("{path:?} holds no usable public key"));
            } else {
                report.ok(
                    CHECK,
                    format!(
                        "{}: {path:?} holds {}",
                        external.issuer,
                        plural(usable, "public key", "public keys")
                    ),
                );
            }
        }
    }
}

/// The bearer token file: private, parseable, not empty. Reports the
/// number of tokens, never a token, hash or name.
fn check_token_file(report: &mut Report, path: &Path) {
    const CHECK: &str = "http token file";
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return report.warn(
                CHECK,
                format!("{path:?} does not exist: no tokens yet: run serverfs token create NAME"),
            );
        }
        Err(e) => return report.fail(CHECK, format!("{path:?} cannot be inspected: {e}")),
    };
    if let Err(reason) = check_private(path, &meta) {
        let detail = if meta.file_type().is_file() {
            format!(
                "{path:?} is world/group accessible (mode {:03o}; chmod 600)",
                meta.permissions().mode() & 0o777
            )
        } else {
            reason.to_string()
        };
        return report.fail(CHECK, detail);
    }
    match TokenStore::new(path.to_path_buf()).entries() {
        Ok(entries) if entries.is_empty() => report.warn(
            CHECK,
            format!("{path:?} holds no tokens: run serverfs token create NAME"),
        ),
        Ok(entries) => report.ok(
            CHECK,
            format!(
                "{path:?} is private and holds {}",
                plural(entries.len(), "token", "tokens")
            ),
        ),
        // The store's own message may quote a fragment of the file (a
        // serde message can echo a value, e.g. a hash), so describe the
        // problem here without it.
        Err(_) => report.fail(CHECK, describe_unreadable_tokens(path)),
    }
}

fn describe_unreadable_tokens(path: &Path) -> String {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return format!("{path:?} cannot be read: {e}"),
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Err(e) => format!(
            "{path:?} is malformed: not valid JSON (line {}, column {})",
            e.line(),
            e.column()
        ),
        Ok(_) => format!("{path:?} is malformed: not a version 1 token file"),
    }
}

/// The Agent Bridge's socket directory, the identity the Bridge measures
/// for this process, the lock directory and the lock artifact of every
/// workdir that takes the lease.
fn check_bridge(report: &mut Report, config: &Config) {
    let agent = &config.agent;
    if !agent.bridge_enabled {
        return report.ok("agent bridge", "agent bridge disabled");
    }
    let socket = &agent.bridge_socket;
    match socket.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => check_shared_dir(report, "agent bridge socket directory", parent),
        None => report.fail(
            "agent bridge socket directory",
            format!("{socket:?} has no parent directory"),
        ),
    }
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => {
            report.ok("agent bridge socket", format!("{socket:?} exists"));
            peer::check_peer_identity(report, agent);
        }
        Ok(_) => report.fail(
            "agent bridge socket",
            format!("{socket:?} exists but is not a socket"),
        ),
        Err(e) if e.kind() == ErrorKind::NotFound => report.warn(
            "agent bridge socket",
            format!("{socket:?} does not exist: is the Agent Bridge running?"),
        ),
        Err(e) => report.fail(
            "agent bridge socket",
            format!("{socket:?} cannot be inspected: {e}"),
        ),
    }
    check_shared_dir(report, "agent lock directory", &agent.lock_dir);

    // Every mutation of every workdir takes the lease while the Bridge is
    // enabled, so every workdir that can be written (or run an agent)
    // needs its artifact.
    let needs_lock = |w: &&WorkdirConfig| !w.read_only || w.agent_mode.is_enabled();
    for workdir in config.workdirs.iter().filter(needs_lock) {
        let check = format!("workdir {} lock", workdir.alias);
        let artifact = match lease_id(workdir) {
            Ok(id) => agent.lock_dir.join(id.lock_file_name()),
            Err(e) => {
                report.fail(&check, format!("no valid lease identity: {e}"));
                continue;
            }
        };
        match std::fs::symlink_metadata(&artifact) {
            Ok(meta) if meta.file_type().is_file() => {
                report.ok(&check, format!("{artifact:?} exists"));
            }
            Ok(_) => report.fail(&check, format!("{artifact:?} is not a regular file")),
            Err(e) if e.kind() == ErrorKind::NotFound => report.fail(
                &check,
                format!(
                    "{artifact:?} does not exist: mutations are refused until the Agent Bridge \
                     creates it"
                ),
            ),
            Err(e) => report.fail(&check, format!("{artifact:?} cannot be inspected: {e}")),
        }
    }
    if !config.workdirs.iter().any(|w| w.agent_mode.is_enabled()) {
        report.warn(
            "agent bridge",
            "enabled, but no workdir enables agents: the agent tools are not offered",
        );
    }
}

/// A directory both processes use: it must exist and not be writable by
/// everyone (anyone could plant a socket or lock file there).
fn check_shared_dir(report: &mut Report, check: &str, dir: &Path) {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            report.fail(check, format!("{dir:?} does not exist"));
        }
        Err(e) => report.fail(check, format!("{dir:?} cannot be inspected: {e}")),
        Ok(meta) if !meta.is_dir() => report.fail(check, format!("{dir:?} is not a directory")),
        Ok(meta) if meta.permissions().mode() & 0o002 != 0 => report.fail(
            check,
            format!(
                "{dir:?} is world-writable (mode {:03o}): use a private directory",
                meta.permissions().mode() & 0o7777
            ),
        ),
        Ok(_) => report.ok(check, format!("{dir:?} is a directory, not world-writable")),
    }
}

/// True when something on `bind` answers `GET /healthz` as ServerFS does,
/// so that running doctor beside a live server is not a failure. Bounded
/// by short timeouts; reads at most a small reply.
fn answers_like_serverfs(bind: std::net::SocketAddr) -> bool {
    use std::io::{Read, Write};
    use std::time::Duration;
    let mut target = bind;
    if target.ip().is_unspecified() {
        target.set_ip(match target {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&target, Duration::from_secs(1))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = Vec::new();
    let _ = stream.take(4096).read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    reply.starts_with("HTTP/1.1 200") && reply.ends_with("\r\n\r\nok\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_files_follow_the_lease_identity() {
        let alias = serverfs_config::WorkdirAlias::new("repo").unwrap();
        let mut workdir = WorkdirConfig::with_defaults(alias, "/srv/repo".into());
        assert_eq!(
            lease_id(&workdir).unwrap().lock_file_name(),
            "255b6be1a22d261f7c81e80e37b195e16c9212de.lock"
        );
        workdir.legacy_slot = Some(3);
        assert_eq!(lease_id(&workdir).unwrap().lock_file_name(), "03.lock");
    }

    #[test]
    fn root_problems_become_workdir_failures() {
        let error = ConfigError::InvalidRoot {
            key: "workdirs[0].path".to_owned(),
            alias: "docs".to_owned(),
            path: "/nowhere".into(),
            problem: serverfs_config::RootProblem::Missing,
        };
        let (check, detail) = root_failure(&error).unwrap();
        assert_eq!(check, "workdir docs root");
        assert!(detail.contains("does not exist"), "{detail}");
        assert!(root_failure(&ConfigError::NoSource).is_none());
    }
}
