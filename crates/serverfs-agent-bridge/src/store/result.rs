//! Final results: inline up to the threshold, spooled above it, read back
//! in UTF-8-safe chunks (spec-agent-bridge.md §6).

use std::os::unix::fs::FileExt;

use rusqlite::{TransactionBehavior, params};
use serverfs_agent_runtime::bounds::utf8_prefix;
use serverfs_protocol::bridge::{
    EpochMillis, EventPayload, ResultStorage, ResultSummary, TaskResultChunk, TaskStatus,
};

use super::connection::Db;
use super::digest::sha256_hex;
use super::error::{SpoolProblem, StoreError};
use super::event::try_append;
use super::spool;
use super::task::{check_transition, need_task, set_status};
use super::wire::to_text;

/// A task's stored final response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResult {
    /// Inline or spooled.
    pub storage: ResultStorage,
    /// The whole text (inline) or a UTF-8-safe prefix of
    /// [`StoreLimits::result_preview_bytes`](super::StoreLimits) (spooled).
    pub final_response: String,
    /// The spool file name inside `results/` (spooled only).
    pub spool_name: Option<String>,
    /// Size of the whole text in bytes.
    pub size_bytes: u64,
    /// SHA-256 of the whole text, lowercase hex.
    pub sha256: String,
}

impl StoredResult {
    /// The `result` object of the task view.
    pub fn summary(&self) -> ResultSummary {
        ResultSummary {
            storage: self.storage,
            size_bytes: self.size_bytes,
            sha256: self.sha256.clone(),
            retrievable: self.storage == ResultStorage::Spool,
        }
    }
}

impl Db {
    /// Stores a running task's final response (already redacted) and
    /// completes it (`running → succeeded`), recording
    /// `task.result_spooled` (when spooled) and `task.completed`, all in one
    /// transaction. Up to [`StoreLimits::max_inline_result_bytes`] the text
    /// is stored inline; above, it is spooled and a preview kept inline.
    ///
    /// The spool file is written before the transaction and deleted again
    /// when the transaction fails; a crash in between leaves a file no row
    /// names, which the next open sweeps.
    ///
    /// [`StoreLimits::max_inline_result_bytes`]: super::StoreLimits::max_inline_result_bytes
    ///
    /// # Errors
    ///
    /// `AGENT_RESULT_TOO_LARGE` (nothing stored; the caller fails the
    /// task), `AGENT_TASK_NOT_FOUND`, `INVALID_TASK_TRANSITION` when the
    /// task is no longer `running` (e.g. cancelled meanwhile),
    /// `AGENT_RESULT_STORAGE_ERROR`.
    pub fn store_result(
        &mut self,
        task_id: &str,
        text: &str,
        now: EpochMillis,
    ) -> Result<StoredResult, StoreError> {
        let limits = &self.limits;
        if text.len() > limits.max_spooled_result_bytes {
            return Err(StoreError::ResultTooLarge {
                bytes: text.len(),
                limit: limits.max_spooled_result_bytes,
            });
        }
        // Refuse early, before writing a file for a task that cannot take it.
        {
            let tx = self.conn.transaction()?;
            let task = need_task(&tx, task_id)?;
            check_transition(&task, TaskStatus::Running, TaskStatus::Succeeded)?;
        }
        let size_bytes = text.len() as u64;
        let result = if text.len() <= limits.max_inline_result_bytes {
            StoredResult {
                storage: ResultStorage::Inline,
                final_response: text.to_owned(),
                spool_name: None,
                size_bytes,
                sha256: sha256_hex(text.as_bytes()),
            }
        } else {
            let (name, sha256) = spool::write(&self.state, task_id, text)?;
            StoredResult {
                storage: ResultStorage::Spool,
                final_response: utf8_prefix(text, limits.result_preview_bytes).to_owned(),
                spool_name: Some(name),
                size_bytes,
                sha256,
            }
        };
        match self.commit_result(task_id, &result, now) {
            Ok(()) => Ok(result),
            Err(error) => {
                if let Some(name) = &result.spool_name {
                    let _ = spool::remove(&self.state, name);
                }
                Err(error)
            }
        }
    }

