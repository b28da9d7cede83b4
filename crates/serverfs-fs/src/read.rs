//! `read_text_file`: one page of a UTF-8 text file, by line, from either
//! end.
//!
//! Memory is bounded by the page: lines are read through a fixed buffer,
//! and no line longer than the byte budget is ever held whole. A page is
//! located in one of three ways:
//!
//! - **by line number**: newlines are counted forward from the nearest
//!   checkpoint of the file's line index (the top on a first read), so the
//!   first read of line N costs O(N) and later reads anywhere the index
//!   covers cost O(page) ([`crate::line_index`]);
//! - **from the end** ([`PageStart::Tail`]): the file is read backwards
//!   from its end, never more than the page's byte budget plus one buffer,
//!   so the last page costs O(page) whatever the file's size;
//! - **by cursor**: a page's `next_cursor` and `prev_cursor` name the byte
//!   offsets where it ends and begins; the next or previous page is read
//!   from there, forwards or backwards, in O(page).
//!
//! A page located from the start knows its line numbers. A page located
//! from the end knows how many lines follow it (`from_end`); its line
//! numbers are reported only when they are cheap — the page reaches the top
//! of the file, or the line index already knows the file's length — and
//! left out otherwise, rather than paid for with a scan of everything
//! before it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustix::fs::{Stat, fstat};

use crate::line_index::{self, Checkpoint, FileKey, LineIndexes, Recorder};
use crate::{FsError, RelPath, Revision, Workdir};

/// Bytes inspected for a NUL to call a file binary.
const BINARY_SNIFF_BYTES: usize = 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// The forward reader's buffer, and the size of each backward read.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Where a page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStart {
    /// A 1-based line number.
    Line(u64),
    /// A previous page's `next_cursor` (the page after it) or `prev_cursor`
    /// (the page before it).
    Cursor(String),
    /// The end of the file: the page is the file's last lines, as many as
    /// the limits allow.
    Tail,
}

/// Limits of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    /// At most this many lines.
    pub max_lines: u64,
    /// At most this many bytes of content; also the longest line readable.
    pub max_bytes: u64,
}

/// Where a line is, in whichever count is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinePosition {
    /// Its 1-based line number.
    Number(u64),
    /// Its place counted from the end of the file: 1 is the last line.
    FromEnd(u64),
}

impl std::fmt::Display for LinePosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinePosition::Number(n) => write!(f, "{n}"),
            LinePosition::FromEnd(n) => write!(f, "{n} from the end"),
        }
    }
}

/// One page of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPage {
    /// First line of the page (1-based), when known cheaply (see the
    /// module documentation).
    pub start_line: Option<u64>,
    /// Last line returned (`start_line - 1` when nothing was returned),
    /// known when `start_line` is.
    pub end_line: Option<u64>,
    /// Number of lines in `content`.
    pub lines_returned: u64,
    /// How many lines of the file follow this page (0 for a page that ends
    /// the file), when known cheaply: always for a page located from the
    /// end. At least one of `start_line` and `from_end` is known.
    pub from_end: Option<u64>,
    /// The lines, line endings untouched, a leading BOM removed.
    pub content: String,
    /// `content.len()`.
    pub bytes_returned: u64,
    /// True when the file continues after this page.
    pub has_more: bool,
    /// `end_line + 1` when `has_more` and `end_line` is known.
    pub next_start_line: Option<u64>,
    /// Opaque token for the page after this one, when `has_more`.
    pub next_cursor: Option<String>,
    /// Opaque token for the page before this one, when lines precede it.
    pub prev_cursor: Option<String>,
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
        let (fd, stat) = self.open_for_reading(path)?;
        let text = TextFile::open(File::from(fd), &stat, &self.lines)?;
        let span = match start {
            PageStart::Line(line) => match text.locate_line((*line).max(1), limits)? {
                Some(span) => span,
                None => {
                    text.ensure_unchanged()?;
                    return Ok(TextPage::past_end((*line).max(1), text.revision));
                }
            },
            PageStart::Cursor(token) => {
                let cursor = Cursor::decode(token)?;
                if cursor.revision != text.revision.as_str()
                    || !text.is_line_start(cursor.offset)?
                {
                    return Err(FsError::CursorStale);
                }
                match cursor.direction {
                    Direction::Forward => text.forward(cursor.offset, cursor.position, limits)?,
                    Direction::Backward => text.backward(cursor.offset, cursor.position, limits)?,
                }
            }
            PageStart::Tail => text.backward(text.size, LinePosition::FromEnd(0), limits)?,
        };
        let page = text.page(span)?;
        text.ensure_unchanged()?;
        Ok(page)
    }
}

