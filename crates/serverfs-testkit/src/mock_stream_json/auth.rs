//! Qoder's authentication payload file, as the fake `qodercli` checks it:
//! named by `QODER_SDK_AUTH_PAYLOAD_FILE`, the file `0600` in a directory
//! of its own that is `0700`, holding either the local-login payload or a
//! personal access token.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};

use super::error::FakeError;

/// The variable naming the payload file.
pub const AUTH_PAYLOAD_VARIABLE: &str = "QODER_SDK_AUTH_PAYLOAD_FILE";

/// What the fake found: the payload and the modes of the file and its
/// directory (octal text), for the log. Refused unless private and of a
/// known shape.
pub(super) fn check_payload() -> Result<Value, FakeError> {
    let refused = |problem: String| FakeError::AuthPayload(problem);
    let path = std::env::var_os(AUTH_PAYLOAD_VARIABLE)
        .ok_or_else(|| refused(format!("{AUTH_PAYLOAD_VARIABLE} missing")))?;
    let path = Path::new(&path);
    let mode = |path: &Path| {
        std::fs::metadata(path)
            .map(|meta| meta.permissions().mode() & 0o7777)
            .map_err(|error| refused(format!("{}: {error}", path.display())))
    };
    let file_mode = mode(path)?;
    let dir_mode = mode(path.parent().unwrap_or(Path::new("/")))?;
    if file_mode != 0o600 {
        return Err(refused(format!(
            "the file's mode is {file_mode:o}, not 600"
        )));
    }
    if dir_mode != 0o700 {
        return Err(refused(format!(
            "its directory's mode is {dir_mode:o}, not 700"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|error| refused(error.to_string()))?;
    let payload: Value = serde_json::from_str(&text).map_err(|error| refused(error.to_string()))?;
    let login = payload == json!({ "type": "qodercli" });
    let token = payload["type"] == "accessToken"
        && payload["accessToken"]
            .as_str()
            .is_some_and(|token| !token.is_empty())
        && payload.as_object().is_some_and(|fields| fields.len() == 2);
    if !login && !token {
        return Err(refused(format!("unknown payload {payload}")));
    }
    Ok(json!({
        "payload": payload,
        "file_mode": format!("{file_mode:o}"),
        "dir_mode": format!("{dir_mode:o}"),
    }))
}
