//! HTTP abuse against a server under the common 1,024 open-file limit,
//! each attack with a legitimate client measured during it: its p99 per
//! call as a ratio to its p99 without attack in the same run, and every
//! call it could not make (**legitimate failures**, which must be zero).
//!
//! - **idle sockets** (no token): 1,100 connections that never send a byte;
//! - **slow headers** (no token): 1,100 connections sending one header
//!   byte a second;
//! - **session flood** (token): legacy `initialize`s as fast as eight
//!   threads can send them, with the server's peak RSS;
//! - **slow bodies** (token): 200 requests trickling their declared body.
//!
//! The legitimate client is what the MCP specification's clients do on
//! the legacy era: a kept-alive connection and session, `stat_file` back
//! to back, and every [`CALLS_PER_CONNECTION`] calls it leaves (`DELETE`)
//! and comes back on a new connection, as clients come and go — an
//! attack that exhausts the server's descriptors shows there. When the
//! server closes its connection it reconnects once; only a call that
//! still fails counts.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use serverfs_http1::{Connection, Mcp, Served};

use super::{Outcome, Setup, text};
use crate::measure::{millis, quantile};
use crate::rss::peak_rss_mib;

/// Sockets each connection attack opens (the measured exhaustion point
/// was about 1,100 under a 1,024 limit).
const ATTACK_SOCKETS: usize = 1_100;
/// Requests trickling their bodies.
const SLOW_BODIES: usize = 200;
/// Threads flooding sessions.
const FLOOD_THREADS: usize = 8;
/// Calls the legitimate client makes on one connection and session.
const CALLS_PER_CONNECTION: usize = 100;
/// How long the legitimate client waits for an answer before it gives up
/// on a call.
const LEGIT_TIMEOUT: Duration = Duration::from_secs(5);
/// Failed calls after which a phase stops (the rest count as failed): a
/// server that answers nobody need not be asked thousands of times.
const GIVE_UP_AFTER: u64 = 20;

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    raise_own_file_limit();
    let calls = setup.profile.pick(2_000, 5_000);
    let flood = setup.profile.pick(5_000, 20_000);
    // The flood has a token of its own: it must not exhaust another's.
    let rig = HttpRig::start(
        setup,
        &["legitimate", "flood"],
        RigOptions {
            oauth: false,
            file_limit: true,
        },
    )?;
    let (token, flood_token) = (&rig.tokens[0], &rig.tokens[1]);
    let mut served = rig.served;
    let address = served.address();
    let mut client = Legit::connect(address, token)?;

    // Warm-up (connection, caches, allocator), not counted.
    let _ = client.measure(calls / 5);
    let baseline = client.measure(calls);
    let rss_before = peak_rss_mib(served.pid()).unwrap_or(0.0);
    let idle = under_attack(&mut client, calls, || {
        let sockets = open_sockets(address, ATTACK_SOCKETS, false);
        Box::new(move || drop(sockets))
    });
    let slow_headers = under_attack(&mut client, calls, || trickle_headers(address));
    let flooding = under_attack(&mut client, calls, || {
        flood_sessions(address, flood_token, flood, Duration::ZERO)
    });
    let rss_flood = peak_rss_mib(served.pid()).unwrap_or(0.0);
    let slow_bodies = under_attack(&mut client, calls, || trickle_bodies(address, token));
    let crashed = u64::from(!served.is_running());

    let p99 = |samples: &Phase| quantile(&samples.latencies, 0.99);
    let base = p99(&baseline).max(f64::EPSILON);
    let ratio = |phase: &Phase| {
        if phase.latencies.is_empty() {
            "no call answered".to_owned()
        } else {
            format!("×{:.2}", p99(phase) / base)
        }
    };
    let failures = [&baseline, &idle, &slow_headers, &flooding, &slow_bodies]
        .iter()
        .map(|phase| phase.failures)
        .sum::<u64>();
    let attempts = [&baseline, &idle, &slow_headers, &flooding, &slow_bodies]
        .iter()
        .map(|phase| phase.latencies.len() as u64 + phase.failures)
        .sum::<u64>();
    Ok(vec![Outcome {
        check: "HTTP abuse (legitimate client's calls)",
        attempts,
        failures: vec![
            ("legitimate failures", failures),
            ("server crashes", crashed),
        ],
        figures: format!(
            "p99 without attack {base:.2} ms; during idle sockets {}, slow headers {}, \
             session flood ({flood} initializes) {}, slow bodies {}; peak RSS {rss_before:.1} \
             MiB before the flood, {rss_flood:.1} MiB after",
            ratio(&idle),
            ratio(&slow_headers),
            ratio(&flooding),
            ratio(&slow_bodies),
        ),
    }])
}

