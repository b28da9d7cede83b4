//! The file tools' service: workdir lookup, path policy, the hop onto a
//! blocking thread for the synchronous kernel, and result shaping.

use std::sync::Arc;

use serverfs_config::{AgentMode, ServerSettings};
use serverfs_fs::{EntryDetail, EntryKind, FsError, PageLimits, PageStart, RelPath};

use crate::audit::AuditRecord;
use crate::mcp::error::ToolError;
use crate::mcp::params::{ListDirectoryParams, ReadTextFileParams, StatFileParams};
use crate::mcp::results::{
    Access, AgentModeName, EntryInfo, EntryType, ListDirectoryResult, ListWorkdirsResult,
    ReadTextFileResult, StatFileResult, WorkdirInfo,
};
use crate::service::placement::{Panicked, run_placed};
use crate::service::{WorkdirHandle, WorkdirRegistry, WriterLease};

/// The most names a directory may hold to be listed inline (read and
/// sorted in about a millisecond); a bigger one is listed on the pool.
const INLINE_LISTING_NAMES: usize = 4096;

/// The default `max_lines` of `read_text_file`.
pub const DEFAULT_MAX_LINES: u64 = 200;

/// Read-side file operations over the configured workdirs.
#[derive(Debug, Clone)]
pub struct FileService {
    pub(super) workdirs: WorkdirRegistry,
    pub(super) settings: Arc<ServerSettings>,
    pub(super) lease: Arc<dyn WriterLease>,
}

impl FileService {
    /// A service over `workdirs` with the server-wide `settings`; every
    /// mutation also takes `lease`.
    pub fn new(
        workdirs: WorkdirRegistry,
        settings: ServerSettings,
        lease: Arc<dyn WriterLease>,
    ) -> FileService {
        FileService {
            workdirs,
            settings: Arc::new(settings),
            lease,
        }
    }

    /// True when any workdir enables binary transfer (the binary tools are
    /// then listed).
    pub fn binary_tools_enabled(&self) -> bool {
        self.workdirs.iter().any(|w| w.config.binary_transfer)
    }

    /// Server-wide limits (published as schema defaults).
    pub fn settings(&self) -> &ServerSettings {
        &self.settings
    }

    /// `list_workdirs`.
    pub fn list_workdirs(&self, audit: &AuditRecord) -> ListWorkdirsResult {
        let workdirs: Vec<WorkdirInfo> = self
            .workdirs
            .iter()
            .map(|w| {
                let c = &w.config;
                WorkdirInfo {
                    alias: c.alias.as_str().to_owned(),
                    description: c.description.clone(),
                    access: if c.read_only {
                        Access::ReadOnly
                    } else {
                        Access::ReadWrite
                    },
                    binary_transfer: c.binary_transfer,
                    agent_mode: match c.agent_mode {
                        AgentMode::Disabled => AgentModeName::Disabled,
                        AgentMode::Review => AgentModeName::Review,
                        AgentMode::WorkspaceWrite => AgentModeName::WorkspaceWrite,
                    },
                    agent_runtimes: c
                        .agent_runtimes
                        .iter()
                        .map(|r| r.as_str().to_owned())
                        .collect(),
                    approvals: c.approvals.into(),
                }
            })
            .collect();
        audit.set(|a| a.returned = Some(workdirs.len() as u64));
        ListWorkdirsResult { workdirs }
    }

