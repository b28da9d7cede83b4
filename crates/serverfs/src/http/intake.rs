//! What a request must be before it is authenticated or served.
//!
//! - [`check_host`], on every route: exactly one `Host` header, a plain
//!   `host[:port]` (no userinfo, a port within 0-65535), naming an allowed
//!   host; a request-target in absolute form (`POST http://a.example/mcp`)
//!   must name the same authority. A second header or `evil@127.0.0.1`
//!   must never reach a check, since which value it reads is then a matter
//!   of luck; a foreign host is a DNS-rebinding page or a misrouted
//!   request, on the OAuth routes as much as on `/mcp` (rmcp checks `/mcp`
//!   again, with the same list). `/healthz` alone takes any allowed-shape
//!   host: it says only "ok", and an orchestrator's probe names the
//!   container by its own address.
//! - [`read_message`]: the body of an MCP `POST` is read whole, within the
//!   body timeout and the size bound, *before* the request takes one of
//!   the `max_concurrent_requests` slots, so a client trickling bodies
//!   holds no slot; then a JSON body must be one JSON-RPC message
//!   ([`crate::jsonrpc::decode`]), else it gets `400` with a JSON-RPC
//!   error (rmcp would answer `415`, which tells a client nothing).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use super::abuse_log::{self, Level};
use super::auth::ScopedCall;
use crate::jsonrpc::{self, Intake, Rejection};

/// The hosts a request may name: each `host` (any port) or `host:port`,
/// compared case-insensitively, IPv6 literals without their brackets.
#[derive(Debug, Clone)]
pub struct AllowedHosts(Vec<(String, Option<u16>)>);

impl AllowedHosts {
    /// The list from its configured spellings (`localhost`, `[::1]:8080`,
    /// `mcp.example.com:443`); a spelling that is not an authority is
    /// matched as a bare host name.
    pub fn new(hosts: &[String]) -> AllowedHosts {
        AllowedHosts(
            hosts
                .iter()
                .map(|host| match host.parse::<Authority>() {
                    Ok(authority) => (normal_host(authority.host()), authority.port_u16()),
                    Err(_) => (normal_host(host), None),
                })
                .collect(),
        )
    }

    fn allows(&self, authority: &Authority) -> bool {
        let host = normal_host(authority.host());
        self.0.iter().any(|(allowed, port)| {
            *allowed == host && port.is_none_or(|port| authority.port_u16() == Some(port))
        })
    }
}

fn normal_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Refuses a request whose `Host` header is missing, repeated, not a
/// plain authority or not an allowed host (`/healthz`: any plain one), or
/// whose absolute-form request-target names another authority.
pub async fn check_host(
    State(allowed): State<std::sync::Arc<AllowedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    let refusal = match host_problem(&request, &allowed) {
        None => return next.run(request).await,
        Some(refusal) => refusal,
    };
    abuse_log::note(Level::Info, "http_refused", refusal.reason());
    let response = (refusal.status(), refusal.body()).into_response();
    refused_before_body(request.headers(), response)
}

/// Why [`check_host`] refuses a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostRefusal {
    /// Missing, repeated or not a plain `host[:port]`.
    Invalid,
    /// A plain authority, but not an allowed host.
    NotAllowed,
    /// An absolute-form request-target naming another authority.
    ForeignTarget,
}

impl HostRefusal {
    fn reason(self) -> &'static str {
        match self {
            HostRefusal::Invalid => "invalid Host header",
            HostRefusal::NotAllowed => "Host header is not allowed",
            HostRefusal::ForeignTarget => "request-target names another host",
        }
    }

    /// The answer's body: for a foreign host, the words rmcp uses on
    /// `/mcp` (the troubleshooting guide quotes them).
    fn body(self) -> &'static str {
        match self {
            HostRefusal::Invalid => "invalid Host header\n",
            HostRefusal::NotAllowed => "Forbidden: Host header is not allowed\n",
            HostRefusal::ForeignTarget => {
                "request-target names another host than the Host header\n"
            }
        }
    }

    fn status(self) -> StatusCode {
        match self {
            HostRefusal::Invalid | HostRefusal::ForeignTarget => StatusCode::BAD_REQUEST,
            // As rmcp answers on `/mcp`: a client reaching the wrong server.
            HostRefusal::NotAllowed => StatusCode::FORBIDDEN,
        }
    }
}

