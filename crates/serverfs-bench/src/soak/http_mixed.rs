//! Every HTTP attack at once against an OAuth server under the common
//! 1,024 open-file limit (issue 27, item 9), with a legitimate client
//! measured during it, then what the attack leaves behind:
//!
//! - **churning idle sockets** (no token): connections opened without end,
//!   each left silent, so the server keeps evicting the idlest;
//! - **slow headers** (no token): 1,100 connections trickling one byte a
//!   second;
//! - **junk** (no token): requests with a foreign `Host`, without a token,
//!   with a wrong token, and `/authorize` and `/token` requests that are
//!   refused;
//! - **12 MiB bodies**, with a token and without;
//! - **registrations**: `POST /register` with about 64 KiB of redirect
//!   URIs each;
//! - **session flood** (a token of its own): legacy `initialize`s.
//!
//! Figures: the legitimate client's p99 during the attack as a ratio to
//! its p99 without attack in the same run (target ≤ 3×); what the server
//! logged during the attack (lines and bytes: unauthenticated abuse is
//! logged as counted summaries, at most two lines per kind and 10 s
//! interval); its resident memory before, at the peak, and once the
//! attack has ended and its sockets are gone. Counted as failures: a
//! legitimate call that could not be made, a crash, and more log lines
//! than the summaries allow.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serverfs_http1::Connection;

use super::http_abuse::{
    HttpRig, Legit, Phase, RigOptions, background, flood_sessions, raise_own_file_limit,
    trickle_headers,
};
use super::{Outcome, Setup};
use crate::measure::quantile;
use crate::rss::{current_rss_mib, peak_rss_mib};

