//! `read_text_file`: one page of a UTF-8 text file, by line.
//!
//! Memory is bounded by the page: lines are read through a fixed buffer,
//! and no line longer than the byte budget is ever held whole. Reaching
//! line N by number scans the file's newlines (time O(offset), memory
//! O(buffer)); continuing with a cursor seeks straight to the byte offset
//! where the previous page ended, so page N+1 costs O(page).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustix::fs::fstat;

use crate::{FsError, RelPath, Revision, Workdir};

/// Bytes inspected for a NUL to call a file binary.
const BINARY_SNIFF_BYTES: usize = 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Where a page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStart {
    /// A 1-based line number.
    Line(u64),
    /// A cursor from a previous page's `next_cursor`.
    Cursor(String),
}

/// Limits of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    /// At most this many lines.
    pub max_lines: u64,
    /// At most this many bytes of content; also the longest line readable.
    pub max_bytes: u64,
}

/// One page of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPage {
    /// First line of the page (1-based).
    pub start_line: u64,
    /// Last line returned; `start_line - 1` when nothing was returned.
    pub end_line: u64,
    /// The lines, line endings untouched, a leading BOM removed.
    pub content: String,
    /// `content.len()`.
    pub bytes_returned: u64,
    /// True when the file continues after this page.
    pub has_more: bool,
    /// `end_line + 1` when `has_more`.
    pub next_start_line: Option<u64>,
    /// Opaque continuation token when `has_more`.
    pub next_cursor: Option<String>,
    /// Revision of the file, unchanged throughout the read.
    pub revision: Revision,
}

impl Workdir {
    /// Reads one page of the text file at `path`.
    ///
    /// # Errors
    ///
    /// Resolution and type codes (`PATH_NOT_FOUND`, `NOT_A_FILE`,
    /// `SYMLINK_NOT_ALLOWED`, `UNSUPPORTED_FILE_TYPE`, …); `BINARY_FILE`
    /// (NUL in the first 1024 bytes, whatever the page);
    /// `LINE_TOO_LARGE` (the page's first line exceeds `max_bytes`);
    /// `UNSUPPORTED_TEXT_ENCODING` (the page is not UTF-8);
    /// `FILE_CHANGED_DURING_READ`; `CURSOR_STALE` (cursor of another
    /// revision, or not at a line start); `INVALID_ARGUMENT` (undecodable
    /// cursor).
    pub fn read_text(
        &self,
        path: &RelPath,
        start: &PageStart,
        limits: PageLimits,
    ) -> Result<TextPage, FsError> {
        let (fd, stat) = self.open_file(path)?;
        let revision = Revision::from_stat(&stat);
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, File::from(fd));

        let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
        (&mut reader)
            .take(BINARY_SNIFF_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(io_error)?;
        if memchr::memchr(0, &head).is_some() {
            return Err(FsError::BinaryFile);
        }
        let has_bom = head.starts_with(UTF8_BOM);

        let (start_line, mut offset) = match start {
            PageStart::Line(line) => {
                let line = (*line).max(1);
                match seek_to_line(&mut reader, line)? {
                    Some(offset) => (line, offset),
                    None => {
                        ensure_unchanged(&reader, &revision)?;
                        return Ok(TextPage::empty(line, revision));
                    }
                }
            }
            PageStart::Cursor(token) => {
                let cursor = Cursor::decode(token)?;
                if cursor.revision != revision.as_str()
                    || !at_line_start(&mut reader, cursor.offset, size)?
                {
                    return Err(FsError::CursorStale);
                }
                reader
                    .seek(SeekFrom::Start(cursor.offset))
                    .map_err(io_error)?;
                (cursor.line, cursor.offset)
            }
        };
        if offset == 0 && has_bom {
            reader
                .seek(SeekFrom::Start(UTF8_BOM.len() as u64))
                .map_err(io_error)?;
            offset = UTF8_BOM.len() as u64;
        }

        let mut content: Vec<u8> = Vec::new();
        let mut line_buf: Vec<u8> = Vec::new();
        let mut lines = 0u64;
        loop {
            if lines == limits.max_lines {
                break;
            }
            line_buf.clear();
            // One byte more than the budget tells "exactly fits" from "too long".
            let read = (&mut reader)
                .take(limits.max_bytes + 1)
                .read_until(b'\n', &mut line_buf)
                .map_err(io_error)?;
            if read == 0 {
                break;
            }
            let line_len = line_buf.len() as u64;
            if line_len > limits.max_bytes {
                if lines == 0 {
                    return Err(FsError::LineTooLarge {
                        line: start_line,
                        limit: limits.max_bytes,
                    });
                }
                break; // the next page reports it
            }
            if content.len() as u64 + line_len > limits.max_bytes {
                break;
            }
            content.extend_from_slice(&line_buf);
            offset += line_len;
            lines += 1;
        }
        ensure_unchanged(&reader, &revision)?;
        let content = String::from_utf8(content).map_err(|_| FsError::InvalidUtf8)?;
        let end_line = start_line + lines - 1;
        let has_more = offset < size;
        Ok(TextPage {
            start_line,
            end_line,
            bytes_returned: content.len() as u64,
            content,
            has_more,
            next_start_line: has_more.then_some(end_line + 1),
            next_cursor: has_more.then(|| {
                Cursor {
                    revision: revision.as_str().to_owned(),
                    offset,
                    line: end_line + 1,
                }
                .encode()
            }),
            revision,
        })
    }
}

