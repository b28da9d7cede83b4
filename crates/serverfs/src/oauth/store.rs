//! The OAuth state file: dynamically registered clients, grants (one per
//! approval: its scopes, and the hashes of its current access and refresh
//! tokens) and the one-time approval codes `serverfs oauth approve-code`
//! prints. Like the bearer token file it holds hashes only, has mode 0600
//! and is replaced atomically; every change happens under an exclusive
//! lock, so the server and the `serverfs oauth` commands never lose each
//! other's changes. The server re-reads it when it changes, so a
//! revocation takes effect on the next request.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::private_file::{self, FileStamp, ModeProblem, PrivateFileError};

const STATE_VERSION: u32 = 1;

/// Why the state file cannot be used. Messages name the file (an
/// operator's path) and never a token or hash.
#[derive(Debug, Error)]
pub enum StoreError {
    /// It could not be read.
    #[error("OAuth state file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// It is not JSON of the expected shape.
    #[error("OAuth state file {} is malformed: {source}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// It has another format version.
    #[error("OAuth state file {} has version {found}, expected {STATE_VERSION}", .path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        found: u32,
    },
    /// Not a regular file, or readable or writable by others.
    #[error("OAuth state file {} must be a regular file of mode 0600 (chmod 600)", .path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
    },
    /// It could not be written or locked.
    #[error(transparent)]
    Write(#[from] PrivateFileError),
}

/// Everything the file holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    version: u32,
    /// Clients that registered themselves (RFC 7591).
    #[serde(default)]
    pub clients: Vec<RegisteredClient>,
    /// Live grants.
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// Unused approval codes.
    #[serde(default)]
    pub approval_codes: Vec<ApprovalCode>,
}

/// A dynamically registered client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisteredClient {
    /// Its `client_id` (random).
    pub client_id: String,
    /// The name it gave (shown on the consent page as "calls itself").
    pub client_name: String,
    /// Its redirect URIs, each loopback or allowlisted.
    pub redirect_uris: Vec<String>,
    /// Registration time, epoch milliseconds.
    pub created_ms: u64,
}

/// One approval: what a client may do, and its current tokens' hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// Short id the `serverfs oauth` commands name it by.
    pub id: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The client's name at approval.
    pub client_name: String,
    /// Granted scopes (space-separated).
    pub scopes: String,
    /// The canonical resource URI its tokens are bound to (audience).
    pub resource: String,
    /// How the owner proved ownership: `token:NAME` or `approval code`.
    pub approved_by: String,
    /// Approval time, epoch milliseconds.
    pub created_ms: u64,
    /// Hash of the authorization code it was issued for (a replayed code
    /// revokes the grant).
    pub code_sha256: String,
    /// Hash of the current access token.
    pub access_sha256: String,
    /// When the access token expires, epoch milliseconds.
    pub access_expires_ms: u64,
    /// Hash of the current refresh token.
    pub refresh_sha256: String,
    /// When the refresh token expires (and the grant with it).
    pub refresh_expires_ms: u64,
    /// Hashes of refresh tokens already rotated away: presenting one
    /// again means a copy leaked, and revokes the grant.
    #[serde(default)]
    pub retired_refresh_sha256: Vec<String>,
}

/// A one-time approval code (its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalCode {
    /// Hash of the code.
    pub sha256: String,
    /// When it stops working, epoch milliseconds.
    pub expires_ms: u64,
}

/// The state file at a path.
#[derive(Debug)]
pub struct OAuthStore {
    path: PathBuf,
    cache: Mutex<(Option<FileStamp>, Arc<State>)>,
}

impl OAuthStore {
    /// A store at `path` (the file may not exist yet).
    pub fn new(path: PathBuf) -> OAuthStore {
        OAuthStore {
            path,
            cache: Mutex::new((None, Arc::new(State::default()))),
        }
    }

    /// Reads the file; a missing one is empty.
    ///
    /// # Errors
    ///
    /// Unreadable, malformed or not private.
    pub fn load(&self) -> Result<State, StoreError> {
        let read = |source| StoreError::Read {
            path: self.path.clone(),
            source,
        };
        let meta = match std::fs::symlink_metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(State {
                    version: STATE_VERSION,
                    ..State::default()
                });
            }
            Err(e) => return Err(read(e)),
        };
        if matches!(
            private_file::mode_problem(&meta),
            Some(ModeProblem::NotRegular | ModeProblem::NotPrivate(_))
        ) {
            return Err(StoreError::NotPrivate {
                path: self.path.clone(),
            });
        }
        let text = std::fs::read_to_string(&self.path).map_err(read)?;
        let state: State = serde_json::from_str(&text).map_err(|source| StoreError::Malformed {
            path: self.path.clone(),
            source,
        })?;
        if state.version != STATE_VERSION {
            return Err(StoreError::Version {
                path: self.path.clone(),
                found: state.version,
            });
        }
        Ok(state)
    }

    /// The state as of the file's last change (re-read when its stamp
    /// changed): what each request is checked against.
    ///
    /// # Errors
    ///
    /// As [`OAuthStore::load`] (fail closed).
    pub fn snapshot(&self) -> Result<Arc<State>, StoreError> {
        let stamp = private_file::stamp(&self.path);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.0 != stamp || stamp.is_none() {
            *cache = (stamp, Arc::new(self.load()?));
        }
        Ok(cache.1.clone())
    }

    /// Applies `change` to the current state under the file's lock, drops
    /// what expired before `now_ms`, and writes the result.
    ///
    /// # Errors
    ///
    /// As [`OAuthStore::load`], or the file cannot be locked or written.
    pub fn update<R>(
        &self,
        now_ms: u64,
        change: impl FnOnce(&mut State) -> R,
    ) -> Result<R, StoreError> {
        let _lock = private_file::lock(&self.path)?;
        let mut state = self.load()?;
        let result = change(&mut state);
        state.grants.retain(|g| g.refresh_expires_ms > now_ms);
        state.approval_codes.retain(|c| c.expires_ms > now_ms);
        state.version = STATE_VERSION;
        let text = serde_json::to_string_pretty(&state).map_err(|e| {
            StoreError::Write(PrivateFileError::Write {
                path: self.path.clone(),
                source: io::Error::other(e),
            })
        })?;
        private_file::write(&self.path, &text)?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn updates_are_private_and_prune_what_expired() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/oauth.json");
        let store = OAuthStore::new(path.clone());
        assert!(store.load().unwrap().grants.is_empty());
        store
            .update(1_000, |state| {
                state.approval_codes.push(ApprovalCode {
                    sha256: "a".repeat(64),
                    expires_ms: 2_000,
                });
            })
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(store.snapshot().unwrap().approval_codes.len(), 1);
        store.update(3_000, |_| ()).unwrap();
        assert!(
            store.snapshot().unwrap().approval_codes.is_empty(),
            "expired code pruned"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = store.snapshot().unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }
}
