//! What the operator's `serverfs oauth` commands do to the state file:
//! list grants and clients, revoke, and mint one-time approval codes. The
//! running server sees each change at its next request.

use super::authorize::normalize_approval_code;
use super::store::{ApprovalCode, OAuthStore, State, StoreError};
use crate::secret;
use crate::tokens::now_ms;

/// Letters of an approval code (Crockford's base 32: no I, L, O or U, so
/// it reads back safely); 32 of them, so each byte maps evenly.
const CODE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Why an operator command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The state file.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The kernel gave no random bytes.
    #[error("cannot get random bytes: {0}")]
    Random(rustix::io::Errno),
    /// Nothing matched the revoke target.
    #[error("no OAuth grant or client {0:?} (see serverfs oauth list)")]
    NothingToRevoke(String),
}

/// The current state.
///
/// # Errors
///
/// The state file is unusable.
pub fn list(store: &OAuthStore) -> Result<State, AdminError> {
    Ok(store.list(now_ms())?)
}

/// Revokes the grant with id `target`, or every grant of the client
/// `target` together with its self-registration. Returns how many grants
/// went.
///
/// # Errors
///
/// [`AdminError::NothingToRevoke`] when nothing matched; file errors.
pub fn revoke(store: &OAuthStore, target: &str) -> Result<usize, AdminError> {
    let (grants, clients) = store.revoke(target)?;
    if grants == 0 && clients == 0 {
        return Err(AdminError::NothingToRevoke(target.to_owned()));
    }
    Ok(grants)
}

/// A new one-time approval code, valid for `minutes`, shown as
/// `XXXX-XXXX-XXXX` (60 random bits; only its hash is stored).
///
/// # Errors
///
/// No random bytes; file errors.
pub fn approval_code(store: &OAuthStore, minutes: u64) -> Result<String, AdminError> {
    let random = secret::random_bytes::<12>().map_err(AdminError::Random)?;
    let letters: String = random
        .iter()
        .map(|b| char::from(CODE_ALPHABET[usize::from(b % 32)]))
        .collect();
    let code = format!("{}-{}-{}", &letters[0..4], &letters[4..8], &letters[8..12]);
    let entry = ApprovalCode {
        sha256: secret::sha256_hex(&normalize_approval_code(&code)),
        expires_ms: now_ms() + minutes * 60_000,
    };
    store.add_approval_code(&entry, now_ms())?;
    Ok(code)
}
