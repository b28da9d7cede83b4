//! The capability snapshot of one ACP profile (seed 002 §8.2): what the
//! agent advertised in its last successful `initialize` (and, once a
//! session was opened, whether it offers a model selector), with when it
//! was measured.
//!
//! `list_agent_runtimes` must never start an agent, so it reports this
//! snapshot: conservative flags before the first measurement, measured ones
//! after it. Every task's handshake and every probe refresh it. It is kept
//! in memory and, when the Bridge gives it a file, in a small private JSON
//! file in the Bridge's state directory, keyed by a fingerprint of the
//! profile's launch configuration: a changed profile starts unmeasured
//! again, and a restart keeps what was measured. The file holds protocol
//! metadata only (versions and booleans), never a prompt, path or secret.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::connect::Handshake;

/// Largest snapshot file read back: a few hundred bytes are expected.
const MAX_FILE_BYTES: u64 = 16 * 1024;

/// What was measured, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Measured {
    /// When (epoch ms).
    pub measured_at: i64,
    /// `agentInfo.name`.
    pub agent_name: Option<String>,
    /// `agentInfo.version`.
    pub agent_version: Option<String>,
    /// `loadSession`.
    pub load_session: bool,
    /// `sessionCapabilities.resume`.
    pub resume_session: bool,
    /// Whether a session showed a model selector (a config option of
    /// category `model`, or a `models` list); `None` until a session was
    /// opened.
    pub model_selector: Option<bool>,
}

impl Measured {
    /// Whether a later task can continue a session of this agent.
    pub(crate) fn continues_sessions(&self) -> bool {
        self.resume_session || self.load_session
    }
}

/// The file's content.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotFile {
    fingerprint: String,
    measured: Measured,
}

/// The snapshot of one profile.
#[derive(Debug)]
pub(crate) struct Snapshot {
    file: Option<PathBuf>,
    fingerprint: String,
    current: Mutex<Option<Measured>>,
}

/// The current time in epoch milliseconds (0 before 1970, which no clock
/// of a running Bridge reports).
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// The fingerprint of a launch configuration: SHA-256 over its parts,
/// each length-prefixed so that no two configurations share an encoding.
pub(crate) fn fingerprint<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut digest = Sha256::new();
    for part in parts {
        digest.update(part.len().to_le_bytes());
        digest.update(part.as_bytes());
    }
    digest
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl Snapshot {
    /// The snapshot for a profile with `fingerprint`, read from `file`
    /// whenever it holds one of the same fingerprint (anything else in it
    /// — another fingerprint, an unreadable or oversized file — counts as
    /// unmeasured).
    pub(crate) fn load(file: Option<PathBuf>, fingerprint: String) -> Snapshot {
        Snapshot {
            file,
            fingerprint,
            current: Mutex::new(None),
        }
    }

    /// The last measurement, if any: the file's, when it holds a newer one
    /// than this process took (`serverfs-agent-bridge probe` measures in a
    /// process of its own, while the Bridge serves).
    pub(crate) fn get(&self) -> Option<Measured> {
        self.refreshed().clone()
    }

    /// The measurement held, after taking the file's when it is newer.
    fn refreshed(&self) -> MutexGuard<'_, Option<Measured>> {
        let stored = self
            .file
            .as_deref()
            .and_then(read_file)
            .filter(|stored| stored.fingerprint == self.fingerprint)
            .map(|stored| stored.measured);
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stored) = stored
            && current
                .as_ref()
                .is_none_or(|held| held.measured_at < stored.measured_at)
        {
            *current = Some(stored);
        }
        current
    }

    /// Records a successful `initialize`, keeping what a session showed
    /// earlier.
    pub(crate) fn record_handshake(&self, handshake: &Handshake) {
        self.update(|current| {
            let model_selector = current
                .as_ref()
                .and_then(|measured| measured.model_selector);
            *current = Some(Measured {
                measured_at: now_ms(),
                agent_name: handshake.agent_name.clone(),
                agent_version: handshake.agent_version.clone(),
                load_session: handshake.load_session,
                resume_session: handshake.resume_session,
                model_selector,
            });
            true
        });
    }

    /// Records whether an opened session showed a model selector (after
    /// the handshake that opened it, so there is a measurement to add to).
    pub(crate) fn record_model_selector(&self, present: bool) {
        self.update(|current| match current {
            Some(measured) if measured.model_selector != Some(present) => {
                measured.model_selector = Some(present);
                true
            }
            Some(_) | None => false,
        });
    }

    /// Applies `change` under the lock and stores the result when it says
    /// something changed.
    fn update(&self, change: impl FnOnce(&mut Option<Measured>) -> bool) {
        let stored = {
            let mut current = self.refreshed();
            if !change(&mut current) {
                return;
            }
            current.clone()
        };
        let (Some(file), Some(measured)) = (&self.file, stored) else {
            return;
        };
        let stored = SnapshotFile {
            fingerprint: self.fingerprint.clone(),
            measured,
        };
        if write_file(file, &stored).is_err() {
            // The snapshot is a report, not state a turn needs: a full
            // disk costs the next restart its measurement, nothing else.
            tracing::debug!("the ACP capability snapshot was not stored");
        }
    }
}

