//! Just enough HTTP/1.1 for the mock model: one request per connection,
//! bodies by `Content-Length` or chunked, responses that end by closing.
//!
//! Every response says `connection: close` and the server closes after it:
//! an SSE stream has no length, and a client told keep-alive would wait for
//! more forever (spec-adapters.md §6.1, measured with curl).

use std::io::{self, BufRead, Read, Write};

use serde_json::Value;

/// Bound on the request line plus headers. Agent CLIs send a few KiB.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Bound on a request body. Agent requests carry the whole conversation and
/// tool schemas (Codex's first request is ~100 KiB), so leave ample room
/// while still refusing a runaway client.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// A request as read off the wire.
pub(crate) struct HttpRequest {
    pub(crate) method: String,
    /// The target's path, without the query.
    pub(crate) path: String,
    /// The query string after `?`, if any.
    pub(crate) query: Option<String>,
    /// Names lower-cased (HTTP names are case-insensitive), in arrival order.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// The first header called `name` (lower case).
pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Why a request could not be read; answered with `status` when the
/// connection still works.
#[derive(Debug)]
pub(crate) struct BadRequest {
    pub(crate) status: u16,
    pub(crate) message: String,
}

impl BadRequest {
    fn new(status: u16, message: impl Into<String>) -> BadRequest {
        BadRequest {
            status,
            message: message.into(),
        }
    }
}

impl From<io::Error> for BadRequest {
    fn from(e: io::Error) -> BadRequest {
        BadRequest::new(400, format!("reading the request: {e}"))
    }
}

/// Reads one request. `Ok(None)` when the peer closed before sending a
/// byte (the server's own shutdown wake-up, or a port probe).
///
/// When the client sent `expect: 100-continue`, the interim `100 Continue`
/// is written to `reader`'s stream before the body is read; clients such as
/// curl otherwise stall a second before sending large bodies.
pub(crate) fn read_request<S: Read + Write>(
    reader: &mut io::BufReader<S>,
) -> Result<Option<HttpRequest>, BadRequest> {
    let mut head_budget = MAX_HEAD_BYTES;
    let Some(request_line) = read_line(reader, &mut head_budget)? else {
        return Ok(None);
    };
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadRequest::new(400, "malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(BadRequest::new(505, "only HTTP/1.x is spoken here"));
    }
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_owned(), Some(query.to_owned())),
        None => (target.to_owned(), None),
    };

    let mut headers = Vec::new();
    loop {
        let line = read_line(reader, &mut head_budget)?
            .ok_or_else(|| BadRequest::new(400, "connection closed inside the headers"))?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(BadRequest::new(
                400,
                format!("malformed header line {line:?}"),
            ));
        };
        // A name with whitespace (or an obsolete folded line) is refused by
        // RFC 9112 §5.1 too; accepting it could misread the body framing.
        if name.is_empty() || name.contains([' ', '\t']) {
            return Err(BadRequest::new(
                400,
                format!("malformed header name {name:?}"),
            ));
        }
        headers.push((
            name.to_ascii_lowercase(),
            value.trim_matches([' ', '\t']).to_owned(),
        ));
    }

    let mut request = HttpRequest {
        method: method.to_owned(),
        path,
        query,
        headers,
        body: Vec::new(),
    };
    if request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        let stream = reader.get_mut();
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        stream.flush()?;
    }
    // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length.
    if let Some(coding) = request.header("transfer-encoding") {
        if !coding.eq_ignore_ascii_case("chunked") {
            return Err(BadRequest::new(
                501,
                format!("unsupported transfer-encoding {coding:?}"),
            ));
        }
        request.body = read_chunked(reader)?;
    } else if let Some(length) = request.header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| BadRequest::new(400, format!("bad content-length {length:?}")))?;
        if length > MAX_BODY_BYTES {
            return Err(BadRequest::new(413, "request body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        request.body = body;
    }
    Ok(Some(request))
}

/// Decodes a chunked body (RFC 9112 §7.1): hex size lines (extensions after
/// `;` ignored), data, CRLF, a zero-size chunk, then trailers until a blank
/// line (read and dropped).
fn read_chunked<R: BufRead>(reader: &mut R) -> Result<Vec<u8>, BadRequest> {
    let mut body = Vec::new();
    // Size and trailer lines are framing, not payload: bound them like a head.
    let mut line_budget = MAX_HEAD_BYTES;
    loop {
        let line = read_line(reader, &mut line_budget)?
            .ok_or_else(|| BadRequest::new(400, "connection closed inside a chunked body"))?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| BadRequest::new(400, format!("bad chunk size {size:?}")))?;
        if size == 0 {
            while !read_line(reader, &mut line_budget)?
                .ok_or_else(|| BadRequest::new(400, "connection closed inside the trailers"))?
                .is_empty()
            {}
            return Ok(body);
        }
        if size > MAX_BODY_BYTES - body.len() {
            return Err(BadRequest::new(413, "request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let end = read_line(reader, &mut line_budget)?;
        if end.as_deref() != Some("") {
            return Err(BadRequest::new(400, "chunk data longer than its size"));
        }
    }
}

/// One line without its `\r\n` (or bare `\n`), charged to `budget`.
/// `Ok(None)` at end of stream before any byte.
fn read_line<R: BufRead>(reader: &mut R, budget: &mut usize) -> Result<Option<String>, BadRequest> {
    let mut line = Vec::new();
    // One byte over the budget tells "exactly full" from "too long".
    let limit = u64::try_from(*budget).unwrap_or(u64::MAX).saturating_add(1);
    let n = reader.take(limit).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if n > *budget {
        return Err(BadRequest::new(431, "request head too large"));
    }
    *budget -= n;
    if line.pop() != Some(b'\n') {
        return Err(BadRequest::new(400, "connection closed inside a line"));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

/// One server-sent event: `event: <name>` and one `data:` line of JSON.
pub(crate) struct Event {
    pub(crate) name: &'static str,
    pub(crate) data: Value,
}

/// Writes a complete `200 text/event-stream` response. The caller closes
/// the connection afterwards, which is what ends the stream for the client.
pub(crate) fn write_sse<W: Write>(out: &mut W, events: &[Event]) -> io::Result<()> {
    let mut text = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    );
    for event in events {
        // serde_json never emits a raw newline in compact form, so the data
        // is exactly one `data:` line.
        text.push_str(&format!("event: {}\ndata: {}\n\n", event.name, event.data));
    }
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes a complete `200 text/event-stream` response of `data:` lines
/// only (the Chat Completions shape), ended by `data: [DONE]`. The caller
/// closes the connection afterwards.
pub(crate) fn write_data_sse<W: Write>(out: &mut W, data: &[Value]) -> io::Result<()> {
    let mut text = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    );
    for item in data {
        text.push_str(&format!("data: {item}\n\n"));
    }
    text.push_str("data: [DONE]\n\n");
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes a complete JSON response with its length.
pub(crate) fn write_json<W: Write>(out: &mut W, status: u16, body: &Value) -> io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

/// The reason phrase for the statuses this server sends (clients ignore it,
/// but an empty one reads oddly in logs).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        529 => "Overloaded",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::io::{BufReader, Cursor};

    /// An in-memory duplex stream: reads the request, collects writes.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn read(raw: &[u8]) -> (Result<Option<HttpRequest>, BadRequest>, Vec<u8>) {
        let mut reader = BufReader::new(Duplex {
            input: Cursor::new(raw.to_vec()),
            output: Vec::new(),
        });
        let result = read_request(&mut reader);
        (result, reader.into_inner().output)
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let raw = b"POST /v1/x?beta=true HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
                    3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
        let (request, _) = read(raw);
        let request = request.unwrap().unwrap();
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/x");
        assert_eq!(request.query.as_deref(), Some("beta=true"));
        assert_eq!(request.headers[0], ("host".to_owned(), "a".to_owned()));
        assert_eq!(request.body, b"abc0123456789");
    }

    #[test]
    fn expect_continue_gets_an_interim_response() {
        let raw = b"POST / HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n{}";
        let (request, written) = read(raw);
        assert_eq!(request.unwrap().unwrap().body, b"{}");
        assert_eq!(written, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn malformed_requests_are_refused_with_a_status() {
        let status = |raw: &[u8]| read(raw).0.err().map(|e| e.status);
        assert_eq!(status(b"GET /\r\n\r\n"), Some(400));
        assert_eq!(status(b"GET / HTTP/2\r\n\r\n"), Some(505));
        assert_eq!(status(b"GET / HTTP/1.1\r\nno colon\r\n\r\n"), Some(400));
        assert_eq!(status(b"GET / HTTP/1.1\r\n folded: x\r\n\r\n"), Some(400));
        assert_eq!(
            status(b"POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n"),
            Some(501)
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nab"),
            Some(400)
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"),
            Some(400)
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n"),
            Some(400)
        );
        let huge = format!(
            "GET / HTTP/1.1\r\nx: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert_eq!(status(huge.as_bytes()), Some(431));
        assert!(matches!(read(b"").0, Ok(None)));
    }
}