    /// `list_directory`.
    pub async fn list_directory(
        &self,
        params: ListDirectoryParams,
        audit: &AuditRecord,
    ) -> Result<ListDirectoryResult, ToolError> {
        let limit = match params.limit {
            Some(0) => return Err(ToolError::invalid_argument("limit must be at least 1")),
            Some(limit) => limit,
            None => u64::from(self.settings.default_list_limit),
        }
        .min(u64::from(self.settings.max_list_entries));
        let (workdir, path) = self.locate(&params.workdir, &params.path, audit)?;
        let offset = params.offset;
        let (offset_at, count) = (
            usize::try_from(offset).unwrap_or(usize::MAX),
            usize::try_from(limit).unwrap_or(usize::MAX),
        );
        let detail = if params.metadata {
            EntryDetail::Metadata
        } else {
            EntryDetail::Kinds
        };
        // Every name is read and sorted, so a listing runs inline only while
        // the directory is small; a bigger one is listed again on the pool.
        let inline = workdir.placement.inline();
        let budget = if inline {
            INLINE_LISTING_NAMES
        } else {
            usize::MAX
        };
        let listed = run_kernel(inline, &workdir, &path, move |workdir, path| {
            workdir
                .fs
                .list_directory_within(path, offset_at, count, detail, budget)
        })
        .await?;
        let page = match listed {
            Some(page) => page,
            None => {
                run_blocking(&workdir, &path, move |workdir, path| {
                    workdir.fs.list_directory(path, offset_at, count, detail)
                })
                .await?
            }
        };
        let entries: Vec<EntryInfo> = page
            .entries
            .into_iter()
            .map(|e| EntryInfo {
                name: e.name,
                path: e.path,
                kind: entry_type(e.kind),
                size: e.size,
                modified_at: e.modified_at,
            })
            .collect();
        audit.set(|a| {
            a.returned = Some(entries.len() as u64);
            a.has_more = Some(page.has_more);
        });
        Ok(ListDirectoryResult {
            workdir: params.workdir,
            path: path.as_string(),
            returned: entries.len() as u64,
            entries,
            offset,
            limit,
            has_more: page.has_more,
            metadata: params.metadata,
        })
    }

    /// `stat_file`.
    pub async fn stat_file(
        &self,
        params: StatFileParams,
        audit: &AuditRecord,
    ) -> Result<StatFileResult, ToolError> {
        let (workdir, path) = self.locate(&params.workdir, &params.path, audit)?;
        let meta = run_bounded(&workdir, &path, move |workdir, path| workdir.fs.stat(path)).await?;
        audit.set(|a| a.kind = Some(meta.kind.as_str()));
        Ok(StatFileResult {
            workdir: params.workdir,
            path: path.as_string(),
            kind: entry_type(meta.kind),
            size: meta.size,
            modified_at: meta.modified_at,
            mime_type: meta.mime_type,
            revision: meta.revision.as_str().to_owned(),
        })
    }

    /// `read_text_file` (and the `serverfs://` resource).
    pub async fn read_text_file(
        &self,
        params: ReadTextFileParams,
        audit: &AuditRecord,
    ) -> Result<ReadTextFileResult, ToolError> {
        let (start, page_lines) = match (params.start_line, params.cursor, params.tail_lines) {
            (None, None, Some(_)) if params.max_lines.is_some() => {
                return Err(ToolError::invalid_argument(
                    "tail_lines is the page size: pass it without max_lines",
                ));
            }
            (Some(0), None, None) => {
                return Err(ToolError::invalid_argument("start_line must be at least 1"));
            }
            (None, None, Some(0)) => {
                return Err(ToolError::invalid_argument("tail_lines must be at least 1"));
            }
            (Some(line), None, None) => (PageStart::Line(line), params.max_lines),
            (None, Some(cursor), None) => (PageStart::Cursor(cursor), params.max_lines),
            (None, None, Some(tail)) => (PageStart::Tail, Some(tail)),
            (None, None, None) => (PageStart::Line(1), params.max_lines),
            _ => {
                return Err(ToolError::invalid_argument(
                    "pass at most one of start_line, cursor and tail_lines",
                ));
            }
        };
        let max_lines = match page_lines {
            Some(0) => return Err(ToolError::invalid_argument("max_lines must be at least 1")),
            Some(n) => n,
            None => DEFAULT_MAX_LINES,
        };
        let (workdir, path) = self.locate(&params.workdir, &params.path, audit)?;
        let limits = PageLimits {
            max_lines: max_lines.min(u64::from(workdir.config.max_read_lines)),
            max_bytes: workdir.config.max_read_bytes,
        };
        // A page from a line number may scan the file from its top (or from
        // the line index's nearest checkpoint): unbounded, so on the pool.
        // The first page, a cursor and the tail start where the page does.
        let scans = matches!(start, PageStart::Line(line) if line > 1);
        let read = move |workdir: &WorkdirHandle, path: &RelPath| {
            workdir.fs.read_text(path, &start, limits)
        };
        let page = if scans {
            run_blocking(&workdir, &path, read).await?
        } else {
            run_bounded(&workdir, &path, read).await?
        };
        audit.set(|a| {
            a.bytes_returned = Some(page.bytes_returned);
            a.start_line = page.start_line;
            a.end_line = page.end_line;
            a.from_end = page.from_end;
            a.has_more = Some(page.has_more);
        });
        Ok(ReadTextFileResult {
            workdir: params.workdir,
            path: path.as_string(),
            start_line: page.start_line,
            end_line: page.end_line,
            lines_returned: page.lines_returned,
            from_end: page.from_end,
            content: page.content,
            bytes_returned: page.bytes_returned,
            has_more: page.has_more,
            next_start_line: page.next_start_line,
            next_cursor: page.next_cursor,
            prev_cursor: page.prev_cursor,
            revision: page.revision.as_str().to_owned(),
        })
    }

