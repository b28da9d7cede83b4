//! Newline-delimited messages over a provider's stdio: the framing of
//! Codex's stdio App Server, the stream-json control protocol and ACP.
//!
//! Reading keeps every line under a cap — a line over it ends the stream
//! rather than growing a buffer without limit — and hands each non-blank
//! line, trimmed, to the caller. Writing sends queued messages one per
//! line, in order, and stops at the first failed write (the provider went
//! away).

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The line cap of the newline-framed provider protocols (stream-json,
/// ACP): the largest line accepted from a provider. Their lines can be
/// large by design — an `init` message listing every tool, skill and MCP
/// server; a tool call or result carrying a whole file — so the cap is
/// generous, and only bounds memory: a longer line ends the stream rather
/// than growing a buffer without limit. (Codex's App Server has its own,
/// larger cap, shared with its WebSocket transport.)
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Why [`read_lines`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinesEnded {
    /// End of file, or a read error: the provider closed its output.
    Closed,
    /// A line longer than the cap.
    Oversized,
    /// The caller asked to stop.
    Stopped,
}

/// Reads `source` line by line, calling `on_line` with each non-blank
/// line (trimmed; invalid UTF-8 replaced, so a stray binary line stays one
/// skippable line). `on_line` returns `false` to stop reading.
pub async fn read_lines<R>(
    source: R,
    max_line_bytes: usize,
    mut on_line: impl FnMut(&str) -> bool,
) -> LinesEnded
where
    R: AsyncRead + Unpin,
{
    let mut reader = BufReader::new(source);
    let mut line = Vec::new();
    let limit = u64::try_from(max_line_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    loop {
        line.clear();
        let mut limited = AsyncReadExt::take(&mut reader, limit);
        match limited.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return LinesEnded::Closed,
            Ok(_) if line.len() > max_line_bytes => return LinesEnded::Oversized,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if !on_line(text) {
            return LinesEnded::Stopped;
        }
    }
}

/// Writes each queued message as one line until the queue closes (every
/// sender dropped) or a write fails; then the sink is dropped, which
/// closes the provider's stdin.
pub async fn write_lines<W>(mut sink: W, mut queue: mpsc::UnboundedReceiver<String>)
where
    W: AsyncWrite + Unpin,
{
    while let Some(mut message) = queue.recv().await {
        message.push('\n');
        if sink.write_all(message.as_bytes()).await.is_err() || sink.flush().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_trimmed_blank_ones_skipped_and_the_cap_ends_the_stream() {
        let input: &[u8] = b"  one  \n\n\xff two\nthree-is-too-long\nfour\n";
        let mut seen = Vec::new();
        let ended = read_lines(input, 8, |line| {
            seen.push(line.to_owned());
            true
        })
        .await;
        assert_eq!(ended, LinesEnded::Oversized);
        assert_eq!(seen, ["one", "\u{fffd} two"]);

        let mut first = None;
        let ended = read_lines(&b"a\nb\n"[..], 8, |line| {
            first = Some(line.to_owned());
            false
        })
        .await;
        assert_eq!((ended, first.as_deref()), (LinesEnded::Stopped, Some("a")));
        assert_eq!(
            read_lines(&b"last"[..], 8, |_| true).await,
            LinesEnded::Closed
        );
    }

    #[tokio::test]
    async fn queued_messages_are_written_one_per_line() {
        let (queue, queued) = mpsc::unbounded_channel();
        queue.send("{\"a\":1}".to_owned()).unwrap();
        queue.send("{\"b\":2}".to_owned()).unwrap();
        drop(queue);
        let mut out = Vec::new();
        write_lines(&mut out, queued).await;
        assert_eq!(out, b"{\"a\":1}\n{\"b\":2}\n");
    }
}
