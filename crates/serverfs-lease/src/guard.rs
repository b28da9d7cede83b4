//! Recovery-guard records: the persistent file `<lock_dir>/active/<stem>`
//! that blocks a workdir while a workspace-write provider may still be
//! writing (spec-agent-bridge.md §8.4).
//!
//! The lock alone cannot protect a workdir across a Bridge crash: the kernel
//! drops a dead holder's `flock`, but its provider may live on. The guard
//! survives, so "lock free + guard present" reads as recovery state until
//! reconciliation proves the provider stopped.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::artifacts::ACTIVE_DIR;
use crate::error::{ArtifactProblem, LeaseError, RecoveryReason};
use crate::identity::{LeaseId, is_guard_name};
use crate::liveness::{ProviderLiveness, probe_process_group};
use crate::sys::{self, DirAccess, FileAccess, Kind, OpenFailure};

/// The only guard schema this crate writes or accepts.
const SCHEMA_VERSION: u64 = 1;
/// Largest guard file accepted on read, and written. A real record is a few
/// hundred bytes; the cap keeps a corrupted or hostile file from being read
/// whole into memory.
pub(crate) const MAX_GUARD_BYTES: usize = 64 * 1024;

/// What a recovery guard records about the workspace-write task that owns
/// it. The lease id is not a field: it is fixed by the guard's location and
/// written (and checked on read) by this crate.
///
/// Times are integer epoch milliseconds (ARCHITECTURE.md §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardRecord {
    /// The Bridge task that owns the guard; only it may remove the guard.
    pub task_id: String,
    /// The runtime name (`codex`, `claude`, `acp-…`, `fake`).
    pub runtime: String,
    /// The workdir's alias, for diagnostics.
    pub workdir_alias: Option<String>,
    /// The task's correlation id, if any.
    pub correlation_id: Option<String>,
    /// The provider's session/thread id once known.
    pub native_session_id: Option<String>,
    /// The provider's turn id once known.
    pub native_turn_id: Option<String>,
    /// The provider child's pid once spawned.
    pub provider_pid: Option<i32>,
    /// The provider's process group once spawned (each provider runs in its
    /// own group, ARCHITECTURE.md §6): what [`probe_recorded_group`] probes.
    pub provider_pgid: Option<i32>,
    /// When the guard was first written. `None` only in a guard of an older
    /// Bridge that wrote text timestamps.
    pub created_at: Option<i64>,
    /// When the guard was last written (same caveat).
    pub updated_at: Option<i64>,
}

impl GuardRecord {
    /// A record for a task about to start, created and updated at `now_ms`;
    /// every optional field empty.
    pub fn new(task_id: impl Into<String>, runtime: impl Into<String>, now_ms: i64) -> GuardRecord {
        GuardRecord {
            task_id: task_id.into(),
            runtime: runtime.into(),
            workdir_alias: None,
            correlation_id: None,
            native_session_id: None,
            native_turn_id: None,
            provider_pid: None,
            provider_pgid: None,
            created_at: Some(now_ms),
            updated_at: Some(now_ms),
        }
    }