/// Idle sockets the churn keeps open at once (beyond the server's bound,
/// which is half the 1,024 open-file limit).
const CHURN_SOCKETS: usize = 700;
/// Kinds of event the attack provokes that are summarized (foreign host,
/// no token, wrong token, eviction, refused connection, body timeout,
/// OAuth refusals of a few codes): generous, since only the order of
/// magnitude matters (a line per event would be tens of thousands).
const SUMMARIZED_KINDS: u64 = 16;
/// The interval over which repeats are summarized.
const SUMMARY_INTERVAL_S: u64 = 10;
/// How long the attack's sockets get to close before memory is read.
const SETTLE: Duration = Duration::from_secs(3);

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    raise_own_file_limit();
    let calls = setup.profile.pick(2_000, 10_000);
    let rig = HttpRig::start(
        setup,
        &["legitimate", "flood"],
        RigOptions {
            oauth: true,
            file_limit: true,
        },
    )?;
    let (token, flood_token) = (&rig.tokens[0], &rig.tokens[1]);
    let mut served = rig.served;
    let address = served.address();
    let mut client = Legit::connect(address, token)?;

    let _ = client.measure(calls / 5);
    let baseline = client.measure(calls);
    let rss_before = current_rss_mib(served.pid()).unwrap_or(0.0);
    let (log_bytes_before, log_lines_before) = served.logged();
    let events_before = served.logged_events();
    let started = Instant::now();
    let stoppers = vec![
        churn_idle_sockets(address),
        trickle_headers(address),
        junk(address),
        large_bodies(address, token),
        registrations(address),
        flood_sessions(address, flood_token, usize::MAX, Duration::from_millis(10)),
    ];
    let attacked = client.measure(calls);
    for stop in stoppers {
        stop();
    }
    let attack_seconds = started.elapsed().as_secs();
    let rss_peak = peak_rss_mib(served.pid()).unwrap_or(0.0);
    std::thread::sleep(SETTLE);
    let rss_after = current_rss_mib(served.pid()).unwrap_or(0.0);
    let (log_bytes, log_lines) = served.logged();
    let (log_bytes, log_lines) = (log_bytes - log_bytes_before, log_lines - log_lines_before);
    let mut loudest: Vec<(String, u64)> = served
        .logged_events()
        .into_iter()
        .map(|(event, count)| {
            let before = events_before.get(&event).copied().unwrap_or(0);
            (event, count - before)
        })
        .filter(|(_, count)| *count > 0)
        .collect();
    loudest.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let loudest = loudest
        .iter()
        .take(4)
        .map(|(event, count)| format!("{event} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    let crashed = u64::from(!served.is_running());

    // Two lines per kind and interval, plus the legitimate client's audit
    // lines (one per call) and session lines.
    let intervals = attack_seconds / SUMMARY_INTERVAL_S + 1;
    let allowed_lines = 2 * SUMMARIZED_KINDS * intervals + 4 * calls as u64;
    let p99 = |phase: &Phase| quantile(&phase.latencies, 0.99);
    let base = p99(&baseline).max(f64::EPSILON);
    let ratio = if attacked.latencies.is_empty() {
        "no call answered".to_owned()
    } else {
        format!("×{:.2}", p99(&attacked) / base)
    };
    Ok(vec![Outcome {
        check: "HTTP mixed attack (legitimate client's calls)",
        attempts: (baseline.latencies.len() + attacked.latencies.len()) as u64
            + baseline.failures
            + attacked.failures,
        failures: vec![
            ("legitimate failures", baseline.failures + attacked.failures),
            ("server crashes", crashed),
            (
                "log lines beyond the summaries",
                log_lines.saturating_sub(allowed_lines),
            ),
        ],
        figures: format!(
            "p99 {base:.2} ms without attack, {ratio} during {attack_seconds} s of every attack \
             at once (target ≤ ×3); log during it {log_lines} lines ({loudest}), {:.1} KiB; RSS {rss_before:.1} \
             MiB before, {rss_peak:.1} MiB peak, {rss_after:.1} MiB {} s after",
            log_bytes as f64 / 1024.0,
            SETTLE.as_secs(),
        ),
    }])
}

/// Opens connections without end, keeping the newest [`CHURN_SOCKETS`]
/// open and silent: beyond the server's bound, each new one evicts the
/// idlest.
fn churn_idle_sockets(address: SocketAddr) -> Box<dyn FnOnce()> {
    background(move |stop| {
        let mut open = std::collections::VecDeque::new();
        while !stop.load(Ordering::Relaxed) {
            if let Ok(socket) = TcpStream::connect(address) {
                open.push_back(socket);
            }
            if open.len() > CHURN_SOCKETS {
                open.pop_front();
            }
            // About 1,000 new sockets a second.
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// Requests refused without a token, round after round: a foreign host,
/// no token, a wrong token, a refused authorization request and a refused
/// token request, each on a new connection.
fn junk(address: SocketAddr) -> Box<dyn FnOnce()> {
    // (request line and headers, body)
    let requests: [(&str, &str); 5] = [
        ("GET /mcp HTTP/1.1\r\nHost: evil.example\r\n", ""),
        (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n",
            "{}",
        ),
        (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sft_wrong\r\n\
             Content-Type: application/json\r\n",
            "{}",
        ),
        (
            "GET /authorize?client_id=nobody&response_type=code HTTP/1.1\r\nHost: 127.0.0.1\r\n",
            "",
        ),
        (
            "POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Content-Type: application/x-www-form-urlencoded\r\n",
            "grant_type=refresh_token&refresh_token=sfr_wrong",
        ),
    ];
    background(move |stop| {
        while !stop.load(Ordering::Relaxed) {
            for (head, body) in requests {
                let _ = one_shot(address, head, body);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    })
}

/// 12 MiB bodies, with a token (read up to the message bound, then `413`)
/// and without (refused before the body).
fn large_bodies(address: SocketAddr, token: &str) -> Box<dyn FnOnce()> {
    const BODY: usize = 12 * 1024 * 1024;
    let with_token = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {BODY}\r\n\r\n"
    );
    let without = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {BODY}\r\n\r\n"
    );
    background(move |stop| {
        let body = vec![b' '; BODY];
        while !stop.load(Ordering::Relaxed) {
            for head in [&with_token, &without] {
                if let Ok(mut socket) = TcpStream::connect(address) {
                    let _ = socket.set_write_timeout(Some(Duration::from_secs(2)));
                    let _ = socket.write_all(head.as_bytes());
                    let _ = socket.write_all(&body);
                }
            }
        }
    })
}

/// Dynamic registrations carrying about 64 KiB of redirect URIs each.
fn registrations(address: SocketAddr) -> Box<dyn FnOnce()> {
    background(move |stop| {
        let uris: Vec<String> = (0..640)
            .map(|i| format!("http://127.0.0.1:9/callback/{i:04}/{}", "x".repeat(70)))
            .collect();
        let body = serde_json::json!({"redirect_uris": uris, "client_name": "flood"}).to_string();
        while !stop.load(Ordering::Relaxed) {
            let Ok(mut connection) = Connection::connect(address) else {
                continue;
            };
            let _ = connection.request(
                "POST",
                "/register",
                &[("content-type", "application/json")],
                body.as_bytes(),
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// Sends one request (`head`: its request line and headers) with `body` on
/// a new connection that asks to be closed, and reads until the server
/// closes it (bounded).
fn one_shot(address: SocketAddr, head: &str, body: &str) -> std::io::Result<()> {
    use std::io::Read;
    let mut socket = TcpStream::connect(address)?;
    socket.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        socket,
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut sink = [0u8; 4096];
    while socket.read(&mut sink)? > 0 {}
    Ok(())
}