/// A `serverfs serve --http 127.0.0.1:0` for one HTTP check: a workdir `w`
/// holding `a.txt`, a token file, and the server.
pub(super) struct HttpRig {
    /// The check's temporary directory (kept while the server runs).
    pub(super) tmp: tempfile::TempDir,
    /// One bearer token per name asked for, in that order.
    pub(super) tokens: Vec<String>,
    pub(super) served: Served,
}

/// How an [`HttpRig`]'s server runs.
#[derive(Clone, Copy)]
pub(super) struct RigOptions {
    /// `http.auth = "oauth"` (bearer tokens still accepted).
    pub(super) oauth: bool,
    /// Under the common 1,024 open-file limit (util-linux's `prlimit`).
    pub(super) file_limit: bool,
}

impl HttpRig {
    /// Creates a token for each of `token_names`, then starts the server.
    pub(super) fn start(
        setup: &Setup,
        token_names: &[&str],
        options: RigOptions,
    ) -> Result<HttpRig, String> {
        let (tmp, root) = super::scratch()?;
        std::fs::write(root.join("a.txt"), "alpha\n").map_err(|e| e.to_string())?;
        let token_file = tmp.path().join("tokens.json");
        let tokens = token_names
            .iter()
            .map(|name| create_token(setup, &token_file, name))
            .collect::<Result<Vec<_>, _>>()?;
        let mut command = if options.file_limit {
            let mut prlimit = Command::new("prlimit");
            prlimit.arg("--nofile=1024:1024").arg(&setup.serverfs);
            prlimit
        } else {
            Command::new(&setup.serverfs)
        };
        command
            .args(["serve", "--http", "127.0.0.1:0", "--workdir"])
            .arg(format!("w={}", text(&root)?))
            .env_clear()
            .env("SERVERFS_TOKEN_FILE", &token_file);
        if options.oauth {
            command.env("SERVERFS_HTTP_AUTH", "oauth");
        }
        let served = Served::start(command).map_err(|e| format!("serverfs --http: {e}"))?;
        Ok(HttpRig {
            tmp,
            tokens,
            served,
        })
    }
}

/// One phase's legitimate calls.
pub(super) struct Phase {
    pub(super) latencies: Vec<f64>,
    pub(super) failures: u64,
}

/// Starts an attack, measures `calls` legitimate calls while it runs, then
/// stops it (the closure the attack returned).
fn under_attack(
    client: &mut Legit,
    calls: usize,
    attack: impl FnOnce() -> Box<dyn FnOnce()>,
) -> Phase {
    let stop = attack();
    let phase = client.measure(calls);
    stop();
    phase
}

/// The legitimate client.
pub(super) struct Legit {
    address: SocketAddr,
    token: String,
    mcp: Option<Mcp>,
}

impl Legit {
    pub(super) fn connect(address: SocketAddr, token: &str) -> Result<Legit, String> {
        let mut legit = Legit {
            address,
            token: token.to_owned(),
            mcp: None,
        };
        legit
            .reconnect()
            .map_err(|e| format!("legitimate client: {e}"))?;
        Ok(legit)
    }

    fn reconnect(&mut self) -> std::io::Result<()> {
        let connection = Connection::connect_waiting(self.address, LEGIT_TIMEOUT)?;
        let mut mcp = Mcp::new(connection).with_bearer(&self.token);
        mcp.initialize()?;
        self.mcp = Some(mcp);
        Ok(())
    }

    /// `calls` timed `stat_file` calls; a call whose connection was closed
    /// is retried once on a new one (as clients do), and counts as failed
    /// only if that fails too.
    pub(super) fn measure(&mut self, calls: usize) -> Phase {
        let mut phase = Phase {
            latencies: Vec::with_capacity(calls),
            failures: 0,
        };
        for call in 0..calls {
            if phase.failures >= GIVE_UP_AFTER {
                phase.failures += (calls - call) as u64;
                break;
            }
            if call % CALLS_PER_CONNECTION == CALLS_PER_CONNECTION - 1 {
                if let Some(mcp) = self.mcp.as_mut() {
                    let _ = mcp.close();
                }
                self.mcp = None;
            }
            // A new connection and session, not timed: the call is.
            if self.mcp.is_none() && self.reconnect().is_err() {
                phase.failures += 1;
                continue;
            }
            let started = Instant::now();
            let ok = self.call() || (self.reconnect().is_ok() && self.call());
            if ok {
                phase.latencies.push(millis(started.elapsed()));
            } else {
                phase.failures += 1;
                self.mcp = None;
            }
        }
        phase
    }

