//! The stable wire vocabulary of ServerFS.
//!
//! Clients, prompts and operators bind to these strings, so they never change
//! once published. Every error a ServerFS process reports to a client carries
//! exactly one [`ErrorCode`]; its [`ErrorCode::as_str`] form is the
//! `SCREAMING_SNAKE` token that starts the error text (`CODE: message`) and
//! fills `error.code` in the structured result.
//!
//! The list with explanations lives in `docs/error-codes.md`; a test pins
//! every string.

mod error_code;

pub use error_code::ErrorCode;
