//! Enums and JSON in SQLite columns: stored as their wire strings and as
//! compact JSON, decoded through the protocol crate's own serde
//! definitions so the store never keeps a second spelling of them.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::StoreError;

/// The wire string of a unit enum (`TaskStatus::WaitingForApproval` →
/// `"waiting_for_approval"`).
pub(crate) fn to_text<T: Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => Ok(text),
        _ => Err(StoreError::corrupt(what)),
    }
}

/// Parses a wire string back into its enum.
pub(crate) fn from_text<T: DeserializeOwned>(
    text: String,
    what: &'static str,
) -> Result<T, StoreError> {
    serde_json::from_value(Value::String(text)).map_err(|_| StoreError::corrupt(what))
}

/// Compact JSON of a value.
pub(crate) fn to_json<T: Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|_| StoreError::corrupt(what))
}

/// Decodes a JSON column.
pub(crate) fn from_json<T: DeserializeOwned>(
    text: &str,
    what: &'static str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::corrupt(what))
}

/// A stored byte count or counter as the `u64`/`u32` the API uses.
pub(crate) fn unsigned<T: TryFrom<i64>>(value: i64, what: &'static str) -> Result<T, StoreError> {
    T::try_from(value).map_err(|_| StoreError::corrupt(what))
}