    /// The canonical encoding: compact JSON with sorted keys, explicit
    /// `null`s, and a final newline.
    pub(crate) fn encode(&self, id: &LeaseId) -> Result<Vec<u8>, serde_json::Error> {
        // Fields in byte order of their names: serde writes them in
        // declaration order, which makes the output canonical whatever
        // serde_json features the build unifies.
        #[derive(Serialize)]
        struct Wire<'a> {
            correlation_id: Option<&'a str>,
            created_at: Option<i64>,
            lease_id: &'a str,
            native_session_id: Option<&'a str>,
            native_turn_id: Option<&'a str>,
            provider_pgid: Option<i32>,
            provider_pid: Option<i32>,
            runtime: &'a str,
            schema_version: u64,
            slot: Option<u8>,
            task_id: &'a str,
            updated_at: Option<i64>,
            workdir_alias: Option<&'a str>,
        }
        let mut bytes = serde_json::to_vec(&Wire {
            correlation_id: self.correlation_id.as_deref(),
            created_at: self.created_at,
            lease_id: id.as_str(),
            native_session_id: self.native_session_id.as_deref(),
            native_turn_id: self.native_turn_id.as_deref(),
            provider_pgid: self.provider_pgid,
            provider_pid: self.provider_pid,
            runtime: &self.runtime,
            schema_version: SCHEMA_VERSION,
            slot: id.slot_number(),
            task_id: &self.task_id,
            updated_at: self.updated_at,
            workdir_alias: self.workdir_alias.as_deref(),
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// The default provider probe for [`HeldLease::reconcile`]: the recorded
/// process group's liveness ([`probe_process_group`]), or
/// [`ProviderLiveness::Unknown`] when no group was recorded (the provider
/// may have been spawned after the last guard update).
///
/// [`HeldLease::reconcile`]: crate::HeldLease::reconcile
pub fn probe_recorded_group(record: &GuardRecord) -> ProviderLiveness {
    match record.provider_pgid {
        Some(pgid) => probe_process_group(pgid),
        None => ProviderLiveness::Unknown,
    }
}

/// Decodes and validates a guard named `name` (spec §8.4 "Read/validation"):
/// a JSON object with `schema_version` 1 and string `task_id` and `runtime`;
/// `lease_id` if present must parse, and a legacy record without it is keyed
/// by its `slot`; when both are present they must agree; and the file name
/// must be the lease's stem, so a guard cannot claim another workdir.
fn decode(bytes: &[u8], name: &str) -> Result<(LeaseId, GuardRecord), RecoveryReason> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| RecoveryReason::Unreadable)?;
    let Value::Object(map) = value else {
        return Err(RecoveryReason::Invalid);
    };
    if map.get("schema_version").and_then(Value::as_u64) != Some(SCHEMA_VERSION) {
        return Err(RecoveryReason::Invalid);
    }
    let required = |key: &str| match map.get(key) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Err(RecoveryReason::Invalid),
    };
    let task_id = required("task_id")?;
    let runtime = required("runtime")?;
    let lease_id = optional_string(&map, "lease_id")?;
    let slot = match map.get("slot") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|slot| u8::try_from(slot).ok())
                .ok_or(RecoveryReason::Invalid)?,
        ),
    };
    let id = match (lease_id, slot) {
        (Some(text), slot) => {
            let id = LeaseId::parse(&text).map_err(|_| RecoveryReason::Invalid)?;
            if slot.is_some() && slot != id.slot_number() {
                return Err(RecoveryReason::Invalid);
            }
            id
        }
        (None, Some(slot)) => LeaseId::slot(slot).map_err(|_| RecoveryReason::Invalid)?,
        (None, None) => return Err(RecoveryReason::Invalid),
    };
    if id.stem() != name {
        return Err(RecoveryReason::Invalid);
    }
    let record = GuardRecord {
        task_id,
        runtime,
        workdir_alias: optional_string(&map, "workdir_alias")?,
        correlation_id: optional_string(&map, "correlation_id")?,
        native_session_id: optional_string(&map, "native_session_id")?,
        native_turn_id: optional_string(&map, "native_turn_id")?,
        provider_pid: optional_process_id(&map, "provider_pid")?,
        provider_pgid: optional_process_id(&map, "provider_pgid")?,
        // Older Bridges wrote text timestamps; they are diagnostics only, so
        // a non-integer reads as unknown rather than making the guard
        // invalid (which would need an operator to clear it).
        created_at: map.get("created_at").and_then(Value::as_i64),
        updated_at: map.get("updated_at").and_then(Value::as_i64),
    };
    Ok((id, record))
}

fn optional_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, RecoveryReason> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(RecoveryReason::Invalid),
    }
}

fn optional_process_id(map: &Map<String, Value>, key: &str) -> Result<Option<i32>, RecoveryReason> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .and_then(|id| i32::try_from(id).ok())
            .filter(|id| *id > 0)
            .map(Some)
            .ok_or(RecoveryReason::Invalid),
    }
}

/// Opens `active/` beneath the lock directory; `Ok(None)` when it does not
/// exist (then no guard can exist either). A symlink or non-directory is an
/// error.
pub(crate) fn open_active(
    lock_dir: BorrowedFd<'_>,
    access: DirAccess,
) -> io::Result<Option<OwnedFd>> {
    match sys::open_subdir(lock_dir, ACTIVE_DIR, access) {
        Ok(fd) => Ok(Some(fd)),
        Err(err) if sys::classify(&err) == OpenFailure::Missing => Ok(None),
        Err(err) => Err(err),
    }
}

