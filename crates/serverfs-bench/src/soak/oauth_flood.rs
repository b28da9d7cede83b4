//! OAuth registration flood (issue 27, item 2): 400 registrations of
//! about 60 KiB each (58 loopback redirect URIs of 1,000 bytes; the
//! endpoints read at most 64 KiB) from eight concurrent connections
//! without a token, spread over the time the legitimate client's
//! baseline took, while that client refreshes its grant at `POST /token`
//! back to back. Measured: that client's p99 per
//! refresh as a ratio to its p99 without attack in the same run (target
//! under 3×), the state file with its write-ahead log afterwards (must
//! stay under 1 MiB: a failure otherwise), and the server's peak RSS
//! before and after. Before the fix the same flood grew the state file to
//! 18.9 MB and slowed every OAuth call about 500×.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use serverfs_http1::{Connection, Response};
use sha2::{Digest, Sha256};

use super::http_abuse::{HttpRig, RigOptions};
use super::{Outcome, Setup};
use crate::measure::{millis, quantile};
use crate::rss::peak_rss_mib;

/// Registrations per flood round, and the connections sending them.
const ROUND: u64 = 400;
const FLOOD_THREADS: usize = 8;
/// The state file's bound under the flood.
const MAX_STATE_BYTES: u64 = 1 << 20;
const REDIRECT_URI: &str = "http://127.0.0.1:9/cb";
const TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let calls = setup.profile.pick(300, 1_000);
    let rig = HttpRig::start(
        setup,
        &["owner"],
        RigOptions {
            oauth: true,
            file_limit: false,
        },
    )?;
    let owner = &rig.tokens[0];
    let mut served = rig.served;
    let address = served.address();
    let mut legit = Legit::grant(address, owner)?;

    // Warm-up, not counted.
    let _ = legit.measure(calls / 5, || true);
    let started = Instant::now();
    let baseline = legit.measure(calls, || true);
    let spread = started.elapsed();
    let rss_before = peak_rss_mib(served.pid()).unwrap_or(0.0);
    let flood = Flood::start(address, spread);
    let under = legit.measure(calls, || flood.sent() >= ROUND);
    let (sent, stored) = flood.stop();
    let rss_after = peak_rss_mib(served.pid()).unwrap_or(0.0);
    let crashed = u64::from(!served.is_running());
    let state_bytes = state_bytes(&rig.tmp.path().join("oauth.sqlite3"));

    let base = quantile(&baseline.latencies, 0.99).max(f64::EPSILON);
    let ratio = if under.latencies.is_empty() {
        "no call answered".to_owned()
    } else {
        format!("×{:.2}", quantile(&under.latencies, 0.99) / base)
    };
    Ok(vec![Outcome {
        check: "OAuth registration flood (legitimate refreshes)",
        attempts: sent + (baseline.latencies.len() + under.latencies.len()) as u64,
        failures: vec![
            ("legitimate failures", baseline.failures + under.failures),
            (
                "state file over 1 MiB",
                u64::from(state_bytes >= MAX_STATE_BYTES),
            ),
            ("server crashes", crashed),
        ],
        figures: format!(
            "refresh p99 without attack {base:.2} ms, during the flood {ratio} (target < ×3); \
             {sent} registrations of ~60 KiB sent over {:.1} s, {stored} stored; state file \
             {:.1} KiB (database and log); \
             peak RSS {rss_before:.1} MiB before, {rss_after:.1} MiB after (+{:.1})",
            spread.as_secs_f64(),
            state_bytes as f64 / 1024.0,
            rss_after - rss_before
        ),
    }])
}

/// The database and its write-ahead log.
fn state_bytes(database: &std::path::Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|suffix| {
            let mut name = database.as_os_str().to_owned();
            name.push(suffix);
            std::fs::metadata(name).ok()
        })
        .map(|m| m.len())
        .sum()
}

/// One phase's legitimate refreshes.
struct Phase {
    latencies: Vec<f64>,
    failures: u64,
}

/// The legitimate client: registered, approved by the owner, refreshing.
struct Legit {
    connection: Connection,
    address: SocketAddr,
    client_id: String,
    refresh: String,
}

