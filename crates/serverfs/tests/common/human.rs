//! The human behind a test client (issue 18): what the client declares
//! (the Tasks extension, form elicitation) and the forms it is sent, which
//! the test inspects and answers as a person would.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion,
};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc, oneshot};

use super::TIMEOUT;

/// What a client declares, and the forms its human has been sent. Clones
/// share the forms. The default declares nothing (and so must never be
/// sent a form).
#[derive(Clone)]
pub struct Human {
    tasks: bool,
    elicitation: bool,
    sent: mpsc::UnboundedSender<Form>,
    inbox: Arc<Mutex<mpsc::UnboundedReceiver<Form>>>,
    received: Arc<AtomicUsize>,
}

impl Default for Human {
    fn default() -> Human {
        let (sent, inbox) = mpsc::unbounded_channel();
        Human {
            tasks: false,
            elicitation: false,
            sent,
            inbox: Arc::new(Mutex::new(inbox)),
            received: Arc::default(),
        }
    }
}

/// One `elicitation/create` the human was sent, waiting for an answer.
/// Dropped unanswered, the client answers with a JSON-RPC error.
pub struct Form {
    /// The request's params, as JSON (`message`, `requestedSchema`).
    pub params: Value,
    reply: oneshot::Sender<ElicitResult>,
}

impl Form {
    /// The form's message.
    pub fn message(&self) -> &str {
        self.params["message"].as_str().expect("a form message")
    }

    /// The form's schema.
    pub fn schema(&self) -> &Value {
        &self.params["requestedSchema"]
    }

    /// Submits the form with `content`.
    pub fn accept(self, content: Value) {
        let _ = self
            .reply
            .send(ElicitResult::new(ElicitationAction::Accept).with_content(content));
    }

    /// Refuses explicitly.
    pub fn decline(self) {
        let _ = self
            .reply
            .send(ElicitResult::new(ElicitationAction::Decline));
    }

    /// Dismisses the form without a choice.
    pub fn dismiss(self) {
        let _ = self
            .reply
            .send(ElicitResult::new(ElicitationAction::Cancel));
    }
}

impl Human {
    /// The client declares the Tasks extension.
    pub fn with_tasks(mut self) -> Human {
        self.tasks = true;
        self
    }

    /// The client declares form elicitation.
    pub fn with_forms(mut self) -> Human {
        self.elicitation = true;
        self
    }

    /// How many `elicitation/create` requests the client has received.
    pub fn forms_received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }

    /// The next form the human is sent (waits up to [`TIMEOUT`]).
    pub async fn next_form(&self) -> Form {
        let mut inbox = self.inbox.lock().await;
        tokio::time::timeout(TIMEOUT, inbox.recv())
            .await
            .expect("no form within the timeout")
            .expect("the form channel closed")
    }

    /// The client's `initialize` params: a session (so the server may send
    /// requests) declaring what was asked for.
    pub(super) fn client_config(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        if self.tasks {
            capabilities = with_tasks(capabilities);
        }
        ClientConfig::new(capabilities, Implementation::new("serverfs-tests", "0"))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// Hands `request` to the test and waits for its answer.
    pub(super) async fn elicited(
        &self,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        self.received.fetch_add(1, Ordering::SeqCst);
        let (reply, answer) = oneshot::channel();
        let params = serde_json::to_value(&request).expect("params encode");
        let _ = self.sent.send(Form { params, reply });
        answer
            .await
            .map_err(|_| ErrorData::internal_error("the human left the form", None))
    }
}

/// `capabilities` declaring the Tasks extension.
fn with_tasks(capabilities: ClientCapabilities) -> ClientCapabilities {
    let mut declared = ClientCapabilities::builder().enable_tasks().build();
    declared.elicitation = capabilities.elicitation;
    declared
}
