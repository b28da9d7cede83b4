//! Outbound fetches of the OAuth server (issue 27, items 1 and 4): a
//! client ID metadata document or JWKS URL served by a hostile local
//! server is cut at its size cap and total time, never redirected, not
//! fetched again while it keeps failing, and no more fetched at once than
//! the bound; an external issuer's token is not accepted before its `nbf`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::oauth::{
    LOOPBACK_CALLBACK, OAuth, Page, idp_jwks, jwt, pkce, serve_json, www_authenticate,
};
use crate::common::TIMEOUT;

/// The metadata document cap (docs/oauth.md).
const DOCUMENT_CAP: u64 = 64 * 1024;
/// Fetches of metadata documents at once (docs/oauth.md).
const DOCUMENT_IN_FLIGHT: usize = 8;
/// The most body bytes a mock writes on one connection: a fetcher that
/// stops at its cap has closed the connection long before (the mock's send
/// buffer is small, so little more than the cap is ever in flight).
const MOCK_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Body bytes per write (and per chunk of a chunked body).
const PIECE: usize = 16 * 1024;

/// What the mock answers every request with.
#[derive(Clone)]
enum Answer {
    /// 200 and a body of spaces without end (until [`MOCK_MAX_BYTES`]),
    /// declaring `Some(length)` or sent chunked (`None`).
    Endless(Option<u64>),
    /// 200, chunked, one byte every 200 ms.
    Drip,
    /// This status and no body.
    Status(u16),
    /// 302 to this location.
    Redirect(String),
    /// 200 and this JSON document (`{base}` replaced by the mock's URL).
    Document(String),
    /// Nothing until the test lets go (then the connection is closed).
    Hold,
}

/// A hostile HTTP server on loopback: counts requests and, per
/// connection, the body bytes it wrote before the other side closed.
struct Mock {
    base: String,
    hits: Arc<AtomicUsize>,
    /// Body bytes written on each finished connection.
    written: Arc<std::sync::Mutex<Vec<u64>>>,
    /// Set to let held connections go.
    release: tokio::sync::watch::Sender<bool>,
    _task: tokio::task::JoinHandle<()>,
}

