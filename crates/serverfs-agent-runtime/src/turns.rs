//! The turn registry: which tasks an adapter is running, and how a running
//! turn learns that it must stop.
//!
//! Steering and cancellation reach an adapter keyed by task id while its
//! [`Adapter::run`](crate::Adapter::run) is in flight, so a turn registers
//! before its first await ([`TurnRegistry::register`]) and stays findable
//! until its [`Registration`] is dropped — however the run ends, returned
//! or dropped by the core once its bounded wait is over.
//!
//! A stop arrives from outside as a [`Stop`] reason (the user cancelled,
//! or the adapter was closed); the first reason wins. The turn watches its
//! [`StopSignal`] between steps ([`StopSignal::unless_stopped`],
//! [`StopSignal::within`]) and, once it has ended, turns its result into
//! the [`TurnOutcome`] the core expects ([`Registration::outcome`]): a stop
//! overrides whatever error the stopped step reported.
//!
//! ```
//! # fn main() -> Result<(), serverfs_agent_runtime::AgentError> {
//! use serverfs_agent_runtime::turns::{Stop, TurnRegistry};
//! use serverfs_agent_runtime::{NativeIds, TurnStatus};
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! runtime.block_on(async {
//!     let registry = TurnRegistry::new("demo");
//!     let registration = registry.register("agt_1", ())?;
//!     let mut stop = registration.stop_signal();
//!
//!     registry.cancel("agt_1");
//!     let step = stop.unless_stopped(std::future::pending::<Result<(), _>>()).await;
//!     let outcome = registration.outcome(step.map(|()| String::new()), NativeIds::default());
//!     assert_eq!(outcome.status, TurnStatus::Cancelled);
//!     assert!(registry.active("agt_1").is_err());
//!     Ok(())
//! })
//! # }
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::{Future, pending};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serverfs_protocol::bridge::BridgeErrorCode;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use crate::{AgentError, NativeIds, TurnOutcome, TurnStatus};

/// Why a running turn is being stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The user cancelled ([`Adapter::cancel`](crate::Adapter::cancel), or
    /// a `cancel_task` decision the adapter applies to itself).
    Cancelled,
    /// The adapter was closed ([`Adapter::close`](crate::Adapter::close)):
    /// the Bridge is shutting down, nobody cancelled.
    Closed,
}

/// One running turn as steering and cancellation see it, with the
/// adapter's own per-turn state `T` (a steering channel, the provider
/// connection once it exists, …).
pub struct ActiveTurn<T> {
    stop: watch::Sender<Option<Stop>>,
    state: T,
}

impl<T> ActiveTurn<T> {
    /// Tells the turn to stop; a second reason never replaces the first.
    pub fn stop(&self, why: Stop) {
        self.stop.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(why);
                true
            } else {
                false
            }
        });
    }

    /// Why the turn was told to stop, if it was.
    pub fn stop_reason(&self) -> Option<Stop> {
        *self.stop.borrow()
    }

    /// The adapter's per-turn state.
    pub fn state(&self) -> &T {
        &self.state
    }
}

struct Registered<T> {
    closed: bool,
    turns: HashMap<String, Arc<ActiveTurn<T>>>,
}

/// The turns one adapter is running, by task id.
pub struct TurnRegistry<T> {
    /// The runtime's name, for the client-safe messages below: a native
    /// runtime's constant, or an operator-configured ACP profile's name.
    runtime: Cow<'static, str>,
    inner: Mutex<Registered<T>>,
}