    /// Finds the workdir, then parses and policy-checks the path, in the
    /// documented precedence (alias first).
    pub(super) fn locate(
        &self,
        alias: &str,
        raw_path: &str,
        audit: &AuditRecord,
    ) -> Result<(Arc<WorkdirHandle>, RelPath), ToolError> {
        self.locate_checked(alias, raw_path, audit, |_| Ok(()))
    }

    /// [`FileService::locate`] with a workdir-level `check` (read-write,
    /// binary transfer enabled, …) run between the alias lookup and the
    /// path policy, which is the documented order of refusals.
    pub(super) fn locate_checked(
        &self,
        alias: &str,
        raw_path: &str,
        audit: &AuditRecord,
        check: impl FnOnce(&WorkdirHandle) -> Result<(), ToolError>,
    ) -> Result<(Arc<WorkdirHandle>, RelPath), ToolError> {
        let workdir = self
            .workdirs
            .get(alias)
            .ok_or_else(|| ToolError::workdir_not_found(alias))?;
        audit.set(|a| a.workdir = Some(alias.to_owned()));
        check(&workdir)?;
        let path = workdir
            .fs
            .parse_path(raw_path)
            .map_err(|e| ToolError::fs(e, alias, raw_path))?;
        audit.set(|a| a.path = Some(path.as_string()));
        Ok((workdir, path))
    }
}

/// Runs a kernel call on `workdir` and `path` on the blocking pool,
/// mapping its error with the workdir and normalized path for context.
pub(super) async fn run_blocking<T: Send + 'static>(
    workdir: &Arc<WorkdirHandle>,
    path: &RelPath,
    work: impl FnOnce(&WorkdirHandle, &RelPath) -> Result<T, FsError> + Send + 'static,
) -> Result<T, ToolError> {
    run_kernel(false, workdir, path, work).await
}

/// [`run_blocking`] for a call whose work is bounded by its page (one
/// stat, one directory page, one page of text from a known place): inline
/// when the workdir lies on local storage (see `placement`).
pub(super) async fn run_bounded<T: Send + 'static>(
    workdir: &Arc<WorkdirHandle>,
    path: &RelPath,
    work: impl FnOnce(&WorkdirHandle, &RelPath) -> Result<T, FsError> + Send + 'static,
) -> Result<T, ToolError> {
    run_kernel(workdir.placement.inline(), workdir, path, work).await
}

async fn run_kernel<T: Send + 'static>(
    inline: bool,
    workdir: &Arc<WorkdirHandle>,
    path: &RelPath,
    work: impl FnOnce(&WorkdirHandle, &RelPath) -> Result<T, FsError> + Send + 'static,
) -> Result<T, ToolError> {
    let (owned_workdir, owned_path) = (workdir.clone(), path.clone());
    match run_placed(inline, move || work(&owned_workdir, &owned_path)).await {
        Ok(result) => {
            result.map_err(|e| ToolError::fs(e, workdir.config.alias.as_str(), &path.as_string()))
        }
        Err(Panicked) => {
            tracing::error!(
                event = "kernel_panicked",
                workdir = workdir.config.alias.as_str()
            );
            Err(ToolError::internal("the filesystem call failed"))
        }
    }
}

pub(super) fn entry_type(kind: EntryKind) -> EntryType {
    match kind {
        EntryKind::File => EntryType::File,
        EntryKind::Directory => EntryType::Directory,
        EntryKind::Symlink => EntryType::Symlink,
        EntryKind::Other => EntryType::Other,
    }
}
