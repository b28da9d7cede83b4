//! The mutation tools: authorization in the documented order, per-workdir
//! serialization, the writer lease, then the kernel's guarded operation.

use std::sync::Arc;

use serverfs_fs::{EditLimits, FsError, RelPath, TextEdit, Workdir};
use serverfs_protocol::ErrorCode;

use crate::audit::AuditRecord;
use crate::mcp::error::ToolError;
use crate::mcp::params::{
    CreateDirectoryParams, CreateTextFileParams, DeleteParams, EditTextFileParams,
};
use crate::mcp::results::{
    CreateDirectoryResult, CreateTextFileResult, DeleteDirectoryResult, DeleteFileResult,
    EditTextFileResult,
};
use crate::service::{FileService, WorkdirHandle};

/// What an authorized mutation acts on.
pub(super) struct MutationTarget {
    pub(super) workdir: Arc<WorkdirHandle>,
    pub(super) path: RelPath,
}

impl FileService {
    /// Authorizes a mutation of `raw_path` in `alias`: workdir exists →
    /// workdir is read-write → (`extra_check`, e.g. binary transfer
    /// enabled) → path policy → not the root.
    pub(super) fn authorize_mutation(
        &self,
        alias: &str,
        raw_path: &str,
        audit: &AuditRecord,
        extra_check: impl FnOnce(&WorkdirHandle) -> Result<(), ToolError>,
    ) -> Result<MutationTarget, ToolError> {
        let (workdir, path) = self.locate_checked(alias, raw_path, audit, |workdir| {
            if workdir.config.read_only {
                return Err(ToolError {
                    code: ErrorCode::WorkdirReadOnly.into(),
                    message: format!("workdir '{}' is read-only", alias.escape_debug()),
                });
            }
            extra_check(workdir)
        })?;
        if path.is_root() {
            return Err(ToolError {
                code: ErrorCode::RootMutationNotAllowed.into(),
                message: format!(
                    "{}:. — the workdir root itself cannot be changed",
                    alias.escape_debug()
                ),
            });
        }
        Ok(MutationTarget { workdir, path })
    }

