//! Runtimes and their model catalogs: `runtime.list` and `runtime.models`
//! (spec-agent-bridge.md §2.6, §9.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::field::{Nullable, present, present_value};
use super::task::AgentProfile;
use super::{Advice, EpochMillis};

/// `runtime.list` parameters: none (`params` must be `{}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeListParams {}

/// `runtime.list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeListResult {
    /// One descriptor per configured runtime, sorted by name.
    pub runtimes: Vec<RuntimeInfo>,
}

/// What a runtime can do, as its adapter's probe reports it.
///
/// Every entry has the full shape. A runtime whose probe failed is listed
/// with `available: false`, `version: null` and its adapter's static
/// capabilities (the reference sent a bare `{name, available}` instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeInfo {
    /// Runtime name, e.g. `codex` or `acp-gemini`.
    pub name: String,
    /// Whether the probe found the runtime usable. An unavailable runtime is
    /// refused at submit with `AGENT_RUNTIME_UNAVAILABLE`.
    pub available: bool,
    /// Provider version, when the probe could tell.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub version: Option<String>,
    /// The provider keeps a session that a later task can continue.
    pub persistent_session: bool,
    /// `task.message.send` reaches the running turn.
    pub live_steer: bool,
    /// The provider can ask for approvals.
    pub interactive_approval: bool,
    /// The provider can ask questions.
    pub interactive_question: bool,
    /// What survives a Bridge restart.
    pub in_flight_recovery: InFlightRecovery,
    /// A request-scoped model may be chosen.
    pub model_override: bool,
    /// How `runtime.models` discovers models.
    pub model_discovery: ModelDiscovery,
    /// How the capability flags above were established, for a runtime
    /// that measures them from its provider (an ACP profile): `unmeasured`
    /// (conservative flags, no successful handshake yet) or `measured`.
    /// Absent for a runtime whose flags are fixed by its adapter (every
    /// native runtime); never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "CapabilityState")]
    pub capability_state: Option<CapabilityState>,
    /// When the capabilities were measured (epoch ms); present exactly when
    /// `capability_state` is `measured`, never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "EpochMillis")]
    pub capabilities_measured_at: Option<EpochMillis>,
}

/// Whether a runtime's capability flags come from a measurement of its
/// provider (seed 002 §8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityState {
    /// No handshake with the provider succeeded yet: the flags are the
    /// conservative ones (`false`, `none`, `unsupported`), which do not mean
    /// that the provider lacks the capability.
    Unmeasured,
    /// The flags are what the provider advertised in its last successful
    /// handshake, at `capabilities_measured_at`.
    Measured,
}

/// What of an in-flight task a runtime can recover after a Bridge restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum InFlightRecovery {
    /// Nothing.
    #[serde(rename = "none")]
    None,
    /// A follow-up task can resume the provider session.
    #[serde(rename = "session-resume")]
    SessionResume,
    /// The provider itself keeps running and can be reattached.
    #[serde(rename = "native")]
    Native,
}

/// Where a runtime's model catalog comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelDiscovery {
    /// No discovery.
    Unsupported,
    /// The provider's own model list.
    RuntimeCatalog,
    /// The models of the account the provider is signed in with.
    CurrentAccount,
}

/// `runtime.models` parameters.
///
/// Giving any of `workdir`, `task_prompt`, a non-empty `path` or a profile
/// other than `workspace-write` asks for model advice, which then needs both
/// `workdir` and `task_prompt`. `profile` stays a string for the same reason
/// as in [`TaskSubmitParams`](super::TaskSubmitParams).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeModelsParams {
    /// Runtime name.
    pub runtime: String,
    /// Workdir alias (advice mode). Absent or `null`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// The prompt to advise on (advice mode). Absent or `null`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_prompt: Option<String>,
    /// Working directory relative to the workdir. Absent: `""`; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Profile to advise for. Absent: `workspace-write`; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "AgentProfile")]
    pub profile: Option<String>,
}

/// `runtime.models` result: a runtime's model catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelCatalog {
    /// Runtime name.
    pub runtime: String,
    /// Whether discovery worked.
    pub status: CatalogStatus,
    /// What the list covers.
    pub scope: CatalogScope,
    /// Where the list came from (usually the runtime name).
    pub source: String,
    /// At most 64 models.
    pub models: Vec<ModelInfo>,
    /// Why the catalog is empty, e.g. `runtime is unavailable`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub detail: Option<String>,
    /// Advisory model recommendation (advice mode only); never applied.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Advice")]
    pub model_advice: Option<Advice>,
}

/// Outcome of model discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatalogStatus {
    /// The list is the provider's answer.
    Ok,
    /// The runtime has no discovery.
    Unsupported,
    /// The runtime is unavailable or discovery failed.
    Unavailable,
}

/// What a model catalog covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatalogScope {
    /// Every model the runtime knows.
    RuntimeCatalog,
    /// The models of the signed-in account.
    CurrentAccount,
    /// Nothing was discovered.
    None,
}

/// One model of a catalog. Provider-specific detail is passed through as
/// JSON objects, bounded by the Bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// The id to pass as `model`.
    pub id: String,
    /// A name for people.
    pub display_name: String,
    /// Whether the model can be used; `null` when unknown.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<bool>")]
    pub enabled: Option<bool>,
    /// Whether it is the provider's default; `null` when unknown.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<bool>")]
    pub is_default: Option<bool>,
    /// Whether the provider hides it from pickers; `null` when unknown.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<bool>")]
    pub hidden: Option<bool>,
    /// Description (at most 2048 characters).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub description: Option<String>,
    /// Accepted input kinds, e.g. `text`, `image` (at most 16).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Vec<String>")]
    pub input_modalities: Option<Vec<String>>,
    /// Reasoning support: `{supported, default}` or the provider's object.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Map<String, Value>")]
    pub reasoning: Option<Map<String, Value>>,
    /// Context window: `{window}` or the provider's object.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Map<String, Value>")]
    pub context: Option<Map<String, Value>>,
    /// Service tiers as the provider reports them.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    #[schemars(with = "Value")]
    pub service_tiers: Option<Value>,
    /// Whether using the model is free.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "bool")]
    pub is_free: Option<bool>,
    /// Relative price.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "f64")]
    pub price_factor: Option<f64>,
    /// Whether the provider marks the model as new.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "bool")]
    pub is_new: Option<bool>,
}
