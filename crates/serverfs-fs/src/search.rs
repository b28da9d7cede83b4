//! `search_text`: ripgrep's searcher over the confined parallel walk.
//!
//! Each file is opened relative to its directory's descriptor (obtained
//! beneath the root by the confined resolver) with `O_NOFOLLOW`, so a
//! symlink swapped in mid-search is refused, never followed. Matching is
//! `grep-searcher` with a `grep-regex` matcher: literal by default, regex
//! on request, line-oriented. Binary files (a NUL byte), files over the
//! size cap and, unless the workdir reads them, files with several hard
//! links are skipped and counted. Every cap — matches, response bytes,
//! entries walked, wall-clock time — ends the search with the results so
//! far and `truncated: true`, never with an error.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use rustix::fs::{FileType, Mode, OFlags, fstat, openat};
use rustix::io::Errno;

use crate::walk::{FileVisit, FileVisitor, StopReason, WalkOptions};
use crate::{Control, FsError, RelPath, Workdir};

/// What to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// Literal text, or a regular expression when `regex`.
    pub query: String,
    /// Interpret `query` as a regular expression.
    pub regex: bool,
    /// Match case exactly.
    pub case_sensitive: bool,
    /// Only files whose name (no `/` in the glob) or path relative to the
    /// search root (with `/`) matches; a leading `!` excludes instead.
    pub glob: Option<String>,
    /// Lines of context before and after each match.
    pub context_lines: usize,
    /// Search files that `.gitignore` / `.ignore` would skip.
    pub include_ignored: bool,
}

/// Caps of one search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Matches to return.
    pub limit: usize,
    /// Longest returned line (and context line), in bytes; longer ones are cut.
    pub max_line_bytes: usize,
    /// Total bytes of returned text, paths and context.
    pub max_response_bytes: usize,
    /// Files larger than this are skipped.
    pub max_file_bytes: u64,
    /// Entries to visit before giving up.
    pub max_entries: u64,
    /// Wall-clock budget.
    pub timeout: Duration,
    /// Walker threads.
    pub threads: usize,
    /// Size limit of the compiled regex, in bytes.
    pub regex_size_limit: usize,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMatch {
    /// The file.
    pub path: RelPath,
    /// 1-based line number.
    pub line: u64,
    /// The line without its `\n` (a `\r` is kept), cut at `max_line_bytes`.
    pub text: String,
    /// True when `text` was cut.
    pub line_truncated: bool,
    /// Up to `context_lines` preceding lines.
    pub context_before: Vec<String>,
    /// Up to `context_lines` following lines.
    pub context_after: Vec<String>,
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult {
    /// Matches sorted by path and line, at most `limit`.
    pub matches: Vec<SearchMatch>,
    /// True when a cap ended the search early.
    pub truncated: bool,
    /// `limit`, `response_bytes`, `walk_limit` or `timeout`.
    pub truncated_reason: Option<&'static str>,
    /// Files searched.
    pub files_searched: u64,
    /// Files skipped as binary, over the size cap, or with several hard
    /// links on a workdir that does not read such files.
    pub files_skipped: u64,
}

/// Why a search stopped early, in wire form.
const LIMIT: &str = "limit";
const RESPONSE_BYTES: &str = "response_bytes";
const WALK_LIMIT: &str = "walk_limit";
const TIMEOUT: &str = "timeout";

struct GlobFilter {
    matcher: GlobMatcher,
    whole_path: bool,
    exclude: bool,
}

impl GlobFilter {
    fn new(glob: &str) -> Result<GlobFilter, FsError> {
        let (exclude, body) = match glob.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, glob),
        };
        let matcher = GlobBuilder::new(body)
            .literal_separator(true)
            .build()
            .map_err(|e| FsError::InvalidPattern {
                reason: format!("glob: {}", e.kind()),
            })?
            .compile_matcher();
        Ok(GlobFilter {
            matcher,
            whole_path: body.contains('/'),
            exclude,
        })
    }

    /// `parent` is the file's directory relative to the search root.
    fn admits(&self, parent: &[String], name: &str) -> bool {
        let hit = if self.whole_path {
            let mut relative = parent.join("/");
            if !relative.is_empty() {
                relative.push('/');
            }
            relative.push_str(name);
            self.matcher.is_match(relative)
        } else {
            self.matcher.is_match(name)
        };
        hit != self.exclude
    }
}