impl Legit {
    /// Registration, consent with the owner's token, code exchange.
    fn grant(address: SocketAddr, owner: &str) -> Result<Legit, String> {
        let mut connection =
            Connection::connect_waiting(address, TIMEOUT).map_err(|e| e.to_string())?;
        let registered = json_of(&send(
            &mut connection,
            "POST",
            "/register",
            &[("content-type", "application/json")],
            json!({"redirect_uris": [REDIRECT_URI], "client_name": "soak"}).to_string(),
        )?)?;
        let client_id = field(&registered, "client_id")?;
        let verifier = format!("soak-verifier-{}", "v".repeat(40));
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let query = form(&[
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT_URI),
            ("state", "s"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("scope", "read"),
        ]);
        let page = send(
            &mut connection,
            "GET",
            &format!("/authorize?{query}"),
            &[],
            String::new(),
        )?;
        let html = String::from_utf8_lossy(&page.body).into_owned();
        let cookie = page
            .header("set-cookie")
            .and_then(|c| c.split(';').next())
            .ok_or("no consent cookie")?
            .to_owned();
        let decision = form(&[
            ("request_id", &hidden(&html, "request_id")?),
            ("csrf", &hidden(&html, "csrf")?),
            ("decision", "approve"),
            ("proof", owner),
        ]);
        let approved = send(
            &mut connection,
            "POST",
            "/authorize",
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("cookie", &cookie),
            ],
            decision,
        )?;
        let location = approved.header("location").ok_or("consent: no redirect")?;
        let code = location
            .split(['?', '&'])
            .find_map(|pair| pair.strip_prefix("code="))
            .ok_or("consent: no code")?
            .to_owned();
        let tokens = json_of(&send(
            &mut connection,
            "POST",
            "/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("client_id", &client_id),
                ("redirect_uri", REDIRECT_URI),
                ("code_verifier", &verifier),
            ]),
        )?)?;
        Ok(Legit {
            connection,
            address,
            refresh: field(&tokens, "refresh_token")?,
            client_id,
        })
    }

    /// Timed refreshes: at least `calls`, and on until `done` holds.
    fn measure(&mut self, calls: usize, done: impl Fn() -> bool) -> Phase {
        let mut phase = Phase {
            latencies: Vec::with_capacity(calls),
            failures: 0,
        };
        while phase.latencies.len() < calls || !done() {
            if phase.failures >= 20 {
                break;
            }
            let started = Instant::now();
            match self.refresh() {
                Ok(()) => phase.latencies.push(millis(started.elapsed())),
                Err(_) => {
                    phase.failures += 1;
                    if let Ok(fresh) = Connection::connect_waiting(self.address, TIMEOUT) {
                        self.connection = fresh;
                    }
                }
            }
        }
        phase
    }

    fn refresh(&mut self) -> Result<(), String> {
        let body = form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &self.refresh),
            ("client_id", &self.client_id),
        ]);
        let answer = json_of(&send(
            &mut self.connection,
            "POST",
            "/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            body,
        )?)?;
        self.refresh = field(&answer, "refresh_token")?;
        Ok(())
    }
}

/// The flood's threads, until stopped.
struct Flood {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    stored: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Flood {
    /// [`ROUND`] registrations, spread evenly over `spread`.
    fn start(address: SocketAddr, spread: Duration) -> Flood {
        let per_thread = ROUND / FLOOD_THREADS as u64;
        let pause = spread / u32::try_from(per_thread).unwrap_or(1);
        let uris: Vec<String> = (0..58)
            .map(|i| format!("http://127.0.0.1:9/cb{i:02}/{}", "a".repeat(980)))
            .collect();
        let body = Arc::new(json!({"redirect_uris": uris, "client_name": "flood"}).to_string());
        let (stop, sent, stored) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        );
        let threads = (0..FLOOD_THREADS)
            .map(|_| {
                let (stop, sent, stored, body) =
                    (stop.clone(), sent.clone(), stored.clone(), body.clone());
                std::thread::spawn(move || {
                    let mut connection = None;
                    for _ in 0..per_thread {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        if connection.is_none() {
                            connection = Connection::connect(address).ok();
                        }
                        let Some(open) = connection.as_mut() else {
                            continue;
                        };
                        sent.fetch_add(1, Ordering::Relaxed);
                        let headers = [("content-type", "application/json")];
                        match open.request("POST", "/register", &headers, body.as_bytes()) {
                            Ok(answer) if answer.status == 201 => {
                                stored.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => {}
                            Err(_) => connection = None,
                        }
                        std::thread::sleep(pause);
                    }
                })
            })
            .collect();
        Flood {
            stop,
            sent,
            stored,
            threads,
        }
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Stops it: registrations sent and stored.
    fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            let _ = thread.join();
        }
        (
            self.sent.load(Ordering::Relaxed),
            self.stored.load(Ordering::Relaxed),
        )
    }
}

fn send(
    connection: &mut Connection,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
) -> Result<Response, String> {
    connection
        .request(method, path, headers, body.as_bytes())
        .map_err(|e| format!("{method} {path}: {e}"))
}

fn json_of(response: &Response) -> Result<Value, String> {
    if response.status != 200 && response.status != 201 {
        return Err(format!(
            "status {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ));
    }
    serde_json::from_slice(&response.body).map_err(|e| e.to_string())
}

fn field(value: &Value, name: &str) -> Result<String, String> {
    value[name]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no {name} in {value}"))
}

/// A hidden form field's value on the consent page.
fn hidden(html: &str, name: &str) -> Result<String, String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .ok_or_else(|| format!("consent page: no {name}"))?
        + marker.len();
    let end = html[start..].find('"').ok_or("consent page: bad field")?;
    Ok(html[start..start + end].to_owned())
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}