    fn commit_result(
        &mut self,
        task_id: &str,
        result: &StoredResult,
        now: EpochMillis,
    ) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let task = need_task(&tx, task_id)?;
        check_transition(&task, TaskStatus::Running, TaskStatus::Succeeded)?;
        let size = i64::try_from(result.size_bytes).map_err(|_| StoreError::ResultTooLarge {
            bytes: usize::MAX,
            limit: self.limits.max_spooled_result_bytes,
        })?;
        tx.execute(
            "INSERT INTO results (task_id, storage, final_response, spool_name, size_bytes,
                 sha256, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                task_id,
                to_text(&result.storage, "result storage")?,
                result.final_response,
                result.spool_name,
                size,
                result.sha256,
                now
            ],
        )?;
        set_status(&tx, task_id, TaskStatus::Succeeded, now)?;
        if result.storage == ResultStorage::Spool {
            let spooled = EventPayload::TaskResultSpooled {
                size_bytes: result.size_bytes,
                sha256: result.sha256.clone(),
            };
            try_append(&tx, &self.limits, task_id, &spooled, now)?;
        }
        let completed = EventPayload::TaskCompleted {
            result_storage: result.storage,
            result_size_bytes: result.size_bytes,
        };
        try_append(&tx, &self.limits, task_id, &completed, now)?;
        tx.commit()?;
        Ok(())
    }

    /// One chunk of a spooled result (`task.result.read`, spec §6): at most
    /// `max_bytes` bytes from `offset_bytes`, never splitting a character.
    ///
    /// # Errors
    ///
    /// In the spec's order: `AGENT_TASK_NOT_FOUND`;
    /// `AGENT_RESULT_NOT_RETRIEVABLE` (no result, inline, or file gone);
    /// `INVALID_RESULT_LIMIT` (`max_bytes` outside `1..=` the chunk cap);
    /// `INVALID_RESULT_OFFSET` (negative, past the end, or inside a
    /// character); `AGENT_RESULT_STORAGE_ERROR` (unsafe or altered file);
    /// `INVALID_RESULT_LIMIT` when the chunk cannot hold one character.
    pub fn read_result(
        &mut self,
        task_id: &str,
        offset_bytes: i64,
        max_bytes: i64,
    ) -> Result<TaskResultChunk, StoreError> {
        let task = {
            let tx = self.conn.transaction()?;
            need_task(&tx, task_id)?
        };
        let Some(StoredResult {
            storage: ResultStorage::Spool,
            spool_name: Some(name),
            size_bytes,
            ..
        }) = task.result
        else {
            return Err(StoreError::ResultNotRetrievable);
        };
        let max_chunk = i64::try_from(self.limits.max_result_chunk_bytes).unwrap_or(i64::MAX);
        if !(1..=max_chunk).contains(&max_bytes) {
            return Err(StoreError::InvalidResultLimit);
        }
        let offset = u64::try_from(offset_bytes).map_err(|_| StoreError::InvalidResultOffset)?;
        let (file, file_size) = spool::open(&self.state, &name)?;
        if file_size != size_bytes {
            return Err(StoreError::spool(SpoolProblem::SizeMismatch, None));
        }
        if offset > size_bytes {
            return Err(StoreError::InvalidResultOffset);
        }
        let wanted = (size_bytes - offset).min(max_bytes.unsigned_abs());
        let mut buffer = vec![0_u8; usize::try_from(wanted).unwrap_or(usize::MAX)];
        file.read_exact_at(&mut buffer, offset)
            .map_err(|error| StoreError::spool(SpoolProblem::Io, Some(error)))?;
        // A continuation byte first means the offset is inside a character.
        if buffer.first().is_some_and(|byte| byte & 0xC0 == 0x80) {
            return Err(StoreError::InvalidResultOffset);
        }
        let text = match String::from_utf8(buffer) {
            Ok(text) => text,
            // `error_len() == None`: the chunk ends inside a character;
            // keep the complete ones, the client reads the rest next time.
            Err(error) if error.utf8_error().error_len().is_none() => {
                let valid = error.utf8_error().valid_up_to();
                let mut bytes = error.into_bytes();
                bytes.truncate(valid);
                if bytes.is_empty() {
                    return Err(StoreError::InvalidResultLimit);
                }
                String::from_utf8(bytes)
                    .map_err(|_| StoreError::spool(SpoolProblem::NotUtf8, None))?
            }
            Err(_) => return Err(StoreError::spool(SpoolProblem::NotUtf8, None)),
        };
        let next_offset_bytes = offset + text.len() as u64;
        Ok(TaskResultChunk {
            text,
            offset_bytes: offset,
            next_offset_bytes,
            eof: next_offset_bytes >= size_bytes,
            correlation_id: task.correlation_id,
        })
    }
}