    fn call(&mut self) -> bool {
        let Some(mcp) = self.mcp.as_mut() else {
            return false;
        };
        mcp.call_legacy("stat_file", json!({"workdir": "w", "path": "a.txt"}))
            .is_ok_and(|answer| answer["result"]["isError"] != json!(true))
    }
}

/// `count` connections; with `partial`, each sends the start of a header.
pub(super) fn open_sockets(address: SocketAddr, count: usize, partial: bool) -> Vec<TcpStream> {
    (0..count)
        .filter_map(|_| {
            let mut stream = TcpStream::connect(address).ok()?;
            if partial {
                let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\n");
            }
            Some(stream)
        })
        .collect()
}

/// A thread that runs `work` until the returned closure stops it.
pub(super) fn background(work: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> Box<dyn FnOnce()> {
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::spawn(move || work(stop))
    };
    Box::new(move || {
        stop.store(true, Ordering::Relaxed);
        let _ = thread.join();
    })
}

/// Connections that each send one more header byte every second.
pub(super) fn trickle_headers(address: SocketAddr) -> Box<dyn FnOnce()> {
    let mut sockets = open_sockets(address, ATTACK_SOCKETS, true);
    background(move |stop| {
        while !stop.load(Ordering::Relaxed) {
            for socket in &mut sockets {
                let _ = socket.write_all(b"X");
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    })
}

/// Requests with a token whose declared bodies arrive a byte a second.
fn trickle_bodies(address: SocketAddr, token: &str) -> Box<dyn FnOnce()> {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 100000\r\n\r\n{{"
    );
    let mut sockets: Vec<TcpStream> = (0..SLOW_BODIES)
        .filter_map(|_| {
            let mut stream = TcpStream::connect(address).ok()?;
            stream.write_all(head.as_bytes()).ok()?;
            Some(stream)
        })
        .collect();
    background(move |stop| {
        while !stop.load(Ordering::Relaxed) {
            for socket in &mut sockets {
                let _ = socket.write_all(b" ");
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    })
}

/// `total` legacy `initialize`s with a token from several threads, each
/// on its own kept-alive connection and pausing `pause` after each;
/// sessions are never closed.
pub(super) fn flood_sessions(
    address: SocketAddr,
    token: &str,
    total: usize,
    pause: Duration,
) -> Box<dyn FnOnce()> {
    let sent = Arc::new(AtomicU64::new(0));
    let token = token.to_owned();
    background(move |stop| {
        std::thread::scope(|scope| {
            for _ in 0..FLOOD_THREADS {
                let (sent, stop, token) = (&sent, &stop, &token);
                scope.spawn(move || {
                    let mut connection = None;
                    while !stop.load(Ordering::Relaxed)
                        && sent.fetch_add(1, Ordering::Relaxed) < total as u64
                    {
                        if connection.is_none() {
                            connection = Connection::connect(address).ok();
                        }
                        let Some(open) = connection.as_mut() else {
                            continue;
                        };
                        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "flood", "version": "1"}}});
                        let auth = format!("Bearer {token}");
                        let headers = [
                            ("authorization", auth.as_str()),
                            ("content-type", "application/json"),
                            ("accept", "application/json, text/event-stream"),
                        ];
                        if open
                            .request("POST", "/mcp", &headers, body.to_string().as_bytes())
                            .is_err()
                        {
                            connection = None;
                        }
                        std::thread::sleep(pause);
                    }
                });
            }
        });
    })
}

/// Creates a token with the real CLI and returns it.
pub(super) fn create_token(
    setup: &Setup,
    file: &std::path::Path,
    name: &str,
) -> Result<String, String> {
    let out = Command::new(&setup.serverfs)
        .args(["token", "create", name, "--token-file"])
        .arg(file)
        .env_clear()
        .output()
        .map_err(|e| format!("serverfs token create: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "serverfs token create: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The attacks need more descriptors than the usual soft limit.
pub(super) fn raise_own_file_limit() {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised);
}
