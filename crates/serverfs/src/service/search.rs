//! `find_files` and `search_text`.

use std::sync::Arc;
use std::time::Duration;

use serverfs_fs::{Control, FindLimits, NamePattern, SearchLimits, SearchQuery};

use crate::audit::AuditRecord;
use crate::mcp::error::ToolError;
use crate::mcp::params::{FindFilesParams, SearchMode, SearchTextParams};
use crate::mcp::results::{FindFilesResult, FoundFile, SearchTextResult, TextMatch};
use crate::service::FileService;
use crate::service::call::{CallControl, OnCancel, Progress};
use crate::service::files::run_blocking;

/// Longest returned line or context line, in bytes.
const MAX_LINE_BYTES: usize = 2048;
/// Bound on the text a search returns (paths, lines, context).
const MAX_RESPONSE_BYTES: usize = 1 << 20;
/// Size limit of a compiled regular expression.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Most context lines per side.
const MAX_CONTEXT_LINES: u64 = 5;

impl FileService {
    /// `find_files`: a walk the client can cancel and watch.
    pub async fn find_files(
        &self,
        params: FindFilesParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<FindFilesResult, ToolError> {
        let limit = self.result_limit(params.limit)?;
        let (workdir, path) = self.locate(&params.workdir, &params.path, audit)?;
        let pattern = NamePattern::new(&params.pattern)
            .map_err(|e| ToolError::fs(e, &params.workdir, &path.as_string()))?;
        let limits = FindLimits {
            limit,
            max_entries: self.settings.max_walk_entries,
            threads: walker_threads(),
        };
        let control = Arc::new(Control::new());
        let kernel = control.clone();
        let walk = run_blocking(&workdir, &path, move |workdir, path| {
            workdir.fs.find_files(path, &pattern, limits, &kernel)
        });
        let found = call
            .watch(walk, OnCancel::Stop(&control), || walked(&control))
            .await?;
        let matches: Vec<FoundFile> = found
            .matches
            .iter()
            .map(|p| FoundFile {
                path: p.as_string(),
            })
            .collect();
        audit.set(|a| {
            a.returned = Some(matches.len() as u64);
            a.truncated = Some(found.truncated);
        });
        Ok(FindFilesResult {
            workdir: params.workdir,
            path: path.as_string(),
            returned: matches.len() as u64,
            matches,
            truncated: found.truncated,
            truncated_reason: found.truncated_reason.map(str::to_owned),
        })
    }

    /// `search_text`: a walk the client can cancel and watch.
    pub async fn search_text(
        &self,
        params: SearchTextParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<SearchTextResult, ToolError> {
        let limit = self.result_limit(params.limit)?;
        if params.query.is_empty() {
            return Err(ToolError::invalid_argument("query must not be empty"));
        }
        if params.context_lines > MAX_CONTEXT_LINES {
            return Err(ToolError::invalid_argument(format!(
                "context_lines must be between 0 and {MAX_CONTEXT_LINES}"
            )));
        }
        let (workdir, path) = self.locate(&params.workdir, &params.path, audit)?;
        let query = SearchQuery {
            query: params.query,
            regex: params.mode == SearchMode::Regex,
            case_sensitive: params.case_sensitive,
            glob: params.glob,
            context_lines: usize::try_from(params.context_lines).unwrap_or(0),
            include_ignored: params.include_ignored,
        };
        let limits = SearchLimits {
            limit,
            max_line_bytes: MAX_LINE_BYTES,
            max_response_bytes: MAX_RESPONSE_BYTES,
            max_file_bytes: self.settings.search_max_file_bytes,
            max_entries: self.settings.max_walk_entries,
            timeout: Duration::from_millis(self.settings.search_timeout_ms),
            threads: walker_threads(),
            regex_size_limit: REGEX_SIZE_LIMIT,
        };
        let control = Arc::new(Control::new());
        let kernel = control.clone();
        let walk = run_blocking(&workdir, &path, move |workdir, path| {
            workdir.fs.search_text(path, &query, limits, &kernel)
        });
        let found = call
            .watch(walk, OnCancel::Stop(&control), || walked(&control))
            .await?;
        let matches: Vec<TextMatch> = found
            .matches
            .into_iter()
            .map(|m| TextMatch {
                path: m.path.as_string(),
                line: m.line,
                text: m.text,
                line_truncated: m.line_truncated,
                context_before: m.context_before,
                context_after: m.context_after,
            })
            .collect();
        audit.set(|a| {
            a.returned = Some(matches.len() as u64);
            a.truncated = Some(found.truncated);
        });
        Ok(SearchTextResult {
            workdir: params.workdir,
            path: path.as_string(),
            returned: matches.len() as u64,
            matches,
            truncated: found.truncated,
            truncated_reason: found.truncated_reason.map(str::to_owned),
            files_searched: found.files_searched,
            files_skipped: found.files_skipped,
        })
    }

    /// The effective result limit: the caller's (at least 1) or the
    /// server default, capped by the server maximum.
    fn result_limit(&self, requested: Option<u64>) -> Result<usize, ToolError> {
        let limit = match requested {
            Some(0) => return Err(ToolError::invalid_argument("limit must be at least 1")),
            Some(limit) => limit,
            None => u64::from(self.settings.default_search_results),
        }
        .min(u64::from(self.settings.max_search_results));
        Ok(usize::try_from(limit).unwrap_or(usize::MAX))
    }
}

/// A walk's progress: the directory entries it has visited (the total is
/// not known before the walk ends).
fn walked(control: &Control) -> Progress {
    Progress {
        done: control.done(),
        total: None,
        message: format!("{} entries walked", control.done()),
    }
}

/// One walker thread per core: the walk is I/O and CPU bound in turns.
fn walker_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