fn read_file(path: &Path) -> Option<SnapshotFile> {
    let file = std::fs::File::open(path).ok()?;
    if file.metadata().ok()?.len() > MAX_FILE_BYTES {
        return None;
    }
    serde_json::from_reader(std::io::BufReader::new(file)).ok()
}

/// Writes `stored` atomically: a temporary file beside it (0600, as
/// `tempfile` creates them), then a rename, so a crash leaves the old
/// snapshot or the new one.
fn write_file(path: &Path, stored: &SnapshotFile) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the snapshot file has no directory"))?;
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut temporary = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut temporary, stored)?;
    temporary.flush()?;
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handshake(version: &str) -> Handshake {
        Handshake {
            agent_name: Some("mock".to_owned()),
            agent_version: Some(version.to_owned()),
            load_session: true,
            resume_session: false,
        }
    }

    #[test]
    fn fingerprints_separate_their_parts() {
        assert_ne!(fingerprint(["ab", "c"]), fingerprint(["a", "bc"]));
        assert_eq!(fingerprint(["a"]), fingerprint(["a"]));
        assert_eq!(fingerprint(["a"]).len(), 64);
    }

    #[test]
    fn a_measurement_survives_a_restart_but_not_a_changed_profile() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("acp").join("acp-mock.json");
        let snapshot = Snapshot::load(Some(file.clone()), "f1".to_owned());
        assert_eq!(snapshot.get(), None, "unmeasured at first");
        snapshot.record_handshake(&handshake("1.0"));
        let measured = snapshot.get().unwrap();
        assert!(measured.measured_at > 0 && measured.model_selector.is_none());
        snapshot.record_model_selector(true);
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "private: {mode:o}");
        }
        let again = Snapshot::load(Some(file.clone()), "f1".to_owned())
            .get()
            .unwrap();
        assert_eq!(again.model_selector, Some(true));
        assert_eq!(again.agent_version.as_deref(), Some("1.0"));
        // A new handshake keeps what a session showed.
        snapshot.record_handshake(&handshake("1.1"));
        assert_eq!(snapshot.get().unwrap().model_selector, Some(true));
        assert_eq!(
            Snapshot::load(Some(file.clone()), "f2".to_owned()).get(),
            None
        );
        std::fs::write(&file, "{not json").unwrap();
        assert_eq!(Snapshot::load(Some(file), "f1".to_owned()).get(), None);
    }

    #[test]
    fn a_measurement_of_another_process_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("acp-mock.json");
        let serving = Snapshot::load(Some(file.clone()), "f".to_owned());
        serving.record_handshake(&handshake("1.0"));
        std::thread::sleep(std::time::Duration::from_millis(5));
        let probe = Snapshot::load(Some(file), "f".to_owned());
        probe.record_handshake(&handshake("2.0"));
        assert_eq!(serving.get().unwrap().agent_version.as_deref(), Some("2.0"));
    }

    #[test]
    fn without_a_file_the_snapshot_lives_in_memory() {
        let snapshot = Snapshot::load(None, "f".to_owned());
        snapshot.record_model_selector(false);
        assert_eq!(snapshot.get(), None, "no handshake yet: nothing measured");
        snapshot.record_handshake(&handshake("2"));
        snapshot.record_model_selector(false);
        assert_eq!(snapshot.get().unwrap().model_selector, Some(false));
    }
}
