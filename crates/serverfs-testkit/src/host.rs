//! A recording [`Host`] for adapter tests: it records every event,
//! interaction, native id and process group an adapter reports, answers
//! approvals and questions from a script in arrival order (as the core's
//! queue presents them), and, once the script is exhausted, either fails
//! the request or holds it open until the adapter drops its wait.
//!
//! ```
//! use std::sync::Arc;
//!
//! use serverfs_protocol::bridge::ApprovalDecision;
//! use serverfs_testkit::host::{RecordingHost, Unscripted};
//!
//! let host = Arc::new(
//!     RecordingHost::new(Unscripted::Fail).with_decisions(&[ApprovalDecision::Deny]),
//! );
//! assert!(host.events().is_empty());
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serverfs_agent_runtime::{AgentError, BoxFuture, Host, NativeIds, ProcessGroupId};
use serverfs_protocol::bridge::{
    ApprovalDecision, ApprovalPayload, ApprovalResolution, BridgeErrorCode, EventPayload,
    QuestionPayload, QuestionResolution,
};
use tokio::sync::oneshot;

/// What the host does with a request its script has no answer for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unscripted {
    /// Fail it at once with `AGENT_INTERACTION_TIMED_OUT`, as an expired
    /// interaction would.
    Fail,
    /// Keep it waiting until the adapter drops the wait (withdraws the
    /// request); [`RecordingHost::held`] tells when that happened.
    Hold,
}

/// A scripted approval answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Choice {
    decision: ApprovalDecision,
    option_id: Option<String>,
}

/// The recording host. Build it with [`RecordingHost::new`] and the
/// `with_*` methods, share it as `Arc<RecordingHost>`.
#[derive(Debug)]
pub struct RecordingHost {
    unscripted: Unscripted,
    /// Refuse to record native ids that carry a turn id (a store that is
    /// full at the worst moment).
    fail_turn_ids: bool,
    events: Mutex<Vec<EventPayload>>,
    approvals: Mutex<Vec<ApprovalPayload>>,
    questions: Mutex<Vec<QuestionPayload>>,
    native: Mutex<Vec<NativeIds>>,
    groups: Mutex<Vec<ProcessGroupId>>,
    choices: Mutex<VecDeque<Choice>>,
    answers: Mutex<VecDeque<QuestionResolution>>,
    /// One receiver per held request: it errs once the adapter dropped
    /// its wait.
    held: Mutex<Vec<oneshot::Receiver<()>>>,
    abandoned: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RecordingHost {
    /// A host with an empty script that handles unscripted requests as
    /// `unscripted` says.
    pub fn new(unscripted: Unscripted) -> RecordingHost {
        RecordingHost {
            unscripted,
            fail_turn_ids: false,
            events: Mutex::default(),
            approvals: Mutex::default(),
            questions: Mutex::default(),
            native: Mutex::default(),
            groups: Mutex::default(),
            choices: Mutex::default(),
            answers: Mutex::default(),
            held: Mutex::default(),
            abandoned: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        }
    }

    /// Answers approvals with these decisions, in order (no option id).
    pub fn with_decisions(self, decisions: &[ApprovalDecision]) -> RecordingHost {
        lock(&self.choices).extend(decisions.iter().map(|decision| Choice {
            decision: *decision,
            option_id: None,
        }));
        self
    }

    /// Answers approvals with these `(decision, option_id)` pairs, in
    /// order.
    pub fn with_options(self, choices: &[(ApprovalDecision, &str)]) -> RecordingHost {
        lock(&self.choices).extend(choices.iter().map(|(decision, option_id)| Choice {
            decision: *decision,
            option_id: Some((*option_id).to_owned()),
        }));
        self
    }

    /// Answers questions with these resolutions, in order.
    pub fn with_answers(self, answers: Vec<QuestionResolution>) -> RecordingHost {
        lock(&self.answers).extend(answers);
        self
    }

    /// Refuses native ids that carry a turn id, with
    /// `AGENT_RESULT_STORAGE_ERROR`.
    pub fn failing_turn_ids(mut self) -> RecordingHost {
        self.fail_turn_ids = true;
        self
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<EventPayload> {
        lock(&self.events).clone()
    }

    /// The type of every event so far.
    pub fn event_types(&self) -> Vec<&'static str> {
        lock(&self.events)
            .iter()
            .map(EventPayload::event_type)
            .collect()
    }

    /// Every approval raised so far.
    pub fn approvals(&self) -> Vec<ApprovalPayload> {
        lock(&self.approvals).clone()
    }

    /// Every question raised so far.
    pub fn questions(&self) -> Vec<QuestionPayload> {
        lock(&self.questions).clone()
    }

    /// Every native-id record so far.
    pub fn native_ids(&self) -> Vec<NativeIds> {
        lock(&self.native).clone()
    }

    /// Every process group recorded so far.
    pub fn process_groups(&self) -> Vec<ProcessGroupId> {
        lock(&self.groups).clone()
    }

    /// Scripted answers not used yet (approvals and questions).
    pub fn script_left(&self) -> usize {
        lock(&self.choices).len() + lock(&self.answers).len()
    }

    /// How often the adapter withdrew its pending request.
    pub fn abandoned(&self) -> usize {
        self.abandoned.load(Ordering::SeqCst)
    }

    /// The most approvals that waited at once.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// Takes the oldest held request's drop signal: it resolves with an
    /// error once the adapter dropped that request's wait.
    pub fn take_held(&self) -> Option<oneshot::Receiver<()>> {
        let mut held = lock(&self.held);
        (!held.is_empty()).then(|| held.remove(0))
    }

    /// The host's answer to a request without a scripted answer.
    async fn unscripted<T>(&self) -> Result<T, AgentError> {
        match self.unscripted {
            Unscripted::Fail => Err(AgentError::new(
                BridgeErrorCode::AgentInteractionTimedOut,
                "no scripted answer",
            )),
            Unscripted::Hold => {
                let (held, dropped) = oneshot::channel::<()>();
                lock(&self.held).push(dropped);
                let _held_until_dropped = held;
                std::future::pending().await
            }
        }
    }
}

impl Host for RecordingHost {
    fn emit(&self, event: EventPayload) -> BoxFuture<'_, Result<(), AgentError>> {
        lock(&self.events).push(event);
        Box::pin(async { Ok(()) })
    }