impl Mock {
    async fn start(answer: Answer) -> Mock {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        // A small send buffer: what the mock counts as written is then
        // close to what the fetcher read.
        socket.set_send_buffer_size(16 * 1024).unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(64).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let written = Arc::new(std::sync::Mutex::new(Vec::new()));
        let release = tokio::sync::watch::Sender::new(false);
        let task = {
            let (base, hits, written, release) =
                (base.clone(), hits.clone(), written.clone(), release.clone());
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (base, hits, written, mut release, answer) = (
                        base.clone(),
                        hits.clone(),
                        written.clone(),
                        release.subscribe(),
                        answer.clone(),
                    );
                    tokio::spawn(async move {
                        if let Some(bytes) = serve(stream, &base, &hits, &mut release, answer).await
                        {
                            written.lock().unwrap().push(bytes);
                        }
                    });
                }
            })
        };
        Mock {
            base,
            hits,
            written,
            release,
            _task: task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// Waits until `count` connections have finished, and returns the body
    /// bytes each got written.
    async fn finished(&self, count: usize) -> Vec<u64> {
        tokio::time::timeout(TIMEOUT, async {
            loop {
                let written = self.written.lock().unwrap().clone();
                if written.len() >= count {
                    return written;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the fetcher never closed the connection")
    }

    /// Waits until `count` requests have arrived.
    async fn requests(&self, count: usize) {
        tokio::time::timeout(TIMEOUT, async {
            while self.hits() < count {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the requests never arrived");
    }
}

/// One connection: reads the request, answers, and returns the body
/// bytes it wrote before the other side closed (`None` for answers that
/// are written whole).
async fn serve(
    mut stream: TcpStream,
    base: &str,
    hits: &AtomicUsize,
    release: &mut tokio::sync::watch::Receiver<bool>,
    answer: Answer,
) -> Option<u64> {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let head = |status: &str, headers: &str| {
        format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{headers}\r\n")
    };
    match answer {
        Answer::Endless(declared) => {
            let headers = match declared {
                Some(length) => format!("content-length: {length}\r\n"),
                None => "transfer-encoding: chunked\r\n".to_owned(),
            };
            stream
                .write_all(head("200 OK", &headers).as_bytes())
                .await
                .ok()?;
            let piece = vec![b' '; PIECE];
            let chunk = [format!("{PIECE:x}\r\n").as_bytes(), &piece, b"\r\n"].concat();
            let mut sent = 0u64;
            while sent < MOCK_MAX_BYTES {
                let bytes = if declared.is_some() { &piece } else { &chunk };
                if stream.write_all(bytes).await.is_err() {
                    return Some(sent);
                }
                sent += PIECE as u64;
            }
            // Still being read: hold until the other side gives up.
            let _ = stream.read(&mut buffer).await;
            Some(sent)
        }
        Answer::Drip => {
            let headers = "transfer-encoding: chunked\r\n";
            stream
                .write_all(head("200 OK", headers).as_bytes())
                .await
                .ok()?;
            let mut sent = 0u64;
            loop {
                if stream.write_all(b"1\r\n \r\n").await.is_err() {
                    return Some(sent);
                }
                sent += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Answer::Status(status) => {
            let headers = "content-length: 0\r\nconnection: close\r\n";
            let _ = stream
                .write_all(head(&format!("{status} Nope"), headers).as_bytes())
                .await;
            None
        }
        Answer::Redirect(location) => {
            let headers =
                format!("location: {location}\r\ncontent-length: 0\r\nconnection: close\r\n");
            let _ = stream
                .write_all(head("302 Found", &headers).as_bytes())
                .await;
            None
        }
        Answer::Document(body) => {
            let body = body.replace("{base}", base);
            let headers = format!("content-length: {}\r\nconnection: close\r\n", body.len());
            let _ = stream
                .write_all(format!("{}{body}", head("200 OK", &headers)).as_bytes())
                .await;
            None
        }
        Answer::Hold => {
            let _ = release.wait_for(|go| *go).await;
            None
        }
    }
}

/// `GET /authorize` naming the metadata document at `url`.
async fn authorize(s: &OAuth, url: &str) -> Page {
    let (_, challenge) = pkce();
    s.authorize_page(&s.request(url, LOOPBACK_CALLBACK, &challenge, "read"))
        .await
}

/// Asserts that the server logged a refused document with `reason`.
fn assert_refused_because(s: &OAuth, reason: &str) {
    let log = s.server.stderr();
    assert!(
        log.lines().any(
            |line| line.contains("\"event\":\"oauth_client_document_refused\"")
                && line.contains(reason)
        ),
        "no refusal because {reason:?} in {log}"
    );
}

/// A server whose `/authorize` names the document `answer` serves: the
/// request is refused as an unusable document.
async fn refused_document(answer: Answer) -> (Mock, OAuth) {
    let mock = Mock::start(answer).await;
    let s = OAuth::start(&[]).await;
    authorize(&s, &mock.url("/client.json"))
        .await
        .assert_code(400, "OAUTH_CLIENT_METADATA_INVALID");
    (mock, s)
}

#[tokio::test]
async fn a_declared_length_above_the_cap_is_refused_before_the_body_is_read() {
    let (mock, s) = refused_document(Answer::Endless(Some(1 << 30))).await;
    let written = mock.finished(1).await;
    assert!(
        written[0] < MOCK_MAX_BYTES,
        "the server read on: {written:?}"
    );
    assert_refused_because(&s, "declared 1073741824 bytes, more than 65536");
}

#[tokio::test]
async fn an_endless_chunked_body_is_cut_at_the_cap() {
    let (mock, s) = refused_document(Answer::Endless(None)).await;
    let written = mock.finished(1).await;
    // What the mock got written is what the server read plus what the two
    // sockets' buffers held when it closed: far below the mock's end.
    assert!(
        written[0] >= DOCUMENT_CAP && written[0] < MOCK_MAX_BYTES,
        "the server read on: {written:?}"
    );
    assert_refused_because(&s, "more than 65536 bytes");
}

#[tokio::test]
async fn a_slow_drip_is_cut_at_the_total_time_bound() {
    let (mock, s) = refused_document(Answer::Drip).await;
    mock.finished(1).await;
    assert_refused_because(&s, "took longer than 5 s");
}

#[tokio::test]
async fn redirects_are_never_followed() {
    let target = Mock::start(Answer::Document(
        json!({"client_id": "{base}/client.json", "redirect_uris": [LOOPBACK_CALLBACK]})
            .to_string(),
    ))
    .await;
    let (mock, s) = refused_document(Answer::Redirect(target.url("/client.json"))).await;
    assert_eq!(mock.hits(), 1);
    assert_eq!(target.hits(), 0, "the redirect was followed");
    assert_refused_because(&s, "answered 302");
}

#[tokio::test]
async fn a_failing_url_is_not_fetched_again_for_a_while() {
    let broken = Mock::start(Answer::Status(500)).await;
    // A document naming another URL than its own: fetched fine, refused
    // for what it says — remembered as failing just the same.
    let wrong = Mock::start(Answer::Document(
        json!({"client_id": "https://elsewhere.example/client.json",
            "redirect_uris": [LOOPBACK_CALLBACK]})
        .to_string(),
    ))
    .await;
    let s = OAuth::start(&[]).await;
    for mock in [&broken, &wrong] {
        for _ in 0..3 {
            authorize(&s, &mock.url("/client.json"))
                .await
                .assert_code(400, "OAUTH_CLIENT_METADATA_INVALID");
        }
        assert_eq!(mock.hits(), 1, "fetched again while failing");
    }
    assert_refused_because(&s, "failed less than 30 s ago");
}

#[tokio::test]
async fn fetches_beyond_the_in_flight_bound_are_refused_at_once() {
    let mock = Mock::start(Answer::Hold).await;
    let s = Arc::new(OAuth::start(&[]).await);
    let held: Vec<_> = (0..DOCUMENT_IN_FLIGHT)
        .map(|i| {
            let (s, url) = (s.clone(), mock.url(&format!("/held-{i}.json")));
            tokio::spawn(async move { authorize(&s, &url).await.status })
        })
        .collect();
    mock.requests(DOCUMENT_IN_FLIGHT).await;
    authorize(&s, &mock.url("/one-more.json"))
        .await
        .assert_code(503, "OAUTH_CLIENT_METADATA_BUSY");
    assert_eq!(
        mock.hits(),
        DOCUMENT_IN_FLIGHT,
        "the refused one was fetched"
    );
    // Let go: the held fetches end (refused), and give their places back.
    mock.release.send_replace(true);
    for task in held {
        assert_eq!(task.await.unwrap(), 400);
    }
    let (base, _served) = serve_json(|base| {
        json!({"client_id": format!("{base}/client.json"), "client_name": "After The Flood",
            "redirect_uris": [LOOPBACK_CALLBACK], "token_endpoint_auth_method": "none"})
        .to_string()
    })
    .await;
    let page = authorize(&s, &format!("{base}/client.json")).await;
    assert_eq!(page.status, 200, "{}", page.body);
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An external-issuer server whose key set is at `jwks_url`.
async fn with_issuer(jwks_url: &str) -> OAuth {
    OAuth::start(&[
        ("SERVERFS_HTTP_OAUTH_EXTERNAL_ISSUER", "https://idp.example"),
        ("SERVERFS_HTTP_OAUTH_EXTERNAL_JWKS_URL", jwks_url),
    ])
    .await
}

/// A token of the fixture issuer for `s`, with `nbf` if given.
fn token(s: &OAuth, nbf: Option<u64>) -> String {
    let mut claims = json!({"iss": "https://idp.example", "aud": s.server.url,
        "exp": now() + 7200, "sub": "alice", "scope": "read"});
    if let Some(nbf) = nbf {
        claims["nbf"] = json!(nbf);
    }
    jwt(&claims, "idp-ed25519.pkcs8.der")
}

#[tokio::test]
async fn the_jwks_url_is_fetched_within_the_same_bounds() {
    let mock = Mock::start(Answer::Endless(None)).await;
    let s = with_issuer(&mock.url("/jwks.json")).await;
    let answer = s.call(&token(&s, None), "list_workdirs", json!({})).await;
    assert_eq!(answer.status(), 500);
    let written = mock.finished(1).await;
    assert!(
        written[0] < MOCK_MAX_BYTES,
        "the server read on: {written:?}"
    );
    let log = s.server.stderr();
    assert!(
        log.contains("more than 262144 bytes"),
        "no size refusal in {log}"
    );
}

#[tokio::test]
async fn a_token_is_not_accepted_before_its_nbf_beyond_the_clock_skew() {
    let (jwks, _served) = serve_json(|_| idp_jwks().to_string()).await;
    let s = with_issuer(&format!("{jwks}/jwks.json")).await;
    let early = s
        .call(&token(&s, Some(now() + 3600)), "list_workdirs", json!({}))
        .await;
    assert_eq!(early.status(), 401);
    let challenge = www_authenticate(&early);
    assert!(
        challenge.contains("error_description=\"OAUTH_TOKEN_NOT_YET_VALID\""),
        "{challenge}"
    );
    // Within the documented 60 s skew, and already valid: accepted.
    for nbf in [now() + 30, now() - 10] {
        let answer = s
            .call(&token(&s, Some(nbf)), "list_workdirs", json!({}))
            .await;
        assert_eq!(answer.status(), 200, "{}", www_authenticate(&answer));
    }
}