/// An open text file being paged, with what every page needs to know.
struct TextFile<'i> {
    file: File,
    key: FileKey,
    revision: Revision,
    size: u64,
    /// Where the text starts: after a UTF-8 BOM, else 0.
    text_start: u64,
    lines: &'i LineIndexes,
}

/// What locating a page found: bytes `[start, end)` holding `lines`
/// lines, where the first of them is, and the file's line count when this
/// read learned it.
struct Span {
    start: u64,
    end: u64,
    lines: u64,
    content: Vec<u8>,
    first: LinePosition,
    total: Option<u64>,
}

impl<'i> TextFile<'i> {
    fn open(file: File, stat: &Stat, lines: &'i LineIndexes) -> Result<TextFile<'i>, FsError> {
        let mut head = [0u8; BINARY_SNIFF_BYTES];
        let mut filled = 0;
        while filled < head.len() {
            match file.read_at(&mut head[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
        let head = &head[..filled];
        if memchr::memchr(0, head).is_some() {
            return Err(FsError::BinaryFile);
        }
        Ok(TextFile {
            file,
            key: FileKey::of(stat),
            revision: Revision::from_stat(stat),
            size: u64::try_from(stat.st_size).unwrap_or(0),
            text_start: if head.starts_with(UTF8_BOM) {
                UTF8_BOM.len() as u64
            } else {
                0
            },
            lines,
        })
    }

    fn ensure_unchanged(&self) -> Result<(), FsError> {
        let now = fstat(&self.file).map_err(FsError::from_errno)?;
        if Revision::from_stat(&now) != self.revision {
            return Err(FsError::ChangedDuringRead);
        }
        Ok(())
    }

    /// True when `offset` is 0 or directly follows a newline, and lies in
    /// the file: pages begin and end only at line starts.
    fn is_line_start(&self, offset: u64) -> Result<bool, FsError> {
        if offset == 0 {
            return Ok(true);
        }
        if offset > self.size {
            return Ok(false);
        }
        let mut byte = [0u8; 1];
        self.file
            .read_exact_at(&mut byte, offset - 1)
            .map_err(io_error)?;
        Ok(byte[0] == b'\n')
    }

    /// The number of lines in the file, counted through one buffer.
    fn count_lines(&self) -> Result<u64, FsError> {
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, &self.file);
        reader.seek(SeekFrom::Start(0)).map_err(io_error)?;
        let (mut newlines, mut last) = (0u64, b'\n');
        loop {
            let buf = reader.fill_buf().map_err(io_error)?;
            let Some(&end) = buf.last() else { break };
            newlines += memchr::memchr_iter(b'\n', buf).count() as u64;
            last = end;
            let read = buf.len();
            reader.consume(read);
        }
        // A last line without a newline is a line too; the BOM is not.
        let unterminated = self.size > self.text_start && last != b'\n';
        Ok(newlines + u64::from(unterminated))
    }

    /// The page starting at line `line`, or `None` when the file has fewer
    /// lines. Counts newlines from the index's nearest checkpoint, and
    /// teaches the index what the scan passes.
    fn locate_line(&self, line: u64, limits: PageLimits) -> Result<Option<Span>, FsError> {
        if self
            .lines
            .total_lines(self.key, &self.revision)
            .is_some_and(|total| line > total)
        {
            return Ok(None);
        }
        let mut from = self.lines.nearest(self.key, &self.revision, line);
        if !self.is_line_start(from.offset)? {
            self.lines.forget(self.key);
            from = Checkpoint::TOP;
        }
        let mut recorder = self.lines.recorder(self.size, from.offset);
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, &self.file);
        reader
            .seek(SeekFrom::Start(from.offset))
            .map_err(io_error)?;
        // Count newlines through the reader's buffer: constant memory,
        // whatever the distance. Line `current` starts at `current_start`.
        let (mut current, mut current_start) = (from.line, from.offset);
        let mut offset = from.offset;
        while current < line {
            let buf = reader.fill_buf().map_err(io_error)?;
            if buf.is_empty() {
                break;
            }
            let mut consumed = buf.len();
            for pos in memchr::memchr_iter(b'\n', buf) {
                current += 1;
                current_start = offset + pos as u64 + 1;
                if let Some(recorder) = recorder.as_mut() {
                    recorder.line_start(current, current_start);
                }
                if current == line {
                    consumed = pos + 1;
                    break;
                }
            }
            reader.consume(consumed);
            offset += consumed as u64;
        }
        if current < line || current_start == self.size {
            // The end of the file came first. Line `current` exists if it
            // has any bytes (a last line without a newline).
            let total = if current_start == self.size {
                current - 1
            } else {
                current
            };
            self.lines
                .learn(self.key, &self.revision, self.size, recorder, Some(total));
            return Ok(None);
        }
        self.read_forward(reader, offset, LinePosition::Number(line), limits, recorder)
            .map(Some)
    }

    /// The page starting at the line start `offset`, whose first line is at
    /// `position`.
    fn forward(
        &self,
        offset: u64,
        position: LinePosition,
        limits: PageLimits,
    ) -> Result<Span, FsError> {
        let recorder = match position {
            LinePosition::Number(_) => self.lines.recorder(self.size, offset),
            LinePosition::FromEnd(_) => None,
        };
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, &self.file);
        reader.seek(SeekFrom::Start(offset)).map_err(io_error)?;
        self.read_forward(reader, offset, position, limits, recorder)
    }

    /// Reads lines from `reader`, positioned at the line start `offset`.
    fn read_forward(
        &self,
        mut reader: BufReader<&File>,
        mut offset: u64,
        position: LinePosition,
        limits: PageLimits,
        mut recorder: Option<Recorder>,
    ) -> Result<Span, FsError> {
        if offset < self.text_start {
            reader
                .seek(SeekFrom::Start(self.text_start))
                .map_err(io_error)?;
            offset = self.text_start;
        }
        let start = offset;
        let mut content: Vec<u8> = Vec::new();
        let mut line_buf: Vec<u8> = Vec::new();
        let mut lines = 0u64;
        while lines < limits.max_lines {
            if let (Some(recorder), LinePosition::Number(first)) = (recorder.as_mut(), position) {
                recorder.line_start(first + lines, offset);
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
                        line: position,
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
        if let LinePosition::FromEnd(after) = position
            && after < lines
        {
            // A genuine cursor counts at least the lines that follow it.
            return Err(FsError::MalformedCursor);
        }
        let total = match position {
            LinePosition::Number(first) => (offset == self.size).then_some(first + lines - 1),
            LinePosition::FromEnd(_) => None,
        };
        if let LinePosition::Number(_) = position {
            self.lines
                .learn(self.key, &self.revision, self.size, recorder, total);
        }
        Ok(Span {
            start,
            end: offset,
            lines,
            content,
            first: position,
            total,
        })
    }

    /// The page ending at the line start (or end of file) `end`, where the
    /// line starting at `end` is at `position`: its lines are found by
    /// reading backwards, at most the byte budget plus one read.
    fn backward(
        &self,
        end: u64,
        position: LinePosition,
        limits: PageLimits,
    ) -> Result<Span, FsError> {
        // The earliest offset a line of this page may start at.
        let budget_floor = end.saturating_sub(limits.max_bytes).max(self.text_start);
        // Newlines are looked for down to one byte below it: a newline
        // there means a line starts exactly at the budget floor.
        let search_floor = if budget_floor > self.text_start {
            budget_floor - 1
        } else {
            self.text_start
        };
        let mut back = Backwards {
            file: &self.file,
            chunks: Vec::new(),
            low: end,
        };
        let (mut start, mut lines) = (end, 0u64);
        // The byte before `end` ends the page's last line (its newline, or
        // the file's last byte): it is no line boundary.
        let mut below = end.saturating_sub(1);
        while lines < limits.max_lines && start > self.text_start {
            match back.last_newline(search_floor, below)? {
                Some(newline) => {
                    start = newline + 1;
                    below = newline;
                }
                // No newline down to the top of the text: the line starts
                // there.
                None if budget_floor == self.text_start => start = self.text_start,
                // The line does not fit the budget.
                None if lines == 0 => {
                    return Err(FsError::LineTooLarge {
                        line: match position {
                            LinePosition::Number(n) => LinePosition::Number(n - 1),
                            LinePosition::FromEnd(n) => LinePosition::FromEnd(n + 1),
                        },
                        limit: limits.max_bytes,
                    });
                }
                None => break,
            }
            lines += 1;
        }
        let at_top = start == self.text_start;
        let first = match position {
            _ if at_top => LinePosition::Number(1),
            // A genuine cursor has at least these lines before it.
            LinePosition::Number(n) => LinePosition::Number(
                n.checked_sub(lines)
                    .filter(|first| *first >= 1)
                    .ok_or(FsError::MalformedCursor)?,
            ),
            LinePosition::FromEnd(after) => LinePosition::FromEnd(after + lines),
        };
        let total = match position {
            LinePosition::FromEnd(after) if at_top => Some(lines + after),
            LinePosition::Number(_) | LinePosition::FromEnd(_) => None,
        };
        if total.is_some() {
            self.lines
                .learn(self.key, &self.revision, self.size, None, total);
        }
        Ok(Span {
            start,
            end,
            lines,
            content: back.bytes_from(start, end)?,
            first,
            total,
        })
    }

    /// The page for `span`: its line numbers (from the file's line count
    /// when a count from the end is all the span knows) and the cursors
    /// around it.
    fn page(&self, span: Span) -> Result<TextPage, FsError> {
        let lines = span.lines;
        let mut total = span
            .total
            .or_else(|| self.lines.total_lines(self.key, &self.revision));
        if total.is_none()
            && matches!(span.first, LinePosition::FromEnd(_))
            && self.size < line_index::MIN_FILE_BYTES
        {
            // A file too small to index is small enough to count.
            total = Some(self.count_lines()?);
        }
        let first = match span.first {
            LinePosition::FromEnd(place) => match total.and_then(|t| t.checked_sub(place)) {
                Some(before) => LinePosition::Number(before + 1),
                None => LinePosition::FromEnd(place),
            },
            number @ LinePosition::Number(_) => number,
        };
        let (start_line, from_end) = match first {
            LinePosition::Number(first) => (
                Some(first),
                match total {
                    Some(total) => total.checked_sub(first + lines - 1),
                    None => (span.end == self.size).then_some(0),
                },
            ),
            LinePosition::FromEnd(place) => (None, Some(place - lines)),
        };
        let end_line = start_line.map(|first| first + lines - 1);
        let content = String::from_utf8(span.content).map_err(|_| FsError::InvalidUtf8)?;
        let has_more = span.end < self.size;
        let cursor = |direction: Direction, offset: u64, position: LinePosition| {
            Cursor {
                revision: self.revision.as_str().to_owned(),
                direction,
                offset,
                position,
            }
            .encode()
        };
        // Cursors carry line numbers whenever they are known: they stay
        // exact as pages move.
        let after_page = match first {
            LinePosition::Number(first) => LinePosition::Number(first + lines),
            LinePosition::FromEnd(place) => LinePosition::FromEnd(place - lines),
        };
        Ok(TextPage {
            start_line,
            end_line,
            lines_returned: lines,
            from_end,
            bytes_returned: content.len() as u64,
            content,
            has_more,
            next_start_line: end_line.filter(|_| has_more).map(|end| end + 1),
            next_cursor: has_more.then(|| cursor(Direction::Forward, span.end, after_page)),
            prev_cursor: (span.start > self.text_start)
                .then(|| cursor(Direction::Backward, span.start, first)),
            revision: self.revision.clone(),
        })
    }
}

impl TextPage {
    /// The empty page of a start line past the end of the file.
    fn past_end(start_line: u64, revision: Revision) -> TextPage {
        TextPage {
            start_line: Some(start_line),
            end_line: Some(start_line - 1),
            lines_returned: 0,
            from_end: None,
            content: String::new(),
            bytes_returned: 0,
            has_more: false,
            next_start_line: None,
            next_cursor: None,
            prev_cursor: None,
            revision,
        }
    }
}

/// Reads a file backwards from an offset, one buffer at a time, keeping
/// what it read (the page is assembled from it).
struct Backwards<'f> {
    file: &'f File,
    /// Buffers read, each just below the previous one.
    chunks: Vec<Vec<u8>>,
    /// The lowest offset read so far.
    low: u64,
}

impl Backwards<'_> {
    /// Reads one more buffer below what was read, not below `floor`.
    fn read_below(&mut self, floor: u64) -> Result<(), FsError> {
        let low = self.low.saturating_sub(READ_BUFFER_BYTES as u64).max(floor);
        let mut chunk = vec![0; usize::try_from(self.low - low).unwrap_or(0)];
        self.file.read_exact_at(&mut chunk, low).map_err(|e| {
            // The file got shorter under the reader.
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                FsError::ChangedDuringRead
            } else {
                io_error(e)
            }
        })?;
        self.chunks.push(chunk);
        self.low = low;
        Ok(())
    }

