//! Log lines for what anyone can provoke without a token (refused hosts,
//! failed authentication, evicted and refused connections, OAuth
//! refusals), and for refusals at a bound that a token holder's flood
//! provokes (`session_refused`), come at most once per kind per interval.
//!
//! An attacker controls how often these happen, and a line per event let a
//! ten-minute attack write 17.7 MB of logs (34,137 `connection_evicted`
//! lines). Here the first event of a kind (its `event` and `reason`) is
//! logged at once, as before; the repeats within the next
//! [`SUMMARY_INTERVAL`] are only counted, and one summary line per kind
//! says how many there were (`"repeated": N, "within_s": 10`), written by
//! [`summarize_until`] at the end of each interval and by [`flush_all`] at
//! shutdown. So the log grows by at most two lines per kind per interval,
//! however hard the server is pushed, and no count is lost.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How long the repeats of one kind are counted before their summary.
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(10);

/// How loud a kind is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Routine refusals.
    Info,
    /// What an operator should look at (the server at its bounds).
    Warn,
}

/// One kind of event: what is logged, and why.
type Kind = (Level, &'static str, &'static str);

/// The kinds seen in the current interval.
#[derive(Default)]
struct Windows(HashMap<Kind, Window>);

struct Window {
    opened: Instant,
    repeats: u64,
}

fn windows() -> std::sync::MutexGuard<'static, Windows> {
    static WINDOWS: OnceLock<Mutex<Windows>> = OnceLock::new();
    WINDOWS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Notes one `event` with `reason`: logged now if it is the first of its
/// kind in the interval, else counted for the interval's summary.
pub fn note(level: Level, event: &'static str, reason: &'static str) {
    let now = Instant::now();
    let first = {
        let mut windows = windows();
        match windows.0.entry((level, event, reason)) {
            Entry::Vacant(vacant) => {
                vacant.insert(Window {
                    opened: now,
                    repeats: 0,
                });
                true
            }
            Entry::Occupied(mut occupied) => {
                let window = occupied.get_mut();
                if now.duration_since(window.opened) < SUMMARY_INTERVAL {
                    window.repeats += 1;
                    false
                } else {
                    // Its interval ran out before the summary ticker came
                    // by: summarized here, and this one opens the next.
                    let due = std::mem::replace(
                        window,
                        Window {
                            opened: now,
                            repeats: 0,
                        },
                    );
                    if due.repeats > 0 {
                        emit_summary((level, event, reason), due.repeats);
                    }
                    true
                }
            }
        }
    };
    if first {
        match level {
            Level::Info => tracing::info!(event, reason),
            Level::Warn => tracing::warn!(event, reason),
        }
    }
}

/// Writes the summaries of every interval that has ended (all of them
/// when `all`), and forgets kinds that went quiet.
fn flush(all: bool) {
    let now = Instant::now();
    let due: Vec<(Kind, u64)> = {
        let mut windows = windows();
        let mut due = Vec::new();
        windows.0.retain(|kind, window| {
            if !all && now.duration_since(window.opened) < SUMMARY_INTERVAL {
                return true;
            }
            if window.repeats == 0 {
                return false;
            }
            due.push((*kind, window.repeats));
            // A new interval opens: the attack may go on.
            window.opened = now;
            window.repeats = 0;
            true
        });
        due
    };
    for (kind, repeats) in due {
        emit_summary(kind, repeats);
    }
}

fn emit_summary((level, event, reason): Kind, repeated: u64) {
    let within_s = SUMMARY_INTERVAL.as_secs();
    match level {
        Level::Info => tracing::info!(event, reason, repeated, within_s),
        Level::Warn => tracing::warn!(event, reason, repeated, within_s),
    }
}

/// Writes each interval's summaries until `stopping` is cancelled.
pub async fn summarize_until(stopping: CancellationToken) {
    let mut ticks = tokio::time::interval(SUMMARY_INTERVAL / 2);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => flush(false),
            () = stopping.cancelled() => break,
        }
    }
}

/// Writes every pending summary now (at shutdown: no count is lost).
pub fn flush_all() {
    flush(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_counted_once_and_summarized_once() {
        // A kind no other test notes (the windows are process-wide).
        let kind = (Level::Info, "test_event", "unit test");
        note(kind.0, kind.1, kind.2);
        for _ in 0..99 {
            note(kind.0, kind.1, kind.2);
        }
        assert_eq!(windows().0.get(&kind).map(|w| w.repeats), Some(99));
        flush_all();
        assert_eq!(windows().0.get(&kind).map(|w| w.repeats), Some(0));
        flush_all();
        assert!(
            !windows().0.contains_key(&kind),
            "a quiet kind is forgotten"
        );
    }
}