/// Reads and validates the guard `name` beneath `active`; `Ok(None)` when
/// absent.
pub(crate) fn read_guard_in(
    active: BorrowedFd<'_>,
    name: &str,
    label: impl Fn() -> String,
) -> Result<Option<(LeaseId, GuardRecord)>, LeaseError> {
    let fail = |reason, source| LeaseError::recovery(label(), reason, source);
    let fd = match sys::open_existing_file(active, name, FileAccess::Read) {
        Ok(fd) => fd,
        Err(err) => {
            return match sys::classify(&err) {
                OpenFailure::Missing => Ok(None),
                OpenFailure::Symlink | OpenFailure::IsDirectory => {
                    Err(fail(RecoveryReason::Unsafe, Some(err)))
                }
                OpenFailure::NotDirectory | OpenFailure::Other => {
                    Err(fail(RecoveryReason::Unreadable, Some(err)))
                }
            };
        }
    };
    let meta =
        sys::metadata(fd.as_fd()).map_err(|err| fail(RecoveryReason::Unreadable, Some(err)))?;
    if meta.kind != Kind::Regular {
        return Err(fail(RecoveryReason::Unsafe, None));
    }
    let mut bytes = Vec::new();
    // One byte past the cap tells "at the cap" from "over it".
    let cap = u64::try_from(MAX_GUARD_BYTES + 1).unwrap_or(u64::MAX);
    File::from(fd)
        .take(cap)
        .read_to_end(&mut bytes)
        .map_err(|err| fail(RecoveryReason::Unreadable, Some(err)))?;
    if bytes.len() > MAX_GUARD_BYTES {
        return Err(fail(RecoveryReason::Invalid, None));
    }
    decode(&bytes, name)
        .map(Some)
        .map_err(|reason| fail(reason, None))
}

/// Opens the lock directory for the owner-side guard readers.
fn open_lock_dir_for_guards(lock_dir: &Path) -> Result<OwnedFd, LeaseError> {
    let fail =
        |problem, source| LeaseError::unsafe_path("the lock directory".to_owned(), problem, source);
    if !lock_dir.is_absolute() {
        return Err(fail(ArtifactProblem::NotAbsolute, None));
    }
    sys::open_dir(lock_dir, DirAccess::Lookup).map_err(|err| {
        let problem = match sys::classify(&err) {
            OpenFailure::Missing => ArtifactProblem::Missing,
            OpenFailure::NotDirectory | OpenFailure::Symlink => ArtifactProblem::NotDirectory,
            OpenFailure::IsDirectory | OpenFailure::Other => ArtifactProblem::Io,
        };
        fail(problem, Some(err))
    })
}

fn active_dir_error(err: io::Error) -> LeaseError {
    let problem = match sys::classify(&err) {
        OpenFailure::NotDirectory | OpenFailure::Symlink => ArtifactProblem::NotDirectory,
        OpenFailure::Missing | OpenFailure::IsDirectory | OpenFailure::Other => ArtifactProblem::Io,
    };
    LeaseError::unsafe_path(
        "the recovery guard directory".to_owned(),
        problem,
        Some(err),
    )
}

/// Reads the recovery guard of `id`, if any, without taking the lease
/// (owner side: the Bridge's status and startup paths).
///
/// # Errors
///
/// `LOCK_PATH_UNSAFE` when the lock directory or `active/` cannot be opened
/// safely; `WORKDIR_RECOVERY_REQUIRED` when the guard is not a regular file
/// (`Unsafe`), cannot be read or parsed (`Unreadable`), or is not a valid
/// record for `id` (`Invalid`).
pub fn read_guard(lock_dir: &Path, id: &LeaseId) -> Result<Option<GuardRecord>, LeaseError> {
    let dir = open_lock_dir_for_guards(lock_dir)?;
    let Some(active) = open_active(dir.as_fd(), DirAccess::Lookup).map_err(active_dir_error)?
    else {
        return Ok(None);
    };
    let found = read_guard_in(active.as_fd(), id.stem(), || id.label())?;
    Ok(found.map(|(_, record)| record))
}