    /// The offset of the last newline in `[floor, below)`, reading further
    /// down as needed.
    fn last_newline(&mut self, floor: u64, mut below: u64) -> Result<Option<u64>, FsError> {
        while below > floor {
            if below <= self.low {
                self.read_below(floor)?;
            }
            let Some(chunk) = self.chunks.last() else {
                return Ok(None);
            };
            let from = floor.max(self.low);
            let slice = &chunk[(from - self.low) as usize..(below - self.low) as usize];
            match memchr::memrchr(b'\n', slice) {
                Some(at) => return Ok(Some(from + at as u64)),
                None => below = from,
            }
        }
        Ok(None)
    }

    /// The bytes `[start, end)`, `end` being where the reading began.
    fn bytes_from(mut self, start: u64, end: u64) -> Result<Vec<u8>, FsError> {
        // A page that is one line at the top of the text needed no
        // newline search below it, so may not be read yet.
        while self.low > start {
            self.read_below(start)?;
        }
        let mut out = Vec::with_capacity(usize::try_from(end - start).unwrap_or(0));
        let mut chunk_start = self.low;
        for chunk in self.chunks.iter().rev() {
            let chunk_end = chunk_start + chunk.len() as u64;
            if chunk_end > start {
                let skip = start.saturating_sub(chunk_start) as usize;
                out.extend_from_slice(&chunk[skip..]);
            }
            chunk_start = chunk_end;
        }
        Ok(out)
    }
}

