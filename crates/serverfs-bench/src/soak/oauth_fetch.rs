//! Client ID metadata documents of 1 GiB (issue 27, item 1): rounds of
//! ten concurrent `/authorize` requests, each naming its own document URL
//! on a local server that generates a 1 GiB body on the fly (chunked in
//! one round, declared by `Content-Length` in the next), against an OAuth
//! server on loopback. The server must refuse every one of them (its
//! metadata document cap is 64 KiB, its in-flight bound 8: the rest are
//! refused as busy) and its peak RSS stay under [`RSS_BUDGET_MIB`] above
//! its baseline.
//!
//! Figures: the baseline RSS (`VmRSS` after start and one refused fetch),
//! the peak above it (`VmHWM` after the attack, so nothing between samples
//! is missed), how many requests were refused as busy, and the most body
//! bytes the document server got written on one connection (what the
//! fetcher read plus what the sockets' buffers held when it closed).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serverfs_http1::Connection;

use super::http_abuse::{HttpRig, RigOptions};
use super::{Outcome, Setup};
use crate::rss::{current_rss_mib, peak_rss_mib};

/// Concurrent `/authorize` requests per round (the ten clients).
const CLIENTS: usize = 10;
/// The body each document URL would serve.
const DOCUMENT_BYTES: u64 = 1 << 30;
/// The most the server's peak RSS may rise above its baseline.
const RSS_BUDGET_MIB: f64 = 64.0;
/// How long one `/authorize` may take (the fetch bound is 5 s).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let rounds = setup.profile.pick(4, 20);
    let rig = HttpRig::start(
        setup,
        &["owner"],
        RigOptions {
            oauth: true,
            file_limit: false,
        },
    )?;
    let documents = DocumentServer::start()?;
    let mut served = rig.served;
    let address = served.address();

    // One refused fetch first, so the baseline includes the fetcher's own
    // set-up (TLS roots, connection pool).
    let warm_up = authorize(address, &documents.url("warm-up", false));
    let baseline = current_rss_mib(served.pid()).ok_or("the server exited")?;
    let mut attempts = 0u64;
    let mut accepted = 0u64;
    let mut unexpected = u64::from(warm_up.is_err());
    let mut busy = 0u64;
    for round in 0..rounds {
        let declared = round % 2 == 1;
        let answers: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let url = documents.url(&format!("r{round}-c{client}"), declared);
                std::thread::spawn(move || authorize(address, &url))
            })
            .collect();
        for answer in answers {
            attempts += 1;
            match answer.join().map_err(|_| "a client thread panicked")? {
                Ok(400) => {}
                Ok(503) => busy += 1,
                Ok(200) => accepted += 1,
                Ok(_) | Err(_) => unexpected += 1,
            }
        }
    }
    let peak = peak_rss_mib(served.pid()).ok_or("the server exited")?;
    let crashed = u64::from(!served.is_running());
    let above = peak - baseline;
    Ok(vec![Outcome {
        check: "OAuth metadata documents of 1 GiB",
        attempts,
        failures: vec![
            ("documents accepted", accepted),
            ("unexpected answers", unexpected),
            ("RSS over budget", u64::from(above >= RSS_BUDGET_MIB)),
            ("server crashes", crashed),
        ],
        figures: format!(
            "{rounds} rounds of {CLIENTS} concurrent 1 GiB documents; RSS baseline \
             {baseline:.1} MiB, peak {above:.1} MiB above it (budget {RSS_BUDGET_MIB:.0}); \
             {busy} refused as busy; at most {:.0} KiB written to one fetch",
            documents.most_written() as f64 / 1024.0,
        ),
    }])
}

/// `GET /authorize` naming `client_id`: the answer's status.
fn authorize(address: std::net::SocketAddr, client_id: &str) -> Result<u16, String> {
    let mut connection = Connection::connect_waiting(address, ANSWER_TIMEOUT)
        .map_err(|e| format!("connect: {e}"))?;
    let path = format!(
        "/authorize?response_type=code&client_id={}&redirect_uri={}&state=s\
         &code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256",
        encode(client_id),
        encode("http://127.0.0.1:9/callback"),
    );
    connection
        .request("GET", &path, &[], b"")
        .map(|response| response.status)
        .map_err(|e| format!("/authorize: {e}"))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A local server answering every request with a 1 GiB body of spaces
/// generated as it is written (never held in memory), chunked unless the
/// path ends in `-declared.json`.
struct DocumentServer {
    base: String,
    most_written: Arc<AtomicU64>,
}

impl DocumentServer {
    fn start() -> Result<DocumentServer, String> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| format!("document server: {e}"))?;
        let base = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let most_written = Arc::new(AtomicU64::new(0));
        let most = most_written.clone();
        // Detached: it lives as long as the soak process, which ends soon
        // after the check.
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let most = most.clone();
                std::thread::spawn(move || {
                    let written = serve_document(stream);
                    most.fetch_max(written, Ordering::Relaxed);
                });
            }
        });
        Ok(DocumentServer { base, most_written })
    }

    fn url(&self, name: &str, declared: bool) -> String {
        let kind = if declared { "declared" } else { "chunked" };
        format!("{}/{name}-{kind}.json", self.base)
    }

    fn most_written(&self) -> u64 {
        self.most_written.load(Ordering::Relaxed)
    }
}

/// Answers one request; returns the body bytes written before the reader
/// went away.
fn serve_document(mut stream: TcpStream) -> u64 {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return 0,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let declared = String::from_utf8_lossy(&request)
        .lines()
        .next()
        .is_some_and(|line| line.contains("-declared.json"));
    let head = if declared {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {DOCUMENT_BYTES}\r\n\r\n"
        )
    } else {
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_owned()
    };
    if stream.write_all(head.as_bytes()).is_err() {
        return 0;
    }
    const PIECE: usize = 64 * 1024;
    let piece = vec![b' '; PIECE];
    let chunk = [format!("{PIECE:x}\r\n").as_bytes(), &piece, b"\r\n"].concat();
    let mut written = 0u64;
    while written < DOCUMENT_BYTES {
        let bytes = if declared { &piece } else { &chunk };
        if stream.write_all(bytes).is_err() {
            break;
        }
        written += PIECE as u64;
    }
    if !declared && written >= DOCUMENT_BYTES {
        let _ = stream.write_all(b"0\r\n\r\n");
    }
    written
}