struct Search<'a> {
    matcher: RegexMatcher,
    glob: Option<GlobFilter>,
    root_depth: usize,
    query: &'a SearchQuery,
    limits: SearchLimits,
    /// Search files with several hard links too (the workdir's setting).
    read_hardlinked_files: bool,
    deadline: Instant,
    control: &'a Control,
    found: Mutex<Vec<SearchMatch>>,
    count: AtomicUsize,
    bytes: AtomicUsize,
    searched: AtomicU64,
    skipped: AtomicU64,
    stop: AtomicBool,
    reason: Mutex<Option<&'static str>>,
}

impl Search<'_> {
    fn halt(&self, reason: &'static str) {
        self.reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(reason);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Searches one open regular file with the worker's `searcher`.
    fn file(&self, visit: &FileVisit<'_>, searcher: &mut Searcher, file: std::fs::File) {
        let mut sink = FileSink {
            search: self,
            lines: Vec::new(),
            matches: 0,
            bytes: 0,
            binary: false,
        };
        if searcher
            .search_file(&self.matcher, &file, &mut sink)
            .is_err()
        {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if sink.binary {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.searched.fetch_add(1, Ordering::Relaxed);
        if !sink.lines.is_empty() {
            self.collect(visit.path(), sink.lines);
        }
    }

    /// Turns one file's emitted lines into matches with their context.
    fn collect(&self, path: RelPath, lines: Vec<EmittedLine>) {
        let context = self.query.context_lines as u64;
        let shown = |l: &EmittedLine| {
            cut(
                &String::from_utf8_lossy(&l.bytes),
                self.limits.max_line_bytes,
            )
            .0
        };
        for (i, line) in lines.iter().enumerate() {
            if !line.is_match {
                continue;
            }
            // Lines that are not UTF-8 never match (as ripgrep's JSON
            // output cannot carry them as text).
            let Ok(text) = std::str::from_utf8(&line.bytes) else {
                continue;
            };
            let (text, line_truncated) = cut(text, self.limits.max_line_bytes);
            let context_before: Vec<String> = lines[..i]
                .iter()
                .filter(|l| l.number + context >= line.number)
                .map(shown)
                .collect();
            let context_after: Vec<String> = lines[i + 1..]
                .iter()
                .filter(|l| l.number <= line.number + context)
                .map(shown)
                .collect();
            let size = path.as_string().len()
                + text.len()
                + context_before
                    .iter()
                    .chain(&context_after)
                    .map(String::len)
                    .sum::<usize>();
            let found = SearchMatch {
                path: path.clone(),
                line: line.number,
                text,
                line_truncated,
                context_before,
                context_after,
            };
            if self.bytes.fetch_add(size, Ordering::Relaxed) + size > self.limits.max_response_bytes
            {
                return self.halt(RESPONSE_BYTES);
            }
            // Keep one match past the limit to know that more exist.
            if self.count.fetch_add(1, Ordering::Relaxed) >= self.limits.limit {
                return self.halt(LIMIT);
            }
            self.found
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(found);
        }
    }
}

impl FileVisitor for Search<'_> {
    /// One searcher per worker: building one zeroes its 72 KiB of buffers,
    /// which, per file, was a fifth of the search's time on 8 KiB files.
    type Local = Searcher;

    fn local(&self) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .before_context(self.query.context_lines)
            .after_context(self.query.context_lines)
            .binary_detection(BinaryDetection::quit(0))
            .build()
    }

    fn visit(&self, searcher: &mut Searcher, file: FileVisit<'_>) -> Result<bool, FsError> {
        if self.stop.load(Ordering::Relaxed) || self.control.is_cancelled() {
            return Ok(false);
        }
        if Instant::now() >= self.deadline {
            self.halt(TIMEOUT);
            return Ok(false);
        }
        if let Some(glob) = &self.glob
            && !glob.admits(&file.parent.components()[self.root_depth..], file.name)
        {
            return Ok(true);
        }
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match openat(file.dir, file.name, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Results silently missing files would look complete: refuse.
            Err(Errno::MFILE | Errno::NFILE) => return Err(FsError::ResourceExhausted),
            Err(_) => return Ok(true), // vanished, replaced by a symlink, or unreadable
        };
        let Ok(stat) = fstat(&fd) else {
            return Ok(true);
        };
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Ok(true);
        }
        if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > self.limits.max_file_bytes {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return Ok(true);
        }
        // The descriptor's link count: no extra system call (see
        // `Workdir::set_read_hardlinked_files` for what it proves).
        if !self.read_hardlinked_files && stat.st_nlink > 1 {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return Ok(true);
        }
        self.file(&file, searcher, std::fs::File::from(fd));
        Ok(!self.stop.load(Ordering::Relaxed))
    }
}

struct EmittedLine {
    number: u64,
    bytes: Vec<u8>,
    is_match: bool,
}

