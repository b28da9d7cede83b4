//! The stdio transport: newline-delimited JSON, one message per line
//! (`codex app-server --listen stdio://`).

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::time::sleep_until;

use super::{MockState, Output, Session};

/// Why a stdio session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The client closed its end.
    Eof,
    /// A scenario asked to drop the connection.
    Closed,
}

/// Serves one session over `reader`/`writer` until EOF or a `drop`.
pub(crate) async fn serve_lines<R, W>(
    reader: R,
    mut writer: W,
    state: MockState,
) -> io::Result<Ended>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(reader);
    let mut session = Session::new(state);
    // Survives a cancelled read: `read_until` appends what it got so far,
    // and the next call continues the same line.
    let mut line = Vec::new();
    loop {
        let deadline = session.next_deadline();
        let outputs = tokio::select! {
            read = reader.read_until(b'\n', &mut line) => {
                let eof = read? == 0;
                if eof && line.is_empty() {
                    return Ok(Ended::Eof);
                }
                let outputs = if line.iter().all(u8::is_ascii_whitespace) {
                    Vec::new()
                } else {
                    session.on_text(&line)
                };
                line.clear();
                outputs
            }
            () = sleep_until(deadline.unwrap_or_else(std::time::Instant::now).into()),
                if deadline.is_some() =>
            {
                session.on_deadline(std::time::Instant::now())
            }
        };
        for output in outputs {
            match output {
                Output::Send(msg) => {
                    let mut bytes = msg.to_string().into_bytes();
                    bytes.push(b'\n');
                    writer.write_all(&bytes).await?;
                }
                Output::Raw(text) => {
                    let mut bytes = text.into_bytes();
                    bytes.push(b'\n');
                    writer.write_all(&bytes).await?;
                }
                Output::Close => {
                    writer.flush().await?;
                    return Ok(Ended::Closed);
                }
            }
        }
        writer.flush().await?;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::{Ended, serve_lines};
    use crate::mock_codex::MockState;

    /// The engine behind the binary, over an in-memory pipe: a partial
    /// line split across writes is one message, and a garbage line gets a
    /// parse error instead of ending the session.
    #[tokio::test]
    async fn lines_split_across_writes_and_garbage() {
        let (client, server) = tokio::io::duplex(1024);
        let (server_read, server_write) = tokio::io::split(server);
        let task = tokio::spawn(serve_lines(
            server_read,
            server_write,
            MockState::new("/home"),
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();

        client_write.write_all(b"not json\n").await.unwrap();
        let reply: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], json!(-32700));

        client_write
            .write_all(br#"{"id":1,"method":"model/"#)
            .await
            .unwrap();
        client_write.write_all(b"list\"}\n").await.unwrap();
        let reply: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(
            reply,
            json!({"id": 1, "error": {"code": -32600, "message": "Not initialized"}})
        );

        // Shutting down the write half closes the pipe's direction; merely
        // dropping a split half would keep the stream alive.
        client_write.shutdown().await.unwrap();
        assert_eq!(task.await.unwrap().unwrap(), Ended::Eof);
    }
}
