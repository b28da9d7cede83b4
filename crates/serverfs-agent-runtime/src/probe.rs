//! Probing a runtime without starting a turn: a cache for successful
//! probes and the common `<cli> --version` check.
//!
//! Every submit probes its runtime, and for a CLI-based provider a probe
//! means a process start (often a Node start). A success is reused for a
//! while; a failure is not, so a runtime that comes up is seen at once.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::spawn::STOP_GRACE;
use crate::{Probe, ProviderCommand};

/// How long a successful probe is reused.
pub const PROBE_REUSE: Duration = Duration::from_secs(30);

/// Budget of a `--version` probe: reading its output, then its exit.
pub const VERSION_PROBE_BUDGET: Duration = Duration::from_secs(5);

/// The last successful probe of one runtime.
#[derive(Default)]
pub struct ProbeCache {
    last: Mutex<Option<(Instant, Probe)>>,
}

impl ProbeCache {
    /// The cached probe when it is younger than [`PROBE_REUSE`], else the
    /// result of `probe` (cached when the runtime is available).
    pub async fn probe(&self, probe: impl Future<Output = Probe>) -> Probe {
        let cached = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((at, probe)) = cached
            && at.elapsed() < PROBE_REUSE
        {
            return probe;
        }
        let probe = probe.await;
        if probe.available {
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((Instant::now(), probe.clone()));
        }
        probe
    }
}

/// Runs `command` (already given its `--version` argument), bounded:
/// available when it exits successfully, with the version `parse` finds
/// in what it printed. Starts nothing else.
pub async fn version_probe(
    command: &ProviderCommand,
    parse: impl FnOnce(&str) -> Option<String>,
) -> Probe {
    let unavailable = Probe {
        available: false,
        version: None,
    };
    let Ok(mut child) = command.spawn() else {
        return unavailable;
    };
    let mut output = String::new();
    if let Some(stdout) = child.take_stdout() {
        // A version line is short; a CLI printing more is cut, not read
        // without end.
        let mut limited = stdout.take(64 * 1024);
        let read = limited.read_to_string(&mut output);
        let _late = tokio::time::timeout(VERSION_PROBE_BUDGET, read).await;
    }
    let status = tokio::time::timeout(VERSION_PROBE_BUDGET, child.wait()).await;
    let _stopped = child.terminate(STOP_GRACE).await;
    match status {
        Ok(Ok(status)) if status.success() => Probe {
            available: true,
            version: parse(&output),
        },
        _ => unavailable,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn successes_are_reused_and_failures_are_not() {
        let cache = ProbeCache::default();
        let calls = AtomicUsize::new(0);
        let calls = &calls;
        let probe = |available| async move {
            calls.fetch_add(1, Ordering::Relaxed);
            Probe {
                available,
                version: None,
            }
        };
        assert!(!cache.probe(probe(false)).await.available);
        assert!(cache.probe(probe(true)).await.available);
        assert!(cache.probe(probe(false)).await.available, "reused");
        assert_eq!(calls.load(Ordering::Relaxed), 2, "the third was not run");
    }

    #[tokio::test]
    async fn a_version_probe_reads_the_version_and_fails_closed() {
        let mut command = ProviderCommand::new("/bin/sh", "/");
        command.args(["-c", "echo 'tool 1.2.3'"]);
        let probe = version_probe(&command, |text| {
            text.split_whitespace().nth(1).map(str::to_owned)
        })
        .await;
        assert_eq!(
            probe,
            Probe {
                available: true,
                version: Some("1.2.3".to_owned())
            }
        );
        let mut failing = ProviderCommand::new("/bin/sh", "/");
        failing.args(["-c", "exit 3"]);
        assert!(!version_probe(&failing, |_| None).await.available);
        let missing = ProviderCommand::new("/nonexistent/tool", "/");
        assert!(!version_probe(&missing, |_| None).await.available);
    }
}
