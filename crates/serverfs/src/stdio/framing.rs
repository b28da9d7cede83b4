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
//!
//! The reading runs in a task of its own that hands decoded messages over
//! a channel. rmcp drops its `receive()` future whenever another event of
//! its serve loop wins the race (a response finished sending), so anything
//! `receive()` had half done would be lost: a line partly consumed, a
//! rejection logged but not yet written. A channel receive loses nothing
//! when dropped; the reading task is never dropped half way.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tokio_util::task::AbortOnDropHandle;

use crate::jsonrpc::{self, INVALID_REQUEST, Intake, Rejection};

/// The first allocation of an answer's line: a default page of a listing
/// or of a file fits.
const ANSWER_BUFFER_BYTES: usize = 16 * 1024;

/// The server side of a line-framed JSON-RPC connection.
pub struct LineTransport<W> {
    /// Messages decoded by the reading task, in order; closed at the end
    /// of input.
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    writer: Arc<Mutex<W>>,
    /// Stops the reading task when the transport goes away.
    _reading: AbortOnDropHandle<()>,
}

impl<W> LineTransport<W>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading lines of at most `max_line_bytes` from `reader`
    /// and writing to `writer`. Must be called inside the runtime: the
    /// reading starts at once, as a task.
    pub fn new<R>(reader: R, writer: W, max_line_bytes: usize) -> LineTransport<W>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let writer = Arc::new(Mutex::new(writer));
        // One message in hand at a time: a client that floods the pipe is
        // held back by the pipe, not buffered here.
        let (sender, incoming) = mpsc::channel(1);
        let reading = tokio::spawn(read_messages(
            BufReader::new(reader),
            writer.clone(),
            max_line_bytes,
            sender,
        ));
        LineTransport {
            incoming,
            writer,
            _reading: AbortOnDropHandle::new(reading),
        }
    }
}

/// Reads lines until the end of input (or a read error, which ends the
/// connection the same way), passing messages on and answering broken ones.
async fn read_messages<R, W>(
    mut reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    max_line_bytes: usize,
    messages: mpsc::Sender<ClientJsonRpcMessage>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let rejection = match read_line(&mut reader, max_line_bytes).await {
            Ok(Some(Line::Whole(bytes))) => {
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match jsonrpc::decode(&bytes) {
                    Intake::Message(message) => {
                        if messages.send(*message).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Intake::Reject(rejection) => rejection,
                    Intake::BrokenNotification(_) => continue,
                }
            }
            Ok(Some(Line::TooLong)) => Rejection {
                code: INVALID_REQUEST,
                message: format!("Invalid Request: a message longer than {max_line_bytes} bytes"),
                id: Value::Null,
            },
            Ok(None) | Err(_) => return,
        };
        tracing::info!(event = "jsonrpc_rejected", code = rejection.code);
        if write_line(&writer, rejection.to_json()).await.is_err() {
            return;
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

impl<W> Transport<RoleServer> for LineTransport<W>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            // Sized for a typical answer up front: growing from serde_json's
            // 128 bytes took seven reallocations for a listing's 9 KB answer.
            let mut line = Vec::with_capacity(ANSWER_BUFFER_BYTES);
            serde_json::to_writer(&mut line, &item).map_err(io::Error::other)?;
            write_line(&writer, line).await
        }
    }

    /// Cancel-safe: a message is either returned or still in the channel.
    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.writer.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::model::JsonRpcMessage;
    use tokio::io::{AsyncReadExt, duplex};
    use tokio::time::timeout;

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

    /// rmcp drops `receive()` whenever another event wins its select; a
    /// line that arrives in pieces across such drops, and a rejection
    /// answered while nobody waits, must both survive.
    #[tokio::test]
    async fn a_dropped_receive_loses_no_line_and_no_answer() {
        let (mut client_in, server_in) = duplex(64);
        let (server_out, mut client_out) = duplex(4096);
        let mut transport = LineTransport::new(server_in, server_out, 1024);

        client_in.write_all(b"null\n").await.unwrap();
        let ping = br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
        let (head, tail) = ping.split_at(10);
        client_in.write_all(head).await.unwrap();
        for _ in 0..3 {
            let dropped = timeout(Duration::from_millis(20), transport.receive()).await;
            assert!(dropped.is_err(), "nothing whole arrived yet");
        }
        client_in.write_all(tail).await.unwrap();
        client_in.write_all(b"\n").await.unwrap();

        let message = timeout(Duration::from_secs(5), transport.receive())
            .await
            .expect("the ping arrives whole")
            .expect("input is still open");
        let JsonRpcMessage::Request(request) = message else {
            panic!("not a request: {message:?}");
        };
        assert_eq!(request.id.to_string(), "5");

        let mut answer = vec![0; 256];
        let read = timeout(Duration::from_secs(5), client_out.read(&mut answer))
            .await
            .expect("the rejection was written")
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer[..read]).unwrap();
        assert_eq!(answer["error"]["code"], INVALID_REQUEST, "{answer}");

        drop(client_in);
        assert!(transport.receive().await.is_none(), "end of input ends it");
    }
}
