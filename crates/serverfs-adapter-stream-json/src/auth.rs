//! The authentication payload file a CLI reads its credentials choice from
//! (Qoder, spec-adapters.md §4): written for each CLI process into a fresh
//! private directory (`0700`, the file `0600`), named to the CLI by a
//! variable, and removed with its directory once the process has exited.
//!
//! A personal access token is read from the Bridge's own environment when
//! the CLI starts and goes into that file only: never into the CLI's
//! environment or argv, never into a log or an error.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use serverfs_agent_runtime::{AgentError, BridgeErrorCode};

use crate::flavor::AuthPayload;

/// How a CLI that takes an auth payload file authenticates; a flavor
/// without one (Claude Code) ignores it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AuthSource {
    /// Reuse the CLI's own local login (`qodercli login`).
    #[default]
    LocalLogin,
    /// A personal access token, the value of the Bridge's environment
    /// variable `variable` when each CLI starts.
    AccessToken {
        /// The variable holding the token (a name, never the value).
        variable: String,
    },
}

impl AuthSource {
    /// The variable this source reads its secret from: the CLI's own
    /// environment never gets it, whatever passthrough list names it.
    pub fn secret_variable(&self) -> Option<&str> {
        match self {
            AuthSource::LocalLogin => None,
            AuthSource::AccessToken { variable } => Some(variable),
        }
    }
}

/// The payload file's name in its private directory.
const FILE_NAME: &str = "auth.json";

/// A written payload file; dropping it removes the file and its directory.
#[derive(Debug)]
pub struct PayloadFile {
    dir: tempfile::TempDir,
}

impl PayloadFile {
    /// Writes the payload of `source` in `payload`'s shape. `display`
    /// names the CLI in errors.
    ///
    /// # Errors
    ///
    /// `AGENT_RUNTIME_NOT_READY` when the token variable is unset or empty
    /// (the message names the variable, never a value), or when the file
    /// cannot be written.
    pub fn write(
        payload: &AuthPayload,
        source: &AuthSource,
        display: &str,
    ) -> Result<PayloadFile, AgentError> {
        let content = match source {
            AuthSource::LocalLogin => (payload.login)(),
            AuthSource::AccessToken { variable } => {
                let token = std::env::var(variable)
                    .ok()
                    .filter(|token| !token.is_empty())
                    .ok_or_else(|| {
                        AgentError::new(
                            BridgeErrorCode::AgentRuntimeNotReady,
                            format!(
                                "{display} authenticates with a personal access token, but \
                                 {variable} is not set in the Bridge's environment"
                            ),
                        )
                    })?;
                (payload.access_token)(&token)
            }
        };
        let failed = || {
            AgentError::new(
                BridgeErrorCode::AgentRuntimeNotReady,
                format!("the {display} auth payload file could not be written"),
            )
        };
        let dir = private_dir("serverfs-auth").map_err(|_| failed())?;
        let path = dir.path().join(FILE_NAME);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|_| failed())?;
        file.write_all(content.to_string().as_bytes())
            .map_err(|_| failed())?;
        Ok(PayloadFile { dir })
    }

    /// The file's path, for the CLI's variable.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(FILE_NAME)
    }

    /// The private directory holding it.
    #[cfg(test)]
    fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// A fresh directory only the Bridge's user may enter (`0700`; `tempfile`
/// would otherwise create it with the umask's mode, often `0755`), removed
/// with everything in it when dropped.
pub(crate) fn private_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;

    const PAYLOAD: AuthPayload = AuthPayload {
        variable: "X_AUTH_FILE",
        login: || json!({ "type": "login" }),
        access_token: |token| json!({ "type": "token", "token": token }),
    };

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn the_login_payload_is_private_and_goes_with_its_directory() {
        let file = PayloadFile::write(&PAYLOAD, &AuthSource::LocalLogin, "Qoder").unwrap();
        assert_eq!(mode(&file.path()), 0o600);
        assert_eq!(mode(file.dir()), 0o700);
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap();
        assert_eq!(written, json!({ "type": "login" }));
        let dir = file.dir().to_owned();
        drop(file);
        assert!(!dir.exists());
    }

    #[test]
    fn a_missing_token_is_not_ready_and_named_without_a_value() {
        let source = AuthSource::AccessToken {
            variable: "SERVERFS_TEST_TOKEN_NEVER_SET".to_owned(),
        };
        assert_eq!(
            source.secret_variable(),
            Some("SERVERFS_TEST_TOKEN_NEVER_SET")
        );
        let error = PayloadFile::write(&PAYLOAD, &source, "Qoder").unwrap_err();
        assert_eq!(error.code, BridgeErrorCode::AgentRuntimeNotReady);
        assert!(
            error
                .message
                .contains("SERVERFS_TEST_TOKEN_NEVER_SET is not set"),
            "{}",
            error.message
        );
        assert_eq!(AuthSource::LocalLogin.secret_variable(), None);
    }
}