fn io_error(error: std::io::Error) -> FsError {
    match error.raw_os_error() {
        Some(raw) => FsError::from_errno(rustix::io::Errno::from_raw_os_error(raw)),
        None => FsError::AccessDenied {
            reason: error.kind().to_string(),
        },
    }
}

/// Which way a cursor's page goes from its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// The page starts at the offset.
    Forward,
    /// The page ends at the offset.
    Backward,
}

/// A continuation point: the revision it belongs to, a byte offset at a
/// line start, the direction of the page it asks for, and the position of
/// the line starting at the offset. Encoded as URL-safe base64 of
/// `c2:<revision>:<f|b>:<offset>:<n<line>|e<lines to the end>>` — opaque to
/// clients, but carrying no secret, so it needs no signature: a forged one
/// can only point at a line start of the same unchanged file, which the
/// caller may read anyway (with possibly wrong line numbers, which is the
/// forger's problem).
struct Cursor {
    revision: String,
    direction: Direction,
    offset: u64,
    position: LinePosition,
}

/// Largest value a cursor's offset or line count can take: no file holds
/// more bytes, and so more lines, than this. Keeps all cursor arithmetic
/// far from overflow.
const MAX_CURSOR_VALUE: u64 = i64::MAX as u64;

impl Cursor {
    fn encode(&self) -> String {
        let direction = match self.direction {
            Direction::Forward => 'f',
            Direction::Backward => 'b',
        };
        let position = match self.position {
            LinePosition::Number(n) => format!("n{n}"),
            LinePosition::FromEnd(n) => format!("e{n}"),
        };
        URL_SAFE_NO_PAD.encode(format!(
            "c2:{}:{direction}:{}:{position}",
            self.revision, self.offset
        ))
    }

