//! Bearer tokens for the HTTP transport.
//!
//! A token is `sfs_` plus 43 URL-safe base64 characters (32 random bytes
//! from the kernel). It is shown once, at creation; the token file keeps
//! only its SHA-256, its name and its creation time, in a JSON file with
//! mode 0600 written atomically (temporary file + rename). Verification
//! hashes the presented token and compares it with every stored hash in
//! constant time. The server re-reads the file when it changes, so a
//! revocation takes effect on the next request.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::private_file::{self, FileStamp, ModeProblem, PrivateFileError};
use crate::secret;

/// Prefix of every bearer token.
pub const TOKEN_PREFIX: &str = "sfs_";
const FILE_VERSION: u32 = 1;

/// Why a token operation failed. The messages name the token file (an
/// operator's own path: these errors reach the operator's terminal, never
/// a client) and never a token or hash.
#[derive(Debug, Error)]
pub enum TokenError {
    /// The file could not be read or inspected.
    #[error("token file {}: {source}", .path.display())]
    Read {
        /// The token file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not JSON of the expected shape.
    #[error("token file {} is malformed: {source}", .path.display())]
    Malformed {
        /// The token file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The file has another format version.
    #[error("token file {} has version {found}, expected {FILE_VERSION}", .path.display())]
    Version {
        /// The token file.
        path: PathBuf,
        /// The version it has.
        found: u32,
    },
    /// Something else than a regular file is at the path.
    #[error("token file {} is not a regular file", .path.display())]
    NotRegular {
        /// The token file.
        path: PathBuf,
    },
    /// Group or others may read or write the file.
    #[error("token file {} has mode {mode:03o}; it must be private (chmod 600)", .path.display())]
    NotPrivate {
        /// The token file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The name breaks the naming rule.
    #[error(
        "invalid token name {0:?}: use 1-64 letters, digits, '_', '.' or '-', starting with a \
         letter or digit"
    )]
    InvalidName(String),
    /// A token of that name exists.
    #[error("a token named {0:?} exists already; revoke it first")]
    Duplicate(String),
    /// The kernel gave no random bytes.
    #[error("cannot get random bytes: {0}")]
    Random(rustix::io::Errno),
    /// The file (or its directory) could not be written.
    #[error("writing {}: {source}", .path.display())]
    Write {
        /// What was being written.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// One stored token: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Operator-chosen name (recorded in the audit log).
    pub name: String,
    /// Lowercase hex SHA-256 of the token.
    pub sha256: String,
    /// Creation time, epoch milliseconds.
    pub created_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    version: u32,
    tokens: Vec<TokenEntry>,
}

/// The token file at a path.
#[derive(Debug)]
pub struct TokenStore {
    path: PathBuf,
    /// Entries as of the file's last seen state.
    cache: Mutex<Cached>,
}

/// The entries as of the file's stamp (none: not read yet, or missing).
type Cached = (Option<FileStamp>, Vec<TokenEntry>);

impl TokenStore {
    /// A store at `path` (the file may not exist yet).
    pub fn new(path: PathBuf) -> TokenStore {
        TokenStore {
            path,
            cache: Mutex::new((None, Vec::new())),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the entries. A missing file has none.
    ///
    /// # Errors
    ///
    /// Unreadable or malformed file, or one whose mode lets group or
    /// others read or write it.
    pub fn entries(&self) -> Result<Vec<TokenEntry>, TokenError> {
        let read = |source| TokenError::Read {
            path: self.path.clone(),
            source,
        };
        let meta = match std::fs::symlink_metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(read(e)),
        };
        check_private(&self.path, &meta)?;
        let text = std::fs::read_to_string(&self.path).map_err(read)?;
        let file: TokenFile =
            serde_json::from_str(&text).map_err(|source| TokenError::Malformed {
                path: self.path.clone(),
                source,
            })?;
        if file.version != FILE_VERSION {
            return Err(TokenError::Version {
                path: self.path.clone(),
                found: file.version,
            });
        }
        Ok(file.tokens)
    }

    /// Creates a token named `name`, stores its hash, returns the token.
    ///
    /// # Errors
    ///
    /// Invalid or duplicate name; file errors.
    pub fn create(&self, name: &str) -> Result<String, TokenError> {
        self.issue(name, false).map(|(token, _)| token)
    }

    /// Creates a token named `name` in place of any token of that name,
    /// in one write of the file (so no moment has neither, or both), and
    /// returns it with whether an earlier token of the name was revoked.
    ///
    /// # Errors
    ///
    /// Invalid name; file errors.
    pub fn replace(&self, name: &str) -> Result<(String, bool), TokenError> {
        self.issue(name, true)
    }

    /// The new token, and whether it replaced (revoked) one of the name.
    fn issue(&self, name: &str, replace: bool) -> Result<(String, bool), TokenError> {
        check_name(name)?;
        let mut entries = self.entries()?;
        let before = entries.len();
        if replace {
            entries.retain(|e| e.name != name);
        } else if entries.iter().any(|e| e.name == name) {
            return Err(TokenError::Duplicate(name.to_owned()));
        }
        let replaced = entries.len() != before;
        let token = secret::random_token(TOKEN_PREFIX).map_err(TokenError::Random)?;
        entries.push(TokenEntry {
            name: name.to_owned(),
            sha256: secret::sha256_hex(&token),
            created_ms: now_ms(),
        });
        self.write(entries)?;
        Ok((token, replaced))
    }

    /// Removes the token named `name`; false if there was none.
    ///
    /// # Errors
    ///
    /// File errors.
    pub fn revoke(&self, name: &str) -> Result<bool, TokenError> {
        let mut entries = self.entries()?;
        let before = entries.len();
        entries.retain(|e| e.name != name);
        if entries.len() == before {
            return Ok(false);
        }
        self.write(entries)?;
        Ok(true)
    }

    /// The stored token equal to `presented`, if any. Re-reads the file
    /// when its modification time or size changed.
    ///
    /// # Errors
    ///
    /// The file became unreadable, malformed or too permissive (fail
    /// closed: no request is authenticated then).
    pub fn verify(&self, presented: &str) -> Result<Option<TokenEntry>, TokenError> {
        let cache = self.fresh()?;
        let presented_hash = secret::sha256_hex(presented);
        let mut found = None;
        // Compare with every entry, without early exit, so timing reveals
        // neither which entry matched nor how much of a hash did.
        for entry in &cache.1 {
            if secret::matches_hash(&presented_hash, &entry.sha256) {
                found = Some(entry.clone());
            }
        }
        Ok(found)
    }

    /// The hashes of the tokens stored now (re-reading the file when it
    /// changed): what tells that a token was revoked or replaced.
    ///
    /// # Errors
    ///
    /// As [`TokenStore::verify`].
    pub fn current_hashes(&self) -> Result<Vec<String>, TokenError> {
        Ok(self.fresh()?.1.iter().map(|e| e.sha256.clone()).collect())
    }

    /// The cached entries, re-read first when the file's stamp changed.
    fn fresh(&self) -> Result<std::sync::MutexGuard<'_, Cached>, TokenError> {
        let stamp = private_file::stamp(&self.path);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.0 != stamp || stamp.is_none() {
            *cache = (stamp, self.entries()?);
        }
        Ok(cache)
    }

    fn write(&self, entries: Vec<TokenEntry>) -> Result<(), TokenError> {
        // Encoding plain strings and integers cannot fail; were it to, the
        // file is not written.
        let text = serde_json::to_string_pretty(&TokenFile {
            version: FILE_VERSION,
            tokens: entries,
        })
        .map_err(|e| TokenError::Write {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        private_file::write(&self.path, &text).map_err(|e| match e {
            PrivateFileError::Write { path, source } => TokenError::Write { path, source },
        })
    }
}

/// Token names: 1–64 characters of `[A-Za-z0-9_.-]`, starting with a
/// letter or digit.
///
/// # Errors
///
/// [`TokenError::InvalidName`].
pub fn check_name(name: &str) -> Result<(), TokenError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(TokenError::InvalidName(name.to_owned()))
    }
}

/// The token file must be private: a token hash readable by others is a
/// target for offline guessing, and one writable by others lets them add
/// their own token.
///
/// # Errors
///
/// [`TokenError::NotRegular`] or [`TokenError::NotPrivate`].
pub fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), TokenError> {
    match private_file::mode_problem(meta) {
        None => Ok(()),
        Some(ModeProblem::NotRegular) => Err(TokenError::NotRegular {
            path: path.to_path_buf(),
        }),
        Some(ModeProblem::NotPrivate(mode)) => Err(TokenError::NotPrivate {
            path: path.to_path_buf(),
            mode,
        }),
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn create_verify_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("sub/tokens.json"));
        let token = store.create("laptop").unwrap();
        assert!(token.starts_with("sfs_") && token.len() == 47, "{token}");
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(!text.contains(&token), "the token itself is never stored");
        assert_eq!(
            store.verify(&token).unwrap().map(|e| e.name).as_deref(),
            Some("laptop")
        );
        assert_eq!(store.verify("sfs_wrong").unwrap(), None);
        assert!(store.create("laptop").is_err(), "duplicate names refused");
        let other = store.create("ci").unwrap();
        assert_ne!(other, token);
        assert!(store.revoke("laptop").unwrap());
        assert!(!store.revoke("laptop").unwrap());
        assert_eq!(
            store.verify(&token).unwrap(),
            None,
            "revocation is seen at once"
        );
        assert_eq!(
            store.verify(&other).unwrap().map(|e| e.name).as_deref(),
            Some("ci")
        );
        let names: Vec<String> = store
            .entries()
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["ci"]);
    }

    #[test]
    fn replace_swaps_one_name_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("tokens.json"));
        let (first, replaced_none) = store.replace("quick").unwrap();
        let other = store.create("other").unwrap();
        let (second, replaced_first) = store.replace("quick").unwrap();
        assert!(!replaced_none && replaced_first);
        assert_ne!(first, second);
        assert_eq!(store.verify(&first).unwrap(), None);
        let hashes = store.current_hashes().unwrap();
        assert_eq!(hashes.len(), 2, "the replaced token's hash is gone");
        assert!(hashes.contains(&store.verify(&second).unwrap().unwrap().sha256));
        assert_eq!(
            store.verify(&second).unwrap().map(|e| e.name).as_deref(),
            Some("quick")
        );
        assert_eq!(
            store.verify(&other).unwrap().map(|e| e.name).as_deref(),
            Some("other")
        );
        let names: Vec<String> = store
            .entries()
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["other", "quick"]);
        assert!(matches!(
            store.replace("bad name"),
            Err(TokenError::InvalidName(_))
        ));
    }

    #[test]
    fn names_and_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("tokens.json"));
        for bad in ["", "-x", "a b", "a/b", &"x".repeat(65)] {
            assert!(store.create(bad).is_err(), "{bad:?}");
        }
        store.create("ok.name-1_x").unwrap();
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = store.entries().unwrap_err();
        assert!(
            matches!(err, TokenError::NotPrivate { mode: 0o644, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("chmod 600"), "{err}");
        assert!(store.verify("anything").is_err(), "fail closed");
    }
}