impl<T> TurnRegistry<T> {
    /// An empty, open registry for the runtime `runtime`.
    pub fn new(runtime: impl Into<Cow<'static, str>>) -> Self {
        TurnRegistry {
            runtime: runtime.into(),
            inner: Mutex::new(Registered {
                closed: false,
                turns: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Registered<T>> {
        // A panic elsewhere while holding the lock leaves the map valid
        // (every update is a single insert or remove).
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `task_id` as running with per-turn `state`; the returned
    /// registration removes it again when dropped.
    ///
    /// # Errors
    ///
    /// `AGENT_RUNTIME_UNAVAILABLE` once the registry is closed,
    /// `AGENT_PROVIDER_ERROR` when the task already runs here.
    pub fn register(&self, task_id: &str, state: T) -> Result<Registration<'_, T>, AgentError> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(AgentError::new(
                BridgeErrorCode::AgentRuntimeUnavailable,
                format!("the {} runtime is closed", self.runtime),
            ));
        }
        if inner.turns.contains_key(task_id) {
            return Err(AgentError::provider("the task is already running"));
        }
        let turn = Arc::new(ActiveTurn {
            stop: watch::channel(None).0,
            state,
        });
        inner.turns.insert(task_id.to_owned(), Arc::clone(&turn));
        Ok(Registration {
            registry: self,
            task_id: task_id.to_owned(),
            turn,
        })
    }

    /// The running turn of `task_id`.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_ACTIVE` when the task does not run here.
    pub fn active(&self, task_id: &str) -> Result<Arc<ActiveTurn<T>>, AgentError> {
        self.lock().turns.get(task_id).cloned().ok_or_else(|| {
            AgentError::new(
                BridgeErrorCode::AgentTaskNotActive,
                format!("the task is not running in the {} runtime", self.runtime),
            )
        })
    }

    /// The answer of a runtime without live steering to a steering message
    /// for `task_id`.
    ///
    /// # Errors
    ///
    /// Always: `AGENT_TASK_NOT_ACTIVE` when the task does not run here,
    /// `AGENT_PROVIDER_ERROR` ("live steering is not available for …")
    /// when it does.
    pub fn refuse_steering(&self, task_id: &str) -> Result<(), AgentError> {
        self.active(task_id)?;
        Err(AgentError::provider(format!(
            "live steering is not available for {}",
            self.runtime
        )))
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Tells `task_id`'s turn that the user cancelled; a no-op for a task
    /// that does not run here.
    pub fn cancel(&self, task_id: &str) {
        if let Ok(turn) = self.active(task_id) {
            turn.stop(Stop::Cancelled);
        }
    }

    /// Refuses further turns and tells every running one to stop
    /// ([`Stop::Closed`]). Idempotent.
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        for turn in inner.turns.values() {
            turn.stop(Stop::Closed);
        }
    }
}

/// What the contract's default [`send_message`](crate::Adapter::send_message),
/// [`cancel`](crate::Adapter::cancel) and [`close`](crate::Adapter::close)
/// do to an adapter's running turns: a [`TurnRegistry`] of any per-turn
/// state, seen through a trait object so that the contract can name it.
pub trait TurnControl: Send + Sync {
    /// [`TurnRegistry::cancel`].
    fn cancel(&self, task_id: &str);

    /// [`TurnRegistry::close`].
    fn close(&self);

    /// [`TurnRegistry::refuse_steering`].
    ///
    /// # Errors
    ///
    /// Always, as [`TurnRegistry::refuse_steering`].
    fn refuse_steering(&self, task_id: &str) -> Result<(), AgentError>;
}

impl<T: Send + Sync> TurnControl for TurnRegistry<T> {
    fn cancel(&self, task_id: &str) {
        TurnRegistry::cancel(self, task_id);
    }

    fn close(&self) {
        TurnRegistry::close(self);
    }

    fn refuse_steering(&self, task_id: &str) -> Result<(), AgentError> {
        TurnRegistry::refuse_steering(self, task_id)
    }
}

/// A turn's entry in its [`TurnRegistry`], removed when this is dropped.
pub struct Registration<'a, T> {
    registry: &'a TurnRegistry<T>,
    task_id: String,
    turn: Arc<ActiveTurn<T>>,
}