    fn decode(token: &str) -> Result<Cursor, FsError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| FsError::MalformedCursor)?;
        let text = String::from_utf8(bytes).map_err(|_| FsError::MalformedCursor)?;
        // "c2" : "v1" : <hex> : direction : offset : position
        let mut parts = text.split(':');
        let (
            Some("c2"),
            Some("v1"),
            Some(hex),
            Some(direction),
            Some(offset),
            Some(position),
            None,
        ) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        )
        else {
            return Err(FsError::MalformedCursor);
        };
        let direction = match direction {
            "f" => Direction::Forward,
            "b" => Direction::Backward,
            _ => return Err(FsError::MalformedCursor),
        };
        let number = |digits: &str| {
            digits
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= MAX_CURSOR_VALUE)
                .ok_or(FsError::MalformedCursor)
        };
        let offset = number(offset)?;
        let position = match position.split_at_checked(1) {
            Some(("n", line)) => LinePosition::Number(number(line)?),
            Some(("e", after)) => LinePosition::FromEnd(number(after)?),
            _ => return Err(FsError::MalformedCursor),
        };
        // Every line before line N takes at least one byte, so a genuine
        // cursor has `N <= offset + 1`.
        if let LinePosition::Number(line) = position
            && (line == 0 || line - 1 > offset)
        {
            return Err(FsError::MalformedCursor);
        }
        Ok(Cursor {
            revision: format!("v1:{hex}"),
            direction,
            offset,
            position,
        })
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
