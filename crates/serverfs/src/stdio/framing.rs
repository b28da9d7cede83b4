//! One JSON-RPC message per line, in both directions.
//!
//! rmcp's own line codec drops a line it cannot decode without a reply, so
//! a client that sent one waits for ever. Here every incoming line goes
//! through [`crate::jsonrpc::decode`]: a message reaches rmcp, a broken
//! request is answered on the spot (`-32700` / `-32600`), and the
//! transport keeps reading. A line longer than the bound is skipped to its
//! newline without being held in memory, and answered likewise. Both the
//! answers and rmcp's own messages go out through one lock, so lines never
//! interleave.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::jsonrpc::{self, INVALID_REQUEST, Intake, Rejection};

/// The server side of a line-framed JSON-RPC connection.
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// Longest line accepted, in bytes (newline excluded).
    max_line_bytes: usize,
}

impl<R, W> LineTransport<R, W> {
    /// A transport reading lines of at most `max_line_bytes` from `reader`
    /// and writing to `writer`.
    pub fn new(reader: R, writer: W, max_line_bytes: usize) -> LineTransport<R, W>
    where
        R: AsyncRead,
    {
        LineTransport {
            reader: BufReader::new(reader),
            writer: Arc::new(Mutex::new(writer)),
            max_line_bytes,
        }
    }
}

/// One line read.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// Its bytes, without the newline (or a trailing `\r`).
    Whole(Vec<u8>),
    /// It was longer than the bound; its bytes were skipped.
    TooLong,
}

/// Reads the next line; `None` at the end of input. A last line without a
/// newline still counts.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    max_bytes: usize,
) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut seen_any = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(seen_any.then(|| finish(line, too_long)));
        }
        seen_any = true;
        let (chunk, end) = match buffer.iter().position(|b| *b == b'\n') {
            Some(newline) => (&buffer[..newline], Some(newline + 1)),
            None => (buffer, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max_bytes {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = end.unwrap_or(chunk.len());
        reader.consume(consumed);
        if end.is_some() {
            return Ok(Some(finish(line, too_long)));
        }
    }
}

fn finish(mut line: Vec<u8>, too_long: bool) -> Line {
    if too_long {
        return Line::TooLong;
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Line::Whole(line)
}

/// Writes `line` and a newline, whole, under the lock, and flushes.
async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, mut line: Vec<u8>) -> io::Result<()> {
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            write_line(&writer, line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // A read error ends the connection like the end of input does.
            let rejection = match read_line(&mut self.reader, self.max_line_bytes).await {
                Ok(Some(Line::Whole(bytes))) => {
                    if bytes.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match jsonrpc::decode(&bytes) {
                        Intake::Message(message) => return Some(*message),
                        Intake::Reject(rejection) => rejection,
                        Intake::BrokenNotification(_) => continue,
                    }
                }
                Ok(Some(Line::TooLong)) => Rejection {
                    code: INVALID_REQUEST,
                    message: format!(
                        "Invalid Request: a message longer than {} bytes",
                        self.max_line_bytes
                    ),
                    id: Value::Null,
                },
                Ok(None) | Err(_) => return None,
            };
            tracing::info!(event = "jsonrpc_rejected", code = rejection.code);
            if write_line(&self.writer, rejection.to_json()).await.is_err() {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.writer.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        while let Some(line) = read_line(&mut reader, max).await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_skipped_whole() {
        let whole = |s: &str| Line::Whole(s.as_bytes().to_vec());
        assert_eq!(
            lines(b"ab\r\n\ncdefgh\nxyz\nlast", 5).await,
            [
                whole("ab"),
                whole(""),
                Line::TooLong,
                whole("xyz"),
                whole("last")
            ]
        );
        assert_eq!(lines(b"", 5).await, []);
        assert_eq!(
            lines(b"12345\n123456", 5).await,
            [whole("12345"), Line::TooLong]
        );
    }
}
