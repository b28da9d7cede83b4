//! What the host provides the Bridge: its socket answering, the agent
//! egress proxy accepting connections, and systemd linger for a user
//! service that must outlive the operator's login.

use std::collections::BTreeMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use serverfs_config::DoctorReport;

use super::super::bridge_config::BridgeConfig;

/// Bound on connecting to the proxy.
const PROXY_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Where systemd-logind marks a user whose manager starts at boot.
const LINGER_DIR: &str = "/var/lib/systemd/linger";

pub(super) fn check<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    config: &BridgeConfig,
    env: &BTreeMap<String, String>,
) {
    check_socket(report, config);
    check_proxy(report, config);
    check_linger(report, env);
}

/// Whether a Bridge serves the socket now (a connection only: the Bridge
/// closes it unanswered, which is all a check needs).
fn check_socket<W: std::io::Write>(report: &mut DoctorReport<W>, config: &BridgeConfig) {
    const CHECK: &str = "bridge socket";
    let socket = config.socket();
    match std::os::unix::net::UnixStream::connect(socket) {
        Ok(_) => report.ok(CHECK, format!("a Bridge answers at {}", socket.display())),
        Err(error) => report.warn(
            CHECK,
            format!(
                "no Bridge answers at {} ({}): start it (serverfs-agent-bridge serve, or \
                 systemctl --user start serverfs-agent-bridge)",
                socket.display(),
                error.kind()
            ),
        ),
    }
}

/// The proxy accepts a TCP connection. Its URL is never printed: only the
/// variable's name.
fn check_proxy<W: std::io::Write>(report: &mut DoctorReport<W>, config: &BridgeConfig) {
    const CHECK: &str = "agent egress proxy";
    let Some(url) = &config.proxy.url else {
        return report.ok(
            CHECK,
            "SERVERFS_AGENT_PROXY_URL is not set; no runtime uses a proxy",
        );
    };
    let users: Vec<&str> = config
        .config
        .agent
        .proxy_runtimes
        .iter()
        .map(|runtime| runtime.as_str())
        .collect();
    let users = if users.is_empty() {
        "no runtime (agent.proxy_runtimes is empty)".to_owned()
    } else {
        users.join(", ")
    };
    match connect(url) {
        Ok(()) => report.ok(
            CHECK,
            format!("SERVERFS_AGENT_PROXY_URL accepts connections; used by {users}"),
        ),
        Err(reason) => report.fail(
            CHECK,
            format!(
                "SERVERFS_AGENT_PROXY_URL does not accept connections ({reason}); tasks of {users} \
                 cannot reach their provider: start the proxy or correct the variable"
            ),
        ),
    }
}

/// Connects to the proxy's `host:port` (the URL was checked at load:
/// `http(s)://host:port[/]`, no user information).
fn connect(url: &str) -> Result<(), String> {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .trim_end_matches('/');
    let addrs = authority
        .to_socket_addrs()
        .map_err(|error| format!("cannot resolve its host: {}", error.kind()))?;
    let mut last = "no address".to_owned();
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, PROXY_CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(error) => last = error.kind().to_string(),
        }
    }
    Err(last)
}

/// A user service stops with the user's last session unless linger is on.
fn check_linger<W: std::io::Write>(report: &mut DoctorReport<W>, env: &BTreeMap<String, String>) {
    const CHECK: &str = "systemd linger";
    if !Path::new("/run/systemd/system").is_dir() {
        return report.warn(
            CHECK,
            "systemd is not the init system here: keep the Bridge running by your own means \
             (docs/agent-bridge.md)",
        );
    }
    let Some(user) = env.get("USER").or_else(|| env.get("LOGNAME")) else {
        return report.warn(CHECK, "USER is not set, so linger cannot be checked");
    };
    if Path::new(LINGER_DIR).join(user).exists() {
        report.ok(CHECK, format!("enabled for {user}"));
    } else {
        report.warn(
            CHECK,
            format!(
                "not enabled for {user}: the user service and its tasks stop at logout; run \
                 loginctl enable-linger {user}"
            ),
        );
    }
}
