//! A plain HTTP/1.1 keep-alive client over a blocking [`TcpStream`], for
//! measuring ServerFS's HTTP transport as a simple client sees it.
//!
//! It is deliberately what a hand-written client would be: each request is
//! written with one `write` (so the client's own Nagle algorithm never
//! holds part of a request back), the socket keeps the operating system's
//! defaults (no `TCP_NODELAY`, no `TCP_QUICKACK`, delayed ACKs on), and
//! one connection carries request after request. That is the client under
//! which a server that writes a response in several pieces without
//! `TCP_NODELAY` stalls for a delayed-ACK period (about 40 ms on Linux).
//!
//! Responses are read whole: `Content-Length` and `chunked` bodies are
//! supported (rmcp answers MCP requests with a chunked `text/event-stream`
//! that ends after the response message); anything else is an error. Used
//! by the HTTP tests of `serverfs` and by `serverfs-bench`, which start
//! the server with [`Served`] and speak MCP through [`Mcp`].
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! let mut connection = serverfs_http1::Connection::connect("127.0.0.1:8765".parse().unwrap())?;
//! let response = connection.request("GET", "/healthz", &[], b"")?;
//! assert_eq!(response.status, 200);
//! # Ok(()) }
//! ```

mod mcp;
mod served;

pub use mcp::Mcp;
pub use served::Served;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Longest status line or header line accepted.
const MAX_LINE_BYTES: u64 = 64 * 1024;
/// Largest response body accepted: far above any ServerFS page, small
/// enough that a broken length cannot exhaust memory.
const MAX_BODY_BYTES: usize = 256 << 20;
/// How long one response may take, so that a wedged server fails a test or
/// a benchmark instead of hanging it.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// One kept-alive connection.
pub struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    host: String,
}

/// A response read to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (chunked bodies decoded).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The payload of every `data:` line of a `text/event-stream` body, or
    /// the whole body for any other content type (a JSON response).
    pub fn messages(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.body);
        let is_sse = self
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !is_sse {
            return vec![text.into_owned()];
        }
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.trim_start().to_owned())
            .filter(|data| !data.is_empty())
            .collect()
    }
}

impl Connection {
    /// Connects to `address`; the connection keeps the system's socket
    /// defaults.
    ///
    /// # Errors
    ///
    /// The connect error.
    pub fn connect(address: SocketAddr) -> io::Result<Connection> {
        Connection::connect_waiting(address, READ_TIMEOUT)
    }

    /// Like [`Connection::connect`], waiting at most `timeout` for each
    /// response (a client that gives up on a server that does not answer).
    ///
    /// # Errors
    ///
    /// The connect error.
    pub fn connect_waiting(address: SocketAddr, timeout: Duration) -> io::Result<Connection> {
        let writer = TcpStream::connect_timeout(&address, timeout)?;
        writer.set_read_timeout(Some(timeout))?;
        let reader = BufReader::new(writer.try_clone()?);
        Ok(Connection {
            writer,
            reader,
            host: address.to_string(),
        })
    }

    /// Sends one request (one `write`, with `Host`, `Content-Length` and
    /// `Connection: keep-alive` added) and reads its response to the end.
    ///
    /// # Errors
    ///
    /// I/O errors, a timeout, the server closing the connection, or a
    /// response this client cannot read (`InvalidData`).
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Response> {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let mut frame = head.into_bytes();
        frame.extend_from_slice(body);
        self.writer.write_all(&frame)?;
        self.read_response()
    }

    fn read_response(&mut self) -> io::Result<Response> {
        let status_line = self.line()?;
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| invalid(format!("bad status line {status_line:?}")))?;
        let mut headers = Vec::new();
        loop {
            let line = self.line()?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| invalid(format!("bad header line {line:?}")))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let chunked = find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let length = find("content-length").map(str::parse::<usize>);
        let body = match (chunked, length) {
            (true, _) => self.chunked_body()?,
            (false, Some(Ok(length))) => self.exact(length)?,
            (false, Some(Err(_))) => return Err(invalid("bad Content-Length".to_owned())),
            // 1xx, 204 and 304 carry no body; anything else without a
            // length would be delimited by closing the connection, which
            // a keep-alive server never does.
            (false, None) if status < 200 || status == 204 || status == 304 => Vec::new(),
            (false, None) => return Err(invalid("response without a length".to_owned())),
        };
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    /// One CRLF-terminated line, without its terminator.
    fn line(&mut self) -> io::Result<String> {
        let mut line = Vec::new();
        let read = (&mut self.reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed by the server",
            ));
        }
        if !line.ends_with(b"\r\n") {
            return Err(invalid("line without CRLF, or too long".to_owned()));
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).map_err(|_| invalid("line is not UTF-8".to_owned()))
    }

    fn exact(&mut self, length: usize) -> io::Result<Vec<u8>> {
        if length > MAX_BODY_BYTES {
            return Err(invalid(format!("body of {length} bytes is too large")));
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok(body)
    }

    fn chunked_body(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let size_line = self.line()?;
            // Chunk extensions (`;name=value`) are allowed and ignored.
            let size = size_line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| invalid(format!("bad chunk size {size_line:?}")))?;
            if size == 0 {
                // Trailers, if any, end with an empty line.
                while !self.line()?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY_BYTES {
                return Err(invalid("chunked body is too large".to_owned()));
            }
            body.extend_from_slice(&self.exact(size)?);
            if !self.line()?.is_empty() {
                return Err(invalid("chunk without its CRLF".to_owned()));
            }
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::Connection;

    /// Serves `replies` one per request on one connection, then closes.
    fn server(replies: Vec<&'static [u8]>) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            for reply in replies {
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") {
                    stream.read_exact(&mut byte).unwrap();
                    request.push(byte[0]);
                }
                stream.write_all(reply).unwrap();
            }
        });
        address
    }

    #[test]
    fn length_chunked_and_sse_bodies_on_one_connection() {
        let address = server(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
              7\r\ndata: {\r\n4;x=y\r\n}\n\n\n\r\n0\r\n\r\n",
            b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
        ]);
        let mut c = Connection::connect(address).unwrap();
        let first = c.request("GET", "/healthz", &[], b"").unwrap();
        assert_eq!((first.status, first.body.as_slice()), (200, &b"ok\n"[..]));
        assert_eq!(first.messages(), vec!["ok\n".to_owned()]);
        let second = c.request("POST", "/mcp", &[("a", "b")], b"{}").unwrap();
        assert_eq!(second.header("Content-Type"), Some("text/event-stream"));
        assert_eq!(second.messages(), vec!["{}".to_owned()]);
        let third = c.request("POST", "/mcp", &[], b"{}").unwrap();
        assert_eq!((third.status, third.body.len()), (202, 0));
    }

    #[test]
    fn malformed_responses_are_errors() {
        for reply in [
            &b"HTTP/1.1 200 OK\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"SMTP ready\r\n",
        ] {
            let address = server(vec![reply]);
            let mut c = Connection::connect(address).unwrap();
            let err = c.request("GET", "/", &[], b"").unwrap_err();
            assert!(
                matches!(
                    err.kind(),
                    std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
                ),
                "{reply:?}: {err}"
            );
        }
    }
}
