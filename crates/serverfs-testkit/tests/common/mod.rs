//! A minimal HTTP/1.1 client and an SSE parser written from the WHATWG
//! HTML "server-sent events" algorithm, kept independent of the server's
//! own code so each checks the other.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// Bounds every read: a server that forgets to close an SSE stream fails
/// the test instead of hanging it, which is exactly the bug to catch.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A complete response, read until the server closed the connection.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, after checking it was sent as JSON.
    pub fn json(&self) -> Value {
        assert_eq!(self.header("content-type"), Some("application/json"));
        serde_json::from_str(&self.body).unwrap()
    }

    /// The body as SSE events, after checking the response is a
    /// well-formed, closed event stream.
    pub fn events(&self) -> Vec<SseEvent> {
        assert_eq!(self.status, 200, "body: {}", self.body);
        assert_eq!(self.header("content-type"), Some("text/event-stream"));
        assert_eq!(self.header("connection"), Some("close"));
        // Neither a length nor chunking: the stream ends at close.
        assert_eq!(self.header("content-length"), None);
        assert_eq!(self.header("transfer-encoding"), None);
        let (events, pending) = parse_sse(&self.body);
        assert!(!pending, "an event is not terminated by a blank line");
        events
    }
}

/// Sends `raw` bytes and reads the response to end of stream.
pub fn send_raw(addr: SocketAddr, raw: &[u8]) -> HttpResponse {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    conn.write_all(raw).unwrap();
    let mut bytes = Vec::new();
    conn.read_to_end(&mut bytes)
        .expect("the server must close the connection after its response");
    parse_response(&String::from_utf8(bytes).unwrap())
}

pub fn post(addr: SocketAddr, path: &str, body: &Value) -> HttpResponse {
    let body = body.to_string();
    let raw = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         authorization: Bearer dummy\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    send_raw(addr, raw.as_bytes())
}

pub fn get(addr: SocketAddr, path: &str) -> HttpResponse {
    send_raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes(),
    )
}

fn parse_response(mut text: &str) -> HttpResponse {
    loop {
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let mut parts = status_line.splitn(3, ' ');
        assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
        let status: u16 = parts.next().unwrap().parse().unwrap();
        if (100..200).contains(&status) {
            // An interim response; the real one follows.
            text = body;
            continue;
        }
        let headers: Vec<(String, String)> = lines
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        let response = HttpResponse {
            status,
            headers,
            body: body.to_owned(),
        };
        if let Some(length) = response.header("content-length") {
            assert_eq!(length.parse::<usize>().unwrap(), response.body.len());
        }
        return response;
    }
}

/// One dispatched event.
#[derive(Debug, PartialEq)]
pub struct SseEvent {
    /// The event type (`message` when the block had no `event:` field).
    pub event: String,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| {
            panic!("event {} data is not JSON ({e}): {}", self.event, self.data)
        })
    }
}

/// Parses an event stream as a browser's `EventSource` does (WHATWG HTML,
/// "Interpreting an event stream"): lines end in CRLF, LF or CR; a blank
/// line dispatches; `:` starts a comment; one space after the colon is
/// dropped; `data` lines accumulate with `\n`. Returns the events and
/// whether data was pending at the end, which a client silently discards.
pub fn parse_sse(stream: &str) -> (Vec<SseEvent>, bool) {
    let stream = stream.strip_prefix('\u{feff}').unwrap_or(stream);
    let mut events = Vec::new();
    let mut event_type = String::new();
    let mut data = String::new();
    let normalized = stream.replace("\r\n", "\n").replace('\r', "\n");
    let mut lines: Vec<&str> = normalized.split('\n').collect();
    // The text after the last terminator is not a complete line.
    let unterminated = lines.pop().unwrap_or_default();
    for line in lines {
        if line.is_empty() {
            if !data.is_empty() {
                data.pop();
                events.push(SseEvent {
                    event: if event_type.is_empty() {
                        "message".to_owned()
                    } else {
                        std::mem::take(&mut event_type)
                    },
                    data: std::mem::take(&mut data),
                });
            }
            event_type.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => event_type = value.to_owned(),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            _ => {}
        }
    }
    let pending = !data.is_empty() || !event_type.is_empty() || !unterminated.is_empty();
    (events, pending)
}
