//! The Bridge methods, declared once: the ten of spec-agent-bridge.md §2.5
//! and §2.6, plus the diagnostic `bridge.peer` (additive to RPC v1).
//!
//! [`bridge_methods!`] turns the table at the end of this file into
//! [`BridgeMethod`] (the names), [`BridgeRequest`] (typed parameters, with
//! the stage-two decoder), one [`BridgeCall`] impl per parameter type (its
//! result type, for the client) and the per-method schema list, so none of
//! them can drift from the others.

use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::ProtocolError;
use super::event::{TaskEventsParams, TaskEventsResult};
use super::interaction::{
    InteractionResolved, TaskApprovalRespondParams, TaskQuestionAnswerParams,
};
use super::peer::{BridgePeerParams, BridgePeerResult};
use super::result::{TaskResultChunk, TaskResultReadParams};
use super::runtime::{ModelCatalog, RuntimeListParams, RuntimeListResult, RuntimeModelsParams};
use super::schema::schema_for;
use super::task::{
    TaskCancelParams, TaskCancelResult, TaskGetParams, TaskMessageSendParams,
    TaskMessageSendResult, TaskSubmitParams, TaskSubmitResult, TaskView,
};

/// A parameter type of exactly one Bridge method, tied to its result type.
///
/// The client calls `call::<P>(params) -> P::Result`; the Bridge uses
/// `P::Result` as the type its handler returns.
pub trait BridgeCall:
    Serialize + DeserializeOwned + JsonSchema + Into<BridgeRequest> + Sized
{
    /// The method these parameters belong to.
    const METHOD: BridgeMethod;

    /// What the method returns in `result`.
    type Result: Serialize + DeserializeOwned + JsonSchema;

    /// Decodes the `result` object of a successful response.
    ///
    /// # Errors
    ///
    /// [`ProtocolError::MalformedResponse`] when the object does not match
    /// the result type (unknown fields included).
    fn decode_result(result: Map<String, Value>) -> Result<Self::Result, ProtocolError> {
        serde_json::from_value(Value::Object(result)).map_err(|_| ProtocolError::MalformedResponse)
    }
}

macro_rules! bridge_methods {
    ($( $(#[$doc:meta])* $variant:ident => $wire:literal ($params:ty) -> $result:ty, )+) => {
        /// The name of a Bridge method.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema,
        )]
        pub enum BridgeMethod {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant, )+
        }

        impl BridgeMethod {
            /// Every method, in the order of spec §2.5, then the diagnostic.
            pub const ALL: &'static [BridgeMethod] = &[ $( BridgeMethod::$variant, )+ ];

            /// The wire name, e.g. `"task.submit"`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( BridgeMethod::$variant => $wire, )+
                }
            }

            /// The method with wire name `name`, if there is one.
            pub fn from_wire(name: &str) -> Option<BridgeMethod> {
                match name {
                    $( $wire => Some(BridgeMethod::$variant), )+
                    _ => None,
                }
            }

            /// The JSON Schema (draft 2020-12) of the method's `params`.
            pub fn params_schema(self) -> Schema {
                match self {
                    $( BridgeMethod::$variant => schema_for::<$params>(), )+
                }
            }

            /// The JSON Schema (draft 2020-12) of the method's `result`.
            pub fn result_schema(self) -> Schema {
                match self {
                    $( BridgeMethod::$variant => schema_for::<$result>(), )+
                }
            }
        }

        /// A Bridge call: the method and its typed parameters.
        ///
        /// Encodes adjacently tagged as `{"method": …, "params": {…}}`, the
        /// envelope's last two fields. Decoding goes through
        /// [`BridgeRequest::decode`], which reports an unknown method and bad
        /// parameters with their distinct codes.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
        #[serde(tag = "method", content = "params")]
        pub enum BridgeRequest {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant($params), )+
        }

        impl BridgeRequest {
            /// The method called.
            pub const fn method(&self) -> BridgeMethod {
                match self {
                    $( BridgeRequest::$variant(_) => BridgeMethod::$variant, )+
                }
            }

            /// Stage two of request decoding (spec §2.4 steps 6 and 7):
            /// look the method up, then decode `params` into its type, which
            /// denies unknown fields.
            ///
            /// # Errors
            ///
            /// [`ProtocolError::UnknownMethod`] (`METHOD_NOT_FOUND`) for a
            /// name that is not a Bridge method;
            /// [`ProtocolError::InvalidParams`] (`INVALID_REQUEST`) when a
            /// required parameter is missing, an unknown one is present, or
            /// one has the wrong type (integers refuse booleans and floats).
            pub fn decode(
                method: &str,
                params: Map<String, Value>,
            ) -> Result<BridgeRequest, ProtocolError> {
                let Some(method) = BridgeMethod::from_wire(method) else {
                    return Err(ProtocolError::unknown_method(method));
                };
                let params = Value::Object(params);
                match method {
                    $( BridgeMethod::$variant => {
                        serde_json::from_value::<$params>(params).map(BridgeRequest::$variant)
                    } )+
                }
                .map_err(|_| ProtocolError::InvalidParams)
            }

            /// The `params` object.
            ///
            /// # Errors
            ///
            /// [`ProtocolError::Internal`] if the parameters do not encode
            /// as a JSON object, which their types rule out.
            pub fn params(&self) -> Result<Map<String, Value>, ProtocolError> {
                let value = match self {
                    $( BridgeRequest::$variant(params) => serde_json::to_value(params), )+
                };
                match value {
                    Ok(Value::Object(params)) => Ok(params),
                    Ok(_) | Err(_) => Err(ProtocolError::Internal),
                }
            }
        }

        $(
            impl From<$params> for BridgeRequest {
                fn from(params: $params) -> BridgeRequest {
                    BridgeRequest::$variant(params)
                }
            }

            impl BridgeCall for $params {
                const METHOD: BridgeMethod = BridgeMethod::$variant;
                type Result = $result;
            }
        )+
    };
}

bridge_methods! {
    /// List the configured runtimes and what they can do.
    RuntimeList => "runtime.list" (RuntimeListParams) -> RuntimeListResult,
    /// A runtime's model catalog, optionally with advice for a prompt.
    RuntimeModels => "runtime.models" (RuntimeModelsParams) -> ModelCatalog,
    /// Submit a task; returns before it runs.
    TaskSubmit => "task.submit" (TaskSubmitParams) -> TaskSubmitResult,
    /// A task's current view.
    TaskGet => "task.get" (TaskGetParams) -> TaskView,
    /// A page of a task's events.
    TaskEvents => "task.events" (TaskEventsParams) -> TaskEventsResult,
    /// A chunk of a spooled result.
    TaskResultRead => "task.result.read" (TaskResultReadParams) -> TaskResultChunk,
    /// Resolve a pending approval.
    TaskApprovalRespond => "task.approval.respond" (TaskApprovalRespondParams) -> InteractionResolved,
    /// Answer a pending question.
    TaskQuestionAnswer => "task.question.answer" (TaskQuestionAnswerParams) -> InteractionResolved,
    /// Steer a running task.
    TaskMessageSend => "task.message.send" (TaskMessageSendParams) -> TaskMessageSendResult,
    /// Cancel a task (repeat-safe).
    TaskCancel => "task.cancel" (TaskCancelParams) -> TaskCancelResult,
    /// The peer identity the Bridge measured for this connection.
    BridgePeer => "bridge.peer" (BridgePeerParams) -> BridgePeerResult,
}