/// Collects one file's matching and context lines. It stops reading the
/// file as soon as this file alone would overflow what the search may
/// still return, so memory stays bounded by the caps, not by the file.
struct FileSink<'s, 'a> {
    search: &'s Search<'a>,
    lines: Vec<EmittedLine>,
    matches: usize,
    bytes: usize,
    binary: bool,
}

impl FileSink<'_, '_> {
    fn push(&mut self, first_line: Option<u64>, bytes: &[u8], is_match: bool) -> bool {
        let search = self.search;
        if is_match {
            self.matches += 1;
        }
        self.bytes += bytes.len().min(search.limits.max_line_bytes);
        let matches_so_far = search.count.load(Ordering::Relaxed) + self.matches;
        let bytes_so_far = search.bytes.load(Ordering::Relaxed) + self.bytes;
        let file_full = matches_so_far > search.limits.limit + 1
            || bytes_so_far > search.limits.max_response_bytes.saturating_mul(2);
        let numbers = first_line.unwrap_or(0)..;
        for (number, line) in numbers.zip(bytes.split_inclusive(|b| *b == b'\n')) {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            self.lines.push(EmittedLine {
                number,
                bytes: line.to_vec(),
                is_match,
            });
        }
        // Stop this file when the whole search is over, out of time or
        // cancelled (a file with many matches is otherwise read to its end).
        if Instant::now() >= search.deadline {
            search.halt(TIMEOUT);
        }
        !file_full && !search.stop.load(Ordering::Relaxed) && !search.control.is_cancelled()
    }
}

impl Sink for FileSink<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        Ok(self.push(mat.line_number(), mat.bytes(), true))
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self.push(ctx.line_number(), ctx.bytes(), false))
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
fn cut(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

impl Workdir {
    /// Searches the files beneath the directory `start` for `query`.
    /// `control` counts the entries visited and can stop the search.
    ///
    /// # Errors
    ///
    /// `INVALID_PATTERN` (regex or glob that does not compile, or exceeds
    /// the size limit), the directory resolution codes for `start`,
    /// `RESOURCE_EXHAUSTED`, `REQUEST_CANCELLED` once `control` is
    /// cancelled. Caps are not errors.
    pub fn search_text(
        &self,
        start: &RelPath,
        query: &SearchQuery,
        limits: SearchLimits,
        control: &Control,
    ) -> Result<SearchResult, FsError> {
        let matcher = RegexMatcherBuilder::new()
            .fixed_strings(!query.regex)
            .case_insensitive(!query.case_sensitive)
            .line_terminator(Some(b'\n'))
            .size_limit(limits.regex_size_limit)
            .dfa_size_limit(limits.regex_size_limit)
            .build(&query.query)
            .map_err(|e| FsError::InvalidPattern {
                reason: first_line(&e.to_string()),
            })?;
        let glob = query.glob.as_deref().map(GlobFilter::new).transpose()?;
        drop(self.open_directory(start)?);
        let started = Instant::now();
        let search = Search {
            matcher,
            glob,
            root_depth: start.components().len(),
            query,
            limits,
            read_hardlinked_files: self.reads_hardlinked_files(),
            deadline: started + limits.timeout,
            control,
            found: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            searched: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            reason: Mutex::new(None),
        };
        let options = WalkOptions {
            ignore_files: !query.include_ignored,
            skip_vcs: true,
            max_entries: limits.max_entries,
            deadline: Some(search.deadline),
            threads: limits.threads,
        };
        let report = self.walk(start, options, &search, control)?;
        // A cancel seen only by the visitor stops the walk as `Visitor`.
        if report.stopped == Some(StopReason::Cancelled) || control.is_cancelled() {
            return Err(FsError::Cancelled);
        }
        let mut reason = *search.reason.lock().unwrap_or_else(|e| e.into_inner());
        match report.stopped {
            Some(StopReason::WalkLimit) => reason = reason.or(Some(WALK_LIMIT)),
            Some(StopReason::Timeout) => reason = reason.or(Some(TIMEOUT)),
            Some(StopReason::Visitor | StopReason::Cancelled) | None => {}
        }
        let mut matches = search.found.into_inner().unwrap_or_else(|e| e.into_inner());
        matches.sort_by_cached_key(|m| (m.path.as_string(), m.line));
        matches.truncate(limits.limit);
        Ok(SearchResult {
            matches,
            truncated: reason.is_some(),
            truncated_reason: reason,
            files_searched: search.searched.into_inner(),
            files_skipped: search.skipped.into_inner(),
        })
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
        .trim()
        .to_owned()
}
