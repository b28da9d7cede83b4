//! Bounding every await of a test, so a hang fails with its name instead
//! of stalling the whole run.

use std::future::Future;
use std::time::Duration;

/// Generous: this bounds hangs, it does not measure speed.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Awaits `future`, failing the test (naming `what`) if it takes longer
/// than [`LIMIT`].
///
/// # Panics
///
/// When the limit passes: that is the test failing.
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(LIMIT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out: {what}"),
    }
}
