//! Task and request identifiers: a prefix and 24 lowercase hex digits
//! (96 random bits). The store refuses any other form, because a task id
//! also names its spool file.

use super::error::StoreError;

const HEX_DIGITS: usize = 24;

/// A fresh task id, `agt_` + 24 hex.
///
/// # Errors
///
/// [`StoreError::Entropy`] when the kernel's random source fails.
pub fn new_task_id() -> Result<String, StoreError> {
    random_id("agt_")
}

/// A fresh interaction request id, `req_` + 24 hex.
///
/// # Errors
///
/// [`StoreError::Entropy`] when the kernel's random source fails.
pub fn new_request_id() -> Result<String, StoreError> {
    random_id("req_")
}

/// Whether `text` is a task id (`agt_` + 24 lowercase hex).
pub fn is_task_id(text: &str) -> bool {
    has_form(text, "agt_")
}

/// Whether `text` is a request id (`req_` + 24 lowercase hex).
pub fn is_request_id(text: &str) -> bool {
    has_form(text, "req_")
}

pub(crate) fn check_task_id(text: &str) -> Result<(), StoreError> {
    if is_task_id(text) {
        Ok(())
    } else {
        Err(StoreError::InvalidId("task"))
    }
}

pub(crate) fn check_request_id(text: &str) -> Result<(), StoreError> {
    if is_request_id(text) {
        Ok(())
    } else {
        Err(StoreError::InvalidId("request"))
    }
}

fn has_form(text: &str, prefix: &str) -> bool {
    text.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == HEX_DIGITS
            && hex
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

pub(crate) fn random_hex(bytes: usize) -> Result<String, StoreError> {
    let mut buffer = vec![0_u8; bytes];
    let mut filled = 0;
    while filled < bytes {
        filled +=
            rustix::rand::getrandom(&mut buffer[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(|errno| StoreError::Entropy(errno.into()))?;
    }
    Ok(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}

fn random_id(prefix: &str) -> Result<String, StoreError> {
    Ok(format!("{prefix}{}", random_hex(HEX_DIGITS / 2)?))
}