impl<T> Registration<'_, T> {
    /// The registered turn.
    pub fn turn(&self) -> &Arc<ActiveTurn<T>> {
        &self.turn
    }

    /// A receiver of the turn's stop reason.
    pub fn stop_signal(&self) -> StopSignal {
        StopSignal(self.turn.stop.subscribe())
    }

    /// The outcome of the turn that ended with `result`, deregistering it.
    ///
    /// A stop decides over the result's error: a cancelled turn is
    /// [`TurnStatus::Cancelled`], one stopped by [`TurnRegistry::close`] is
    /// [`TurnStatus::Interrupted`], whatever the interrupted step said. A
    /// turn that completed completed, stop or not.
    pub fn outcome(self, result: Result<String, AgentError>, native: NativeIds) -> TurnOutcome {
        let stopped = self.turn.stop_reason();
        let runtime = self.registry.runtime.clone();
        drop(self);
        match (result, stopped) {
            (Ok(text), _) => TurnOutcome::completed(text, native),
            (Err(_), Some(Stop::Cancelled)) => TurnOutcome {
                status: TurnStatus::Cancelled,
                final_text: "the turn was cancelled".to_owned(),
                native,
            },
            (Err(_), Some(Stop::Closed)) => TurnOutcome {
                status: TurnStatus::Interrupted,
                final_text: format!("the {runtime} runtime was closed"),
                native,
            },
            (Err(error), None) => TurnOutcome::failed(error, native),
        }
    }
}

impl<T> Drop for Registration<'_, T> {
    fn drop(&mut self) {
        let mut inner = self.registry.lock();
        // Only our own entry: never one a later run of the id put there.
        if inner
            .turns
            .get(&self.task_id)
            .is_some_and(|turn| Arc::ptr_eq(turn, &self.turn))
        {
            inner.turns.remove(&self.task_id);
        }
    }
}

/// A running turn's view of its stop reason.
#[derive(Clone)]
pub struct StopSignal(watch::Receiver<Option<Stop>>);

impl StopSignal {
    /// Why the turn was told to stop, if it was.
    pub fn reason(&self) -> Option<Stop> {
        *self.0.borrow()
    }

    /// Resolves once the turn is told to stop, with the reason.
    pub async fn stopped(&mut self) -> Stop {
        let why = self
            .0
            .wait_for(Option::is_some)
            .await
            .map(|why| (*why).unwrap_or(Stop::Cancelled));
        match why {
            Ok(why) => why,
            // The sender lives as long as the turn is registered; should it
            // go, nothing can stop the turn any more, which is no reason to
            // stop it.
            Err(_) => pending().await,
        }
    }

    /// Runs `step` unless the turn is told to stop first. A dropped step
    /// leaves nothing behind that a provider-side interrupt would have to
    /// stop (connecting, opening a session, waiting for the human), so a
    /// stop ends the turn at once rather than after the step's own bound.
    ///
    /// # Errors
    ///
    /// The step's error, or `AGENT_PROVIDER_ERROR` when stopped (the stop
    /// reason decides the outcome: [`Registration::outcome`]).
    pub async fn unless_stopped<T>(
        &mut self,
        step: impl Future<Output = Result<T, AgentError>>,
    ) -> Result<T, AgentError> {
        tokio::select! {
            biased;
            _ = self.stopped() => Err(stopped()),
            result = step => result,
        }
    }

    /// [`unless_stopped`](Self::unless_stopped), and also bounded by the
    /// task's `deadline` when it has one.
    ///
    /// # Errors
    ///
    /// As [`unless_stopped`](Self::unless_stopped), and
    /// `AGENT_TASK_TIMED_OUT` when the deadline passes first.
    pub async fn within<T>(
        &mut self,
        deadline: Option<Instant>,
        step: impl Future<Output = Result<T, AgentError>>,
    ) -> Result<T, AgentError> {
        tokio::select! {
            biased;
            _ = self.stopped() => Err(stopped()),
            () = expired(deadline) => Err(timed_out()),
            result = step => result,
        }
    }
}

/// Resolves when `deadline` passes; never without one.
pub async fn expired(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => pending().await,
    }
}