fn host_problem(request: &Request, allowed: &AllowedHosts) -> Option<HostRefusal> {
    let Some(host) = one_plain_host(request.headers()) else {
        return Some(HostRefusal::Invalid);
    };
    if let Some(target) = request.uri().authority() {
        let same = normal_host(target.host()) == normal_host(host.host())
            && target.port_u16() == host.port_u16();
        if !same {
            return Some(HostRefusal::ForeignTarget);
        }
    }
    let probe = request.uri().path() == "/healthz";
    (!probe && !allowed.allows(&host)).then_some(HostRefusal::NotAllowed)
}

/// `refusal`, for a request refused before its body was read, marked so
/// that the client does not reuse the connection. hyper closes a
/// connection whose request body was left unread once the response is
/// out, without saying so: a client that sent the body a little after the
/// head (as most do) and then reused the connection for its next request
/// (as an OAuth client does after a 401) found it closed under it.
pub fn refused_before_body(request: &HeaderMap, mut refusal: Response) -> Response {
    let declares_body = request.contains_key(header::TRANSFER_ENCODING)
        || request
            .get(header::CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0");
    if declares_body {
        refusal
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    refusal
}

/// The one `Host` header, when there is exactly one and it is a plain
/// authority.
fn one_plain_host(headers: &HeaderMap) -> Option<Authority> {
    let mut hosts = headers.get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(host), None) => host
            .to_str()
            .ok()
            .filter(|host| is_plain_authority(host))?
            .parse()
            .ok(),
        _ => None,
    }
}

/// `host[:port]` as a request target's authority: a name or IPv4 address
/// of unreserved characters, or a bracketed IPv6 literal, and a decimal
/// port of at most 65535. No userinfo, path, space or empty part.
fn is_plain_authority(text: &str) -> bool {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some((literal, after)) = rest.split_once(']') else {
            return false;
        };
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return false,
            },
        };
        let literal_ok = !literal.is_empty()
            && literal
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
        if !literal_ok {
            return false;
        }
        (None, port)
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(text), None),
        }
    };
    let host_ok = host.is_none_or(|host| {
        !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    });
    let port_ok = port.is_none_or(|port| {
        !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| p <= 65_535)
    });
    host_ok && port_ok
}

/// The bounds [`read_message`] applies.
#[derive(Debug, Clone, Copy)]
pub struct MessageLimits {
    /// Time to receive the whole body after the header.
    pub body_timeout: Duration,
    /// Largest body accepted.
    pub max_bytes: usize,
}

/// Reads a `POST` body whole within its bounds and checks that a JSON body
/// is one JSON-RPC message; other requests pass untouched.
pub async fn read_message(
    State(limits): State<MessageLimits>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes =
        match tokio::time::timeout(limits.body_timeout, collect(body, limits.max_bytes)).await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(refusal)) => return refusal,
            Err(_) => {
                abuse_log::note(Level::Info, "http_refused", "body timeout");
                return (
                    StatusCode::REQUEST_TIMEOUT,
                    [(header::CONNECTION, HeaderValue::from_static("close"))],
                    "request body not received within the body timeout\n",
                )
                    .into_response();
            }
        };
    let mut parts = parts;
    if is_json(&parts.headers) {
        match jsonrpc::decode(&bytes) {
            Intake::Message(message) => {
                if let Some(call) = scoped_call(&message) {
                    parts.extensions.insert(call);
                }
            }
            Intake::Reject(rejection) | Intake::BrokenNotification(rejection) => {
                return rejected(&rejection);
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The method of a request (and the tool of a `tools/call`), for the
/// scope check; `None` for notifications and responses, which ask for
/// nothing.
fn scoped_call(message: &rmcp::model::ClientJsonRpcMessage) -> Option<ScopedCall> {
    use rmcp::model::{ClientRequest, JsonRpcMessage};
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    // By name, not by the typed variants: a request whose params rmcp
    // cannot type still names its method and is checked the same.
    let tool = match &request.request {
        ClientRequest::CallToolRequest(call) => Some(call.params.name.to_string()),
        _ => None,
    };
    Some(ScopedCall {
        method: request.request.method().to_owned(),
        tool,
    })
}

/// The body's bytes, or the response refusing it (too large, or broken
/// off by the client).
async fn collect(body: Body, max_bytes: usize) -> Result<Bytes, Response> {
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, HeaderValue::from_static("close"))],
            format!("request body larger than {max_bytes} bytes\n"),
        )
            .into_response()
    };
    let mut collected = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|_| (StatusCode::BAD_REQUEST, "request body broken off\n").into_response())?;
        if collected.len() + chunk.len() > max_bytes {
            return Err(too_large());
        }
        collected.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(collected))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// `400` with the JSON-RPC error as its body.