/// Every recovery guard in the lock directory, with the lease it belongs to,
/// ordered by artifact stem. Names that are not guard names (temporary
/// files, junk) are ignored; a recognised guard that cannot be read or
/// validated is an error, never silently skipped (spec §8.4).
///
/// # Errors
///
/// As [`read_guard`], for the first guard that fails.
pub fn list_guards(lock_dir: &Path) -> Result<Vec<(LeaseId, GuardRecord)>, LeaseError> {
    let dir = open_lock_dir_for_guards(lock_dir)?;
    let Some(active) = open_active(dir.as_fd(), DirAccess::Read).map_err(active_dir_error)? else {
        return Ok(Vec::new());
    };
    let mut names = sys::list_names(active.as_fd()).map_err(active_dir_error)?;
    names.retain(|name| is_guard_name(name));
    names.sort();
    let mut guards = Vec::with_capacity(names.len());
    for name in names {
        let label = || format!("the recovery guard {name}");
        if let Some(found) = read_guard_in(active.as_fd(), &name, label)? {
            guards.push(found);
        }
    }
    Ok(guards)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alias(name: &str) -> LeaseId {
        LeaseId::alias(name).unwrap()
    }

    #[test]
    fn encoding_is_canonical_and_round_trips() {
        let id = alias("repo");
        let mut record = GuardRecord::new("agt_1", "codex", 1_700_000_000_000);
        record.workdir_alias = Some("repo".into());
        record.provider_pgid = Some(4242);
        let bytes = record.encode(&id).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"correlation_id":null,"created_at":1700000000000,"lease_id":"alias:repo","#,
                r#""native_session_id":null,"native_turn_id":null,"provider_pgid":4242,"#,
                r#""provider_pid":null,"runtime":"codex","schema_version":1,"slot":null,"#,
                r#""task_id":"agt_1","updated_at":1700000000000,"workdir_alias":"repo"}"#,
                "\n"
            )
        );
        assert_eq!(decode(&bytes, id.stem()), Ok((id, record)));
    }

    #[test]
    fn slot_leases_record_their_slot() {
        let id = LeaseId::slot(3).unwrap();
        let bytes = GuardRecord::new("t", "fake", 0).encode(&id).unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value["slot"], Value::from(3));
        assert_eq!(value["lease_id"], Value::from("slot:03"));
    }

    #[test]
    fn legacy_slot_only_payload_is_readable() {
        let legacy = br#"{"schema_version":1,"slot":2,"task_id":"t","runtime":"codex","created_at":"2026-01-01T00:00:00Z"}"#;
        let (id, record) = decode(legacy, "02").unwrap();
        assert_eq!(id, LeaseId::slot(2).unwrap());
        assert_eq!(record.task_id, "t");
        assert_eq!(record.created_at, None);
    }

    #[test]
    fn invalid_payloads_are_refused() {
        let repo = alias("repo");
        let stem = repo.stem();
        let cases: &[(&[u8], &str, RecoveryReason)] = &[
            (b"not json", stem, RecoveryReason::Unreadable),
            (b"[]", stem, RecoveryReason::Invalid),
            (br#"{"schema_version":2,"lease_id":"alias:repo","task_id":"t","runtime":"r"}"#, stem, RecoveryReason::Invalid),
            (br#"{"schema_version":1,"lease_id":"alias:repo","task_id":7,"runtime":"r"}"#, stem, RecoveryReason::Invalid),
            (br#"{"schema_version":1,"lease_id":"alias:repo","task_id":"t"}"#, stem, RecoveryReason::Invalid),
            // A guard cannot claim another workdir.
            (br#"{"schema_version":1,"lease_id":"alias:other","task_id":"t","runtime":"r"}"#, stem, RecoveryReason::Invalid),
            // Contradictory slot.
            (br#"{"schema_version":1,"lease_id":"slot:02","slot":3,"task_id":"t","runtime":"r"}"#, "02", RecoveryReason::Invalid),
            (br#"{"schema_version":1,"lease_id":"alias:repo","slot":1,"task_id":"t","runtime":"r"}"#, stem, RecoveryReason::Invalid),
            // Neither lease id nor slot.
            (br#"{"schema_version":1,"task_id":"t","runtime":"r"}"#, stem, RecoveryReason::Invalid),
            (br#"{"schema_version":1,"lease_id":"bogus","task_id":"t","runtime":"r"}"#, stem, RecoveryReason::Invalid),
            (br#"{"schema_version":1,"lease_id":"alias:repo","task_id":"t","runtime":"r","provider_pgid":-4}"#, stem, RecoveryReason::Invalid),
            (br#"{"schema_version":1,"lease_id":"alias:repo","task_id":"t","runtime":"r","native_turn_id":5}"#, stem, RecoveryReason::Invalid),
        ];
        for (bytes, name, reason) in cases {
            assert_eq!(
                decode(bytes, name).map(|_| ()),
                Err(*reason),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn the_recorded_group_decides_the_default_probe() {
        let mut record = GuardRecord::new("t", "fake", 0);
        assert_eq!(probe_recorded_group(&record), ProviderLiveness::Unknown);
        record.provider_pgid = Some(1);
        assert_eq!(probe_recorded_group(&record), ProviderLiveness::Unknown);
    }
}