impl TextPage {
    fn empty(start_line: u64, revision: Revision) -> TextPage {
        TextPage {
            start_line,
            end_line: start_line - 1,
            content: String::new(),
            bytes_returned: 0,
            has_more: false,
            next_start_line: None,
            next_cursor: None,
            revision,
        }
    }
}

/// Positions `reader` at the start of 1-based `line`; `None` if the file
/// has fewer lines. Counts newlines through the reader's buffer, so memory
/// stays constant whatever the file size.
fn seek_to_line(reader: &mut BufReader<File>, line: u64) -> Result<Option<u64>, FsError> {
    reader.seek(SeekFrom::Start(0)).map_err(io_error)?;
    let mut to_skip = line - 1;
    let mut offset = 0u64;
    while to_skip > 0 {
        let buf = reader.fill_buf().map_err(io_error)?;
        if buf.is_empty() {
            return Ok(None);
        }
        let mut consumed = buf.len();
        for pos in memchr::memchr_iter(b'\n', buf) {
            to_skip -= 1;
            if to_skip == 0 {
                consumed = pos + 1;
                break;
            }
        }
        reader.consume(consumed);
        offset += consumed as u64;
    }
    // A start exactly at end of file has no line to return.
    if reader.fill_buf().map_err(io_error)?.is_empty() {
        return Ok(None);
    }
    Ok(Some(offset))
}

/// True when `offset` is 0 or directly follows a newline, and lies in the
/// file: a cursor can only resume at a line start.
fn at_line_start(reader: &mut BufReader<File>, offset: u64, size: u64) -> Result<bool, FsError> {
    if offset == 0 {
        return Ok(true);
    }
    if offset > size {
        return Ok(false);
    }
    reader.seek(SeekFrom::Start(offset - 1)).map_err(io_error)?;
    let mut byte = [0u8; 1];
    reader.read_exact(&mut byte).map_err(io_error)?;
    Ok(byte[0] == b'\n')
}

fn ensure_unchanged(reader: &BufReader<File>, revision: &Revision) -> Result<(), FsError> {
    let now = fstat(reader.get_ref()).map_err(FsError::from_errno)?;
    if Revision::from_stat(&now) != *revision {
        return Err(FsError::ChangedDuringRead);
    }
    Ok(())
}

fn io_error(error: std::io::Error) -> FsError {
    match error.raw_os_error() {
        Some(raw) => FsError::from_errno(rustix::io::Errno::from_raw_os_error(raw)),
        None => FsError::AccessDenied {
            reason: error.kind().to_string(),
        },
    }
}

/// A continuation point: the revision it belongs to, the byte offset of
/// the next line, and that line's number. Encoded as URL-safe base64 of
/// `c1:<revision>:<offset>:<line>` — opaque to clients, but carrying no
/// secret, so it needs no signature: a forged one can only point at a line
/// start of the same unchanged file, which the caller may read anyway
/// (with possibly wrong line numbers, which is the forger's problem).
struct Cursor {
    revision: String,
    offset: u64,
    line: u64,
}

impl Cursor {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!(
            "c1:{}:{}:{}",
            self.revision, self.offset, self.line
        ))
    }

    fn decode(token: &str) -> Result<Cursor, FsError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| FsError::MalformedCursor)?;
        let text = String::from_utf8(bytes).map_err(|_| FsError::MalformedCursor)?;
        // "c1" : "v1" : <hex> : offset : line
        let mut parts = text.split(':');
        let (Some("c1"), Some("v1"), Some(hex), Some(offset), Some(line), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(FsError::MalformedCursor);
        };
        let offset = offset.parse().map_err(|_| FsError::MalformedCursor)?;
        let line: u64 = line.parse().map_err(|_| FsError::MalformedCursor)?;
        // Every line before `line` takes at least one byte, so a genuine
        // cursor has `line <= offset + 1`; anything else was forged, and
        // would also make the page's line arithmetic overflow.
        if line == 0 || line.saturating_sub(1) > offset {
            return Err(FsError::MalformedCursor);
        }
        Ok(Cursor {
            revision: format!("v1:{hex}"),
            offset,
            line,
        })
    }
}