    /// Runs `op` with this workdir's mutations serialized and its writer
    /// lease held, on the blocking pool.
    pub(super) async fn mutate<T: Send + 'static>(
        &self,
        target: &MutationTarget,
        op: impl FnOnce(&Workdir, &RelPath) -> Result<T, FsError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let serialized = target.workdir.mutation_lock.clone().lock_owned().await;
        let (workdir, path, lease) = (
            target.workdir.clone(),
            target.path.clone(),
            self.lease.clone(),
        );
        let alias = workdir.config.alias.as_str().to_owned();
        let shown = target.path.as_string();
        let outcome = tokio::task::spawn_blocking(move || {
            let _serialized = serialized;
            let _lease = lease.acquire(&workdir.config)?;
            op(&workdir.fs, &path)
                .map_err(|e| ToolError::fs(e, workdir.config.alias.as_str(), &path.as_string()))
        })
        .await;
        match outcome {
            Ok(result) => result,
            Err(join) => Err(ToolError::internal(format!(
                "mutation of {alias}:{shown} did not complete: {join}"
            ))),
        }
    }

    /// `create_text_file`.
    pub async fn create_text_file(
        &self,
        params: CreateTextFileParams,
        audit: &AuditRecord,
    ) -> Result<CreateTextFileResult, ToolError> {
        let target = self.authorize_mutation(&params.workdir, &params.path, audit, |_| Ok(()))?;
        let limit = target.workdir.config.max_write_bytes;
        let content = params.content;
        let bytes_written = content.len() as u64;
        // The content's own faults are reported before the lease is taken,
        // so a busy workdir does not hide them.
        let content_error = if content.contains('\0') {
            Some(FsError::BinaryContent)
        } else if bytes_written > limit {
            Some(FsError::WriteTooLarge {
                what: "content",
                limit,
            })
        } else {
            None
        };
        if let Some(error) = content_error {
            return Err(ToolError::fs(
                error,
                &params.workdir,
                &target.path.as_string(),
            ));
        }
        let revision = self
            .mutate(&target, move |fs, path| {
                fs.create_file(path, content.as_bytes())
            })
            .await?;
        audit.set(|a| {
            a.bytes_written = Some(bytes_written);
            a.revision = Some(revision.as_str().to_owned());
        });
        Ok(CreateTextFileResult {
            workdir: params.workdir,
            path: target.path.as_string(),
            created: true,
            bytes_written,
            revision: revision.as_str().to_owned(),
        })
    }

    /// `edit_text_file`.
    pub async fn edit_text_file(
        &self,
        params: EditTextFileParams,
        audit: &AuditRecord,
    ) -> Result<EditTextFileResult, ToolError> {
        if params.edits.is_empty() {
            return Err(ToolError::invalid_argument(
                "edits must contain at least one edit",
            ));
        }
        if params.edits.iter().any(|e| e.expected_count == 0) {
            return Err(ToolError::invalid_argument(
                "expected_count must be at least 1",
            ));
        }
        let target = self.authorize_mutation(&params.workdir, &params.path, audit, |_| Ok(()))?;
        let limits = EditLimits {
            max_write_bytes: target.workdir.config.max_write_bytes,
            max_edits: usize::try_from(self.settings.max_edits_per_call).unwrap_or(usize::MAX),
        };
        let edits: Vec<TextEdit> = params
            .edits
            .into_iter()
            .map(|e| TextEdit {
                old_text: e.old_text,
                new_text: e.new_text,
                expected_count: usize::try_from(e.expected_count).unwrap_or(usize::MAX),
            })
            .collect();
        let (expected, dry_run) = (params.expected_revision, params.dry_run);
        let outcome = self
            .mutate(&target, move |fs, path| {
                fs.edit_text(path, &expected, &edits, limits, dry_run)
            })
            .await?;
        audit.set(|a| {
            a.edit_count = Some(outcome.edits_applied as u64);
            a.bytes_before = Some(outcome.bytes_before);
            a.bytes_after = Some(outcome.bytes_after);
            a.revision = Some(outcome.revision.as_str().to_owned());
            a.dry_run = Some(dry_run);
        });
        Ok(EditTextFileResult {
            workdir: params.workdir,
            path: target.path.as_string(),
            edited: !dry_run,
            dry_run,
            edits_applied: outcome.edits_applied as u64,
            bytes_before: outcome.bytes_before,
            bytes_after: outcome.bytes_after,
            revision_before: outcome.revision_before.as_str().to_owned(),
            revision: outcome.revision.as_str().to_owned(),
            diff: outcome.diff,
            diff_truncated: outcome.diff_truncated,
        })
    }

    /// `delete_file`.
    pub async fn delete_file(
        &self,
        params: DeleteParams,
        audit: &AuditRecord,
    ) -> Result<DeleteFileResult, ToolError> {
        let target = self.authorize_mutation(&params.workdir, &params.path, audit, |_| Ok(()))?;
        let expected = params.expected_revision;
        let deleted = self
            .mutate(&target, move |fs, path| fs.delete_file(path, &expected))
            .await?;
        audit.set(|a| {
            a.bytes_deleted = Some(deleted.bytes);
            a.revision = Some(deleted.revision.as_str().to_owned());
        });
        Ok(DeleteFileResult {
            workdir: params.workdir,
            path: target.path.as_string(),
            deleted: true,
            bytes_deleted: deleted.bytes,
            revision_deleted: deleted.revision.as_str().to_owned(),
        })
    }

    /// `create_directory`.
    pub async fn create_directory(
        &self,
        params: CreateDirectoryParams,
        audit: &AuditRecord,
    ) -> Result<CreateDirectoryResult, ToolError> {
        let target = self.authorize_mutation(&params.workdir, &params.path, audit, |_| Ok(()))?;
        let revision = self
            .mutate(&target, |fs, path| fs.create_directory(path))
            .await?;
        audit.set(|a| a.revision = Some(revision.as_str().to_owned()));
        Ok(CreateDirectoryResult {
            workdir: params.workdir,
            path: target.path.as_string(),
            created: true,
            revision: revision.as_str().to_owned(),
        })
    }

    /// `delete_directory`.
    pub async fn delete_directory(
        &self,
        params: DeleteParams,
        audit: &AuditRecord,
    ) -> Result<DeleteDirectoryResult, ToolError> {
        let target = self.authorize_mutation(&params.workdir, &params.path, audit, |_| Ok(()))?;
        let expected = params.expected_revision;
        let deleted = self
            .mutate(&target, move |fs, path| {
                fs.delete_directory(path, &expected)
            })
            .await?;
        audit.set(|a| a.revision = Some(deleted.revision.as_str().to_owned()));
        Ok(DeleteDirectoryResult {
            workdir: params.workdir,
            path: target.path.as_string(),
            deleted: true,
            revision_deleted: deleted.revision.as_str().to_owned(),
        })
    }

    /// Removes temporary files abandoned by a crashed ServerFS from every
    /// workdir, read-only ones included (the files are the server's own;
    /// read-only is a policy for clients), in the background (a large tree
    /// must not delay serving; the files are invisible to every tool
    /// meanwhile).
    pub fn spawn_stale_temp_cleanup(&self, max_entries: u64) {
        for workdir in self.workdirs.iter() {
            let workdir = workdir.clone();
            tokio::task::spawn_blocking(move || {
                let report = workdir.fs.remove_stale_temp_files(max_entries);
                tracing::info!(
                    event = "temp_cleanup",
                    workdir = workdir.config.alias.as_str(),
                    removed = report.removed,
                    directories = report.directories,
                    truncated = report.truncated,
                    read_only_filesystem = report.read_only_filesystem,
                );
            });
        }
    }
}
