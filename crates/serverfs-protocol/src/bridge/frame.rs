//! Newline-delimited JSON framing (spec-agent-bridge.md §2.3).
//!
//! One frame is one UTF-8 JSON object followed by `\n`. Requests and
//! responses travel strictly in order on one connection, and the Bridge never
//! speaks first.
//!
//! # The limit
//!
//! [`MAX_FRAME_BYTES`] bounds a whole line **including its terminating
//! `\n`**, as the spec says for requests and as the reference measures
//! responses: a line of exactly 1 MiB (1,048,575 bytes of JSON plus the
//! newline) is accepted, one byte more is refused. The same bound applies in
//! both directions.
//!
//! # Carriage returns and empty lines
//!
//! Only `\n` ends a frame. A `\r` before it stays in the frame and counts
//! toward the limit; JSON treats it as trailing whitespace, so a CRLF
//! request decodes like an LF one. Empty lines are not skipped: each is a
//! frame, which the envelope decoder answers with `INVALID_REQUEST` (the
//! connection stays open), as the reference Bridge does.
//!
//! # Blocking and async use
//!
//! [`FrameDecoder`] does no I/O: feed it whatever a `read` returned, then
//! drain it. The same value serves a blocking socket loop or an async task.

use thiserror::Error;

/// The longest frame, in bytes, counting the terminating `\n` (1 MiB).
pub const MAX_FRAME_BYTES: usize = 1_048_576;

/// A line longer than the frame limit.
///
/// On the Bridge side this is `REQUEST_TOO_LARGE` (answered with
/// `request_id: null`, then the connection is closed); on the client side
/// it is a protocol failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("frame exceeds {limit} bytes")]
pub struct FrameTooLarge {
    /// The limit that was exceeded, in bytes including the newline.
    pub limit: usize,
}

/// Splits a byte stream into frames without ever holding more than the
/// limit plus one chunk.
///
/// ```
/// use serverfs_protocol::bridge::FrameDecoder;
///
/// let mut frames = FrameDecoder::new();
/// frames.push(b"{\"a\":1}\n{\"b\"");
/// assert_eq!(frames.next_frame(), Ok(Some(b"{\"a\":1}".to_vec())));
/// assert_eq!(frames.next_frame(), Ok(None)); // waits for the rest
/// frames.push(b":2}\n");
/// assert_eq!(frames.next_frame(), Ok(Some(b"{\"b\":2}".to_vec())));
/// ```
///
/// # Memory
///
/// After each [`push`](FrameDecoder::push), call
/// [`next_frame`](FrameDecoder::next_frame) until it returns `Ok(None)`.
/// Used that way the decoder holds at most `limit - 1` bytes of an
/// unfinished line plus the chunk just pushed: an unfinished line that
/// reaches the limit is refused at once, without waiting for its newline.
///
/// # Errors
///
/// Once a line is found too large the decoder is spent: it frees its buffer,
/// ignores further input and keeps returning [`FrameTooLarge`], since the
/// stream can no longer be split reliably and the connection must close.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Start of the first byte not yet returned.
    start: usize,
    /// `buf[start..scanned]` is known to hold no newline.
    scanned: usize,
    limit: usize,
    ended: bool,
    failed: bool,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new()
    }
}

impl FrameDecoder {
    /// A decoder with the protocol limit, [`MAX_FRAME_BYTES`].
    pub fn new() -> FrameDecoder {
        FrameDecoder::with_limit(MAX_FRAME_BYTES)
    }

    /// A decoder with another limit (bytes per line, newline included;
    /// at least 1). Meant for tests and tools; the protocol limit is fixed.
    pub fn with_limit(limit: usize) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            limit: limit.max(1),
            ended: false,
            failed: false,
        }
    }

    /// The limit in force, in bytes per line including the newline.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes received and not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Appends bytes read from the stream. Ignored after an error or after
    /// [`finish`](FrameDecoder::finish).
    pub fn push(&mut self, chunk: &[u8]) {
        if self.failed || self.ended {
            return;
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Marks the end of the stream.
    ///
    /// Frames still buffered remain available; after them, a final line
    /// without its `\n` is returned as one last frame (the reference Bridge
    /// answers such a line too), then `Ok(None)` for good.
    pub fn finish(&mut self) {
        self.ended = true;
    }

    /// The next complete frame, without its `\n`, or `Ok(None)` when more
    /// input is needed (or the finished stream is exhausted).
    ///
    /// # Errors
    ///
    /// [`FrameTooLarge`] when the next line, newline included, is longer
    /// than the limit, or an unfinished line already holds `limit` bytes.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameTooLarge> {
        if self.failed {
            return Err(self.too_large());
        }
        if let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
            let newline = self.scanned + at;
            if newline + 1 - self.start > self.limit {
                return Err(self.fail());
            }
            let frame = self.buf[self.start..newline].to_vec();
            self.start = newline + 1;
            self.scanned = self.start;
            return Ok(Some(frame));
        }
        self.scanned = self.buf.len();
        // No newline yet: with `limit` bytes already here, the line plus its
        // newline cannot fit, so refuse now rather than buffer more.
        if self.buffered() >= self.limit {
            return Err(self.fail());
        }
        if self.ended && self.buffered() > 0 {
            let frame = self.buf[self.start..].to_vec();
            self.start = self.buf.len();
            self.scanned = self.start;
            return Ok(Some(frame));
        }
        Ok(None)
    }

    #[cold]
    fn fail(&mut self) -> FrameTooLarge {
        self.failed = true;
        self.buf = Vec::new();
        self.start = 0;
        self.scanned = 0;
        self.too_large()
    }

    fn too_large(&self) -> FrameTooLarge {
        FrameTooLarge { limit: self.limit }
    }
}

/// Appends the terminating newline to encoded JSON and enforces the limit.
pub(crate) fn terminate(mut json: Vec<u8>) -> Result<Vec<u8>, FrameTooLarge> {
    json.push(b'\n');
    if json.len() > MAX_FRAME_BYTES {
        return Err(FrameTooLarge {
            limit: MAX_FRAME_BYTES,
        });
    }
    Ok(json)
}