    fn request_approval(
        &self,
        payload: ApprovalPayload,
    ) -> BoxFuture<'_, Result<ApprovalResolution, AgentError>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let offered = payload.available_decisions.clone();
            lock(&self.approvals).push(payload);
            let choice = lock(&self.choices).pop_front();
            // Let a concurrent request arrive before this one is answered.
            tokio::task::yield_now().await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let Some(choice) = choice else {
                return self.unscripted().await;
            };
            assert!(
                offered.contains(&choice.decision),
                "the script answered {:?}, which was not offered ({offered:?})",
                choice.decision
            );
            Ok(ApprovalResolution {
                decision: choice.decision,
                granted_permission_ids: Vec::new(),
                option_id: choice.option_id,
            })
        })
    }

    fn ask_question(
        &self,
        payload: QuestionPayload,
    ) -> BoxFuture<'_, Result<QuestionResolution, AgentError>> {
        lock(&self.questions).push(payload);
        let answer = lock(&self.answers).pop_front();
        Box::pin(async move {
            match answer {
                Some(answer) => Ok(answer),
                None => self.unscripted().await,
            }
        })
    }

    fn abandon_interaction(&self) -> BoxFuture<'_, Result<(), AgentError>> {
        self.abandoned.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }

    fn record_native_ids(&self, ids: NativeIds) -> BoxFuture<'_, Result<(), AgentError>> {
        let refused = self.fail_turn_ids && ids.turn_id.is_some();
        if !refused {
            lock(&self.native).push(ids);
        }
        Box::pin(async move {
            if refused {
                Err(AgentError::new(
                    BridgeErrorCode::AgentResultStorageError,
                    "the store is full",
                ))
            } else {
                Ok(())
            }
        })
    }

    fn record_process_group(&self, group: ProcessGroupId) -> BoxFuture<'_, Result<(), AgentError>> {
        lock(&self.groups).push(group);
        Box::pin(async { Ok(()) })
    }
}