/// The error of a step cut short by a stop.
fn stopped() -> AgentError {
    AgentError::provider("the turn was stopped")
}

/// The error of a turn whose task deadline passed.
pub fn timed_out() -> AgentError {
    AgentError::new(
        BridgeErrorCode::AgentTaskTimedOut,
        "the task deadline passed",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome_of(stop: Option<Stop>, result: Result<String, AgentError>) -> TurnOutcome {
        let registry = TurnRegistry::new("demo");
        let Ok(registration) = registry.register("agt_1", ()) else {
            panic!("registers");
        };
        if let Some(why) = stop {
            registration.turn().stop(why);
        }
        registration.outcome(result, NativeIds::default())
    }

    #[test]
    fn a_stop_decides_over_the_error_but_not_over_completion() {
        let failed = || Err(AgentError::provider("lost"));
        assert_eq!(
            outcome_of(Some(Stop::Cancelled), failed()).status,
            TurnStatus::Cancelled
        );
        let closed = outcome_of(Some(Stop::Closed), failed());
        assert_eq!(closed.status, TurnStatus::Interrupted);
        assert_eq!(closed.final_text, "the demo runtime was closed");
        assert_eq!(
            outcome_of(None, failed()).status,
            TurnStatus::Failed {
                code: BridgeErrorCode::AgentProviderError
            }
        );
        assert_eq!(
            outcome_of(Some(Stop::Cancelled), Ok("done".to_owned())),
            TurnOutcome::completed("done", NativeIds::default())
        );
    }

    #[test]
    fn the_first_stop_reason_wins() {
        let registry = TurnRegistry::new("demo");
        let Ok(registration) = registry.register("agt_1", ()) else {
            panic!("registers");
        };
        registry.cancel("agt_1");
        registry.close();
        assert_eq!(registration.turn().stop_reason(), Some(Stop::Cancelled));
    }

    #[test]
    fn registration_is_unique_and_closing_refuses_new_turns() {
        let registry = TurnRegistry::new("demo");
        let Ok(first) = registry.register("agt_1", 1) else {
            panic!("registers");
        };
        let Err(again) = registry.register("agt_1", 2) else {
            panic!("a running task cannot run twice");
        };
        assert_eq!(again.code, BridgeErrorCode::AgentProviderError);
        assert_eq!(registry.active("agt_1").map(|t| *t.state()).ok(), Some(1));
        drop(first);
        let Err(gone) = registry.active("agt_1") else {
            panic!("deregistered on drop");
        };
        assert_eq!(gone.code, BridgeErrorCode::AgentTaskNotActive);
        registry.close();
        assert!(registry.is_closed());
        let Err(closed) = registry.register("agt_2", 3) else {
            panic!("a closed registry runs nothing");
        };
        assert_eq!(closed.code, BridgeErrorCode::AgentRuntimeUnavailable);
    }

    #[test]
    fn steering_is_refused_by_whether_the_task_runs() {
        let registry = TurnRegistry::new("demo");
        let Err(absent) = registry.refuse_steering("agt_1") else {
            panic!("refused");
        };
        assert_eq!(absent.code, BridgeErrorCode::AgentTaskNotActive);
        let Ok(_running) = registry.register("agt_1", ()) else {
            panic!("registers");
        };
        assert_eq!(
            registry.refuse_steering("agt_1"),
            Err(AgentError::provider(
                "live steering is not available for demo"
            ))
        );
    }

    #[tokio::test]
    async fn a_deadline_bounds_a_step() {
        let registry = TurnRegistry::new("demo");
        let Ok(registration) = registry.register("agt_1", ()) else {
            panic!("registers");
        };
        let mut stop = registration.stop_signal();
        let passed = Some(Instant::now());
        let Err(error) = stop
            .within(passed, pending::<Result<(), AgentError>>())
            .await
        else {
            panic!("the deadline passed");
        };
        assert_eq!(error.code, BridgeErrorCode::AgentTaskTimedOut);
    }
}