fn rejected(rejection: &Rejection) -> Response {
    tracing::info!(event = "jsonrpc_rejected", code = rejection.code);
    (
        StatusCode::BAD_REQUEST,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        rejection.to_json(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_authorities_pass_and_tricks_do_not() {
        for good in [
            "127.0.0.1",
            "127.0.0.1:8765",
            "localhost:0",
            "localhost:65535",
            "mcp.example.com",
            "[::1]",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert!(is_plain_authority(good), "{good}");
        }
        for bad in [
            "",
            "evil@127.0.0.1",
            "user:pass@localhost:8765",
            "127.0.0.1:65536",
            "127.0.0.1:99999",
            "127.0.0.1:",
            "127.0.0.1:+80",
            "127.0.0.1:080000",
            ":8080",
            "localhost/path",
            "local host",
            "[::1",
            "[::1]x",
            "[]:80",
            "[::1]:8080:1",
            "a:b:c",
        ] {
            assert!(!is_plain_authority(bad), "{bad:?}");
        }
    }

    #[test]
    fn exactly_one_host_header() {
        let mut headers = HeaderMap::new();
        assert!(one_plain_host(&headers).is_none());
        headers.append(header::HOST, HeaderValue::from_static("127.0.0.1:1"));
        assert!(one_plain_host(&headers).is_some());
        headers.append(header::HOST, HeaderValue::from_static("127.0.0.1:1"));
        assert!(one_plain_host(&headers).is_none());
    }

    #[test]
    fn hosts_match_by_name_and_by_port_when_one_is_listed() {
        let allowed = AllowedHosts::new(&[
            "localhost".to_owned(),
            "::1".to_owned(),
            "MCP.example.com:443".to_owned(),
        ]);
        let allows = |host: &str| allowed.allows(&host.parse().unwrap());
        for good in [
            "localhost",
            "LOCALHOST:8765",
            "[::1]:1",
            "mcp.example.com:443",
        ] {
            assert!(allows(good), "{good}");
        }
        for bad in [
            "evil.example",
            "localhost.evil.example",
            "mcp.example.com",
            "mcp.example.com:8443",
            "127.0.0.1",
        ] {
            assert!(!allows(bad), "{bad}");
        }
    }

    #[test]
    fn the_request_target_must_name_the_host_header_s_authority() {
        let allowed = AllowedHosts::new(&["127.0.0.1".to_owned()]);
        let problem = |target: &str, host: &str| {
            let request = Request::builder()
                .uri(target)
                .header(header::HOST, host)
                .body(Body::empty())
                .unwrap();
            host_problem(&request, &allowed)
        };
        assert_eq!(problem("/mcp", "127.0.0.1:8765"), None);
        assert_eq!(problem("http://127.0.0.1:8765/mcp", "127.0.0.1:8765"), None);
        assert_eq!(
            problem("http://evil.example/mcp", "127.0.0.1:8765"),
            Some(HostRefusal::ForeignTarget)
        );
        assert_eq!(
            problem("http://127.0.0.1:9/mcp", "127.0.0.1:8765"),
            Some(HostRefusal::ForeignTarget)
        );
        assert_eq!(
            problem("/register", "evil.example"),
            Some(HostRefusal::NotAllowed)
        );
        assert_eq!(problem("/healthz", "10.0.0.7:8765"), None);
        assert_eq!(
            problem("/healthz", "evil@10.0.0.7"),
            Some(HostRefusal::Invalid)
        );
    }
}
