//! `find_files`: file names (or paths) matching a glob.

use std::sync::Mutex;

use globset::{GlobBuilder, GlobMatcher};

use crate::walk::{FileVisit, FileVisitor, StopReason, WalkOptions};
use crate::{Control, FsError, RelPath, Workdir};

/// A compiled `find_files` pattern.
///
/// Without `/` it matches file *names* at any depth (`*.rs`); with `/` it
/// matches the whole workdir-relative path, `**` spanning directories
/// (`src/**/mod.rs`). `*`, `?`, `[...]`, `[!...]` and `{a,b}` are
/// supported; matching is case-sensitive and `*` never crosses `/`.
#[derive(Debug, Clone)]
pub struct NamePattern {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl NamePattern {
    /// Compiles `pattern`.
    ///
    /// # Errors
    ///
    /// `INVALID_PATTERN` for an empty or malformed glob.
    pub fn new(pattern: &str) -> Result<NamePattern, FsError> {
        if pattern.is_empty() {
            return Err(FsError::InvalidPattern {
                reason: "pattern must not be empty".to_owned(),
            });
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| FsError::InvalidPattern {
                reason: e.kind().to_string(),
            })?;
        Ok(NamePattern {
            matcher: glob.compile_matcher(),
            whole_path: pattern.contains('/'),
        })
    }

    /// True when the file at `path` matches.
    pub fn is_match(&self, path: &RelPath) -> bool {
        if self.whole_path {
            self.matcher.is_match(path.as_string())
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

/// Limits of one find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindLimits {
    /// Matches to return.
    pub limit: usize,
    /// Entries to visit before giving up.
    pub max_entries: u64,
    /// Walker threads.
    pub threads: usize,
}

/// The outcome of a find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindResult {
    /// Matching files, sorted by path, at most `limit`.
    pub matches: Vec<RelPath>,
    /// True when more matches exist or the walk stopped at its entry cap.
    pub truncated: bool,
    /// `"limit"` or `"walk_limit"` when truncated.
    pub truncated_reason: Option<&'static str>,
}

struct Collect<'p> {
    pattern: &'p NamePattern,
    found: Mutex<Vec<RelPath>>,
}

impl FileVisitor for Collect<'_> {
    type Local = ();

    fn local(&self) {}

    fn visit(&self, _: &mut (), file: FileVisit<'_>) -> Result<bool, FsError> {
        // A name pattern needs no path: only hits get one.
        let hit = if self.pattern.whole_path {
            self.pattern.is_match(&file.path())
        } else {
            self.pattern.matcher.is_match(file.name)
        };
        if hit {
            self.found
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(file.path());
        }
        Ok(true)
    }
}

impl Workdir {
    /// Finds regular files beneath the directory `start` matching
    /// `pattern`. Results are complete up to the entry cap and sorted, so
    /// they are deterministic; symlinks are never followed or returned.
    /// `control` counts the entries visited and can stop the walk.
    ///
    /// # Errors
    ///
    /// The directory resolution codes for `start` (`PATH_NOT_FOUND`,
    /// `NOT_A_DIRECTORY`, `SYMLINK_NOT_ALLOWED`, …), `RESOURCE_EXHAUSTED`,
    /// `REQUEST_CANCELLED` once `control` is cancelled.
    pub fn find_files(
        &self,
        start: &RelPath,
        pattern: &NamePattern,
        limits: FindLimits,
        control: &Control,
    ) -> Result<FindResult, FsError> {
        drop(self.open_directory(start)?);
        let collect = Collect {
            pattern,
            found: Mutex::new(Vec::new()),
        };
        let options = WalkOptions {
            ignore_files: false,
            skip_vcs: false,
            max_entries: limits.max_entries,
            deadline: None,
            threads: limits.threads,
        };
        let report = self.walk(start, options, &collect, control)?;
        if report.stopped == Some(StopReason::Cancelled) {
            return Err(FsError::Cancelled);
        }
        let mut matches = collect
            .found
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        matches.sort_by_cached_key(RelPath::as_string);
        let over_limit = matches.len() > limits.limit;
        matches.truncate(limits.limit);
        let truncated_reason = if over_limit {
            Some("limit")
        } else if report.stopped == Some(StopReason::WalkLimit) {
            Some("walk_limit")
        } else {
            None
        };
        Ok(FindResult {
            matches,
            truncated: truncated_reason.is_some(),
            truncated_reason,
        })
    }
}
