//! One CLI process and the control protocol spoken with it: spawned
//! through the kit (authorized cwd, own process group recorded before it
//! acts, scrubbed environment), newline-framed JSON both ways, our
//! requests matched to their `control_response` by `request_id` and
//! bounded in time, everything else handed to the turn in arrival order.
//! Stopping it is graceful: stdin closed, a bounded wait for the exit,
//! then `SIGTERM` and `SIGKILL` to the group.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use serverfs_agent_runtime::lines::{LinesEnded, MAX_LINE_BYTES, read_lines, write_lines};
use serverfs_agent_runtime::pending::{PendingRequests, Unanswered};
use serverfs_agent_runtime::spawn::{STOP_GRACE, spawn_with_stdio};
use serverfs_agent_runtime::{AgentError, Host, ProviderChild, ProviderCommand};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::wire::{self, ControlReply, Message};

/// How long a CLI gets to exit by itself once its stdin is closed.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// What the reader hands the turn.
#[derive(Debug)]
pub enum Incoming {
    /// A message of the CLI (not an answer to one of our requests).
    Message(Message),
    /// The CLI printed a line over the kit's [`MAX_LINE_BYTES`] (a longer
    /// line fails the turn); nothing follows.
    Oversized,
}

/// Why one of our control requests failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlFailure {
    /// The CLI answered with `subtype: error` (provider text).
    Refused(String),
    /// No answer within the request timeout.
    Timeout,
    /// The CLI went away.
    Closed,
}

impl From<Unanswered> for ControlFailure {
    fn from(unanswered: Unanswered) -> Self {
        match unanswered {
            Unanswered::Timeout => ControlFailure::Timeout,
            Unanswered::Closed => ControlFailure::Closed,
        }
    }
}

/// A running CLI and our side of its protocol.
pub struct Session {
    child: ProviderChild,
    outgoing: Option<mpsc::UnboundedSender<String>>,
    pending: PendingRequests<String, ControlReply>,
    next_id: AtomicU64,
    timeout: Duration,
    reader: JoinHandle<()>,
    /// Everything the CLI sends but answers to our requests.
    pub incoming: mpsc::UnboundedReceiver<Incoming>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // The child's own `Drop` kills its group when the session was not
        // stopped gracefully (a turn the runner gave up on).
        self.reader.abort();
    }
}

impl Session {
    /// Spawns `command` (recording its process group with `host` first)
    /// and starts reading and writing its stdio. `runtime` names it in
    /// errors.
    ///
    /// # Errors
    ///
    /// The spawn's error, or `AGENT_RUNTIME_NOT_READY` when the CLI has no
    /// stdio.
    pub async fn spawn(
        command: &ProviderCommand,
        host: Option<&dyn Host>,
        runtime: &str,
        timeout: Duration,
    ) -> Result<Session, AgentError> {
        let (child, stdin, stdout) = spawn_with_stdio(command, host, runtime).await?;
        let (outgoing, queue) = mpsc::unbounded_channel();
        let (incoming_tx, incoming) = mpsc::unbounded_channel();
        let pending = PendingRequests::default();
        let routes = pending.clone();
        let reader = tokio::spawn(async move {
            let mut skipped = 0_u64;
            let ended = read_lines(stdout, MAX_LINE_BYTES, |line| {
                route(line, &routes, &incoming_tx, &mut skipped)
            })
            .await;
            if ended == LinesEnded::Oversized {
                let _gone = incoming_tx.send(Incoming::Oversized);
            }
            routes.close_all();
        });
        // Detached: it ends when `outgoing` is dropped, closing stdin.
        drop(tokio::spawn(write_lines(stdin, queue)));
        Ok(Session {
            child,
            outgoing: Some(outgoing),
            pending,
            next_id: AtomicU64::new(1),
            timeout,
            reader,
            incoming,
        })
    }

    /// Sends one message (best effort: a CLI that went away is reported by
    /// the reader, to the turn).
    pub fn send(&self, message: &Value) {
        if let Some(outgoing) = &self.outgoing {
            let _gone = outgoing.send(message.to_string());
        }
    }

    /// Sends a control request with `body` and waits (bounded) for its
    /// answer's `response`.
    ///
    /// # Errors
    ///
    /// [`ControlFailure`].
    pub async fn request(&self, body: Value) -> Result<Value, ControlFailure> {
        let id = format!("req_{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let waiter = self.pending.register(id.clone());
        let Some(outgoing) = &self.outgoing else {
            waiter.cancel();
            return Err(ControlFailure::Closed);
        };
        if outgoing
            .send(wire::control_request(&id, body).to_string())
            .is_err()
        {
            waiter.cancel();
            return Err(ControlFailure::Closed);
        }
        let reply = waiter.wait(self.timeout).await?;
        match reply.subtype.as_str() {
            "success" => Ok(reply.response.unwrap_or(Value::Object(Default::default()))),
            _ => Err(ControlFailure::Refused(reply.error.unwrap_or_default())),
        }
    }

    /// A sender of answers for request handlers running on their own tasks.
    pub fn answers(&self) -> Answers {
        Answers {
            outgoing: self.outgoing.clone(),
        }
    }

    /// Stops the CLI: closes stdin, waits up to 5 s for it to exit, then
    /// `SIGTERM`, a grace and `SIGKILL` to its group. Logs (without any
    /// provider text) when the stop cannot be proven.
    pub async fn shutdown(mut self, runtime: &str) {
        self.outgoing = None;
        let _exited = tokio::time::timeout(EXIT_WAIT, self.child.wait()).await;
        let stopped = self.child.terminate(STOP_GRACE).await;
        if !stopped.tree_gone {
            tracing::warn!(runtime, "provider CLI could not be proven stopped");
        }
    }
}

/// Sends answers to the CLI from request handlers.
#[derive(Clone)]
pub struct Answers {
    outgoing: Option<mpsc::UnboundedSender<String>>,
}

impl Answers {
    /// Answers request `request_id` with `response`.
    pub fn respond(&self, request_id: &str, response: Value) {
        self.send(&wire::control_success(request_id, response));
    }

    /// Refuses request `request_id`.
    pub fn refuse(&self, request_id: &str, error: &str) {
        self.send(&wire::control_error(request_id, error));
    }

    fn send(&self, message: &Value) {
        if let Some(outgoing) = &self.outgoing {
            let _gone = outgoing.send(message.to_string());
        }
    }
}

/// Routes one line: answers to our requests meet their waiters, other
/// messages go to the turn; a line that is not JSON is counted and
/// skipped (a CLI or a library it loads may print one; its content is
/// never logged: it may hold prompt text). `false` once nobody reads.
fn route(
    line: &str,
    pending: &PendingRequests<String, ControlReply>,
    incoming: &mpsc::UnboundedSender<Incoming>,
    skipped: &mut u64,
) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        *skipped += 1;
        tracing::debug!(skipped = *skipped, "non-JSON CLI line skipped");
        return true;
    };
    match serde_json::from_value::<Message>(value) {
        Ok(Message::ControlResponse(answer)) => {
            // An answer to nothing we wait for (late) is dropped.
            let id = answer.response.request_id.clone();
            pending.resolve(&id, answer.response);
            true
        }
        Ok(message) => incoming.send(Incoming::Message(message)).is_ok(),
        Err(_) => {
            *skipped += 1;
            tracing::debug!(skipped = *skipped, "unreadable CLI message skipped");
            true
        }
    }
}
