//! MCP over HTTP with 1, 8 and 32 plain keep-alive clients, and HTTP
//! against stdio per call.
//!
//! Each client is a thread with its own connection and legacy-era session
//! (as today's hosted clients connect), calling `stat_file` back to back
//! through `serverfs-http1` (one write per request, the system's delayed
//! ACKs). The anchor of every HTTP row is `GET /healthz` on the same
//! connections in the same rounds: the same server, sockets and HTTP stack
//! without MCP, so the ratio is what the MCP call adds. Clients and server
//! share the machine's cores.

use std::cell::RefCell;
use std::process::Command;
use std::sync::Barrier;
use std::time::Instant;

use serde_json::json;
use serverfs_http1::{Connection, Mcp, Served};

use crate::calls::latencies;
use crate::measure::{Paired, SERVERFS_ENV, Setup, millis, quantile, round};
use crate::report::Row;
use crate::stdio::StdioServer;

/// Client counts of the HTTP rows.
const CLIENTS: [usize; 3] = [1, 8, 32];

/// `serverfs serve --http 127.0.0.1:0` on `tree` without authentication
/// (loopback only).
fn start(setup: &Setup, tree: &std::path::Path) -> Result<Served, String> {
    let mut command = Command::new(&setup.serverfs);
    command
        .args(setup.serve(&[("a", tree)])?)
        .args(["--http", "127.0.0.1:0"])
        .envs(SERVERFS_ENV.iter().copied())
        .env("SERVERFS_HTTP_AUTH", "none");
    Served::start(command).map_err(|e| format!("serverfs --http: {e}"))
}

/// One batch on every client at once: per-call latencies (ms) and the
/// batch's wall time (ms), from a common start.
fn batch(
    clients: &mut [Mcp],
    calls: usize,
    call: fn(&mut Mcp) -> Result<(), String>,
) -> Result<(Vec<f64>, f64), String> {
    let start = Barrier::new(clients.len() + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = clients
            .iter_mut()
            .map(|client| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    let mut samples = Vec::with_capacity(calls);
                    for _ in 0..calls {
                        let began = Instant::now();
                        call(client)?;
                        samples.push(millis(began.elapsed()));
                    }
                    Ok::<_, String>(samples)
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let mut samples = Vec::new();
        for worker in workers {
            samples.extend(worker.join().map_err(|_| "a client thread panicked")??);
        }
        Ok((samples, millis(began.elapsed())))
    })
}

fn stat(client: &mut Mcp) -> Result<(), String> {
    let answer = client
        .call_legacy(
            "stat_file",
            json!({"workdir": "a", "path": "dir0000/file00.txt"}),
        )
        .map_err(|e| format!("stat_file over HTTP: {e}"))?;
    if answer["result"]["isError"] != json!(false) {
        return Err(format!("stat_file over HTTP failed: {answer}"));
    }
    Ok(())
}

fn health(client: &mut Mcp) -> Result<(), String> {
    let response = client
        .connection()
        .request("GET", "/healthz", &[], b"")
        .map_err(|e| format!("GET /healthz: {e}"))?;
    if response.status != 200 {
        return Err(format!("GET /healthz answered {}", response.status));
    }
    Ok(())
}

/// The HTTP rows.
pub fn rows(setup: &Setup) -> Result<Vec<Row>, String> {
    let tree = &setup.corpora.trees[1].path;
    let server = start(setup, tree)?;
    let mut stdio =
        StdioServer::spawn(&setup.serverfs, &setup.serve(&[("a", tree)])?, SERVERFS_ENV)?;
    let mut rows = Vec::new();
    let mut over_stdio = Paired::default();
    for clients in CLIENTS {
        let mut sessions = Vec::new();
        for _ in 0..clients {
            let connection =
                Connection::connect(server.address()).map_err(|e| format!("connecting: {e}"))?;
            let mut mcp = Mcp::new(connection);
            mcp.initialize()
                .map_err(|e| format!("initialize over HTTP: {e}"))?;
            sessions.push(mcp);
        }
        let (mut rate, mut p50, mut p99) =
            (Paired::default(), Paired::default(), Paired::default());
        for index in 0..setup.runs {
            // Both sides use the same connections, one after the other.
            let shared = RefCell::new(&mut sessions);
            let ((calls, calls_ms), (healthz, healthz_ms)) = round(
                index,
                || batch(&mut shared.borrow_mut(), setup.calls, stat),
                || batch(&mut shared.borrow_mut(), setup.calls, health),
            )?;
            let per_second = |samples: &[f64], ms: f64| samples.len() as f64 * 1000.0 / ms;
            rate.push(
                per_second(&calls, calls_ms),
                Some(per_second(&healthz, healthz_ms)),
            );
            p50.push(quantile(&calls, 0.5), Some(quantile(&healthz, 0.5)));
            p99.push(quantile(&calls, 0.99), Some(quantile(&healthz, 0.99)));
            if clients == 1 {
                let arguments = json!({"workdir": "a", "path": "dir0000/file00.txt"});
                let piped = latencies(&mut stdio, "stat_file", &arguments, setup.calls)?;
                over_stdio.push(quantile(&calls, 0.5), Some(quantile(&piped, 0.5)));
            }
        }
        let who = if clients == 1 {
            "1 client".to_owned()
        } else {
            format!("{clients} clients")
        };
        rows.push(rate.row(
            format!("HTTP stat_file calls/s, {who} (vs GET /healthz)"),
            "calls/s",
            "",
        ));
        rows.push(p50.row(
            format!("HTTP stat_file p50, {who} (vs GET /healthz)"),
            "ms",
            "",
        ));
        rows.push(p99.row(
            format!("HTTP stat_file p99, {who} (vs GET /healthz)"),
            "ms",
            if clients == 1 { "≤ 2 ms" } else { "" },
        ));
    }
    rows.push(over_stdio.row(
        "stat_file p50 over HTTP, 1 client (vs over stdio)".to_owned(),
        "ms",
        "",
    ));
    Ok(rows)
}
