//! Models (spec-adapters.md §5.7, seed 002 §12). A session offers model
//! selection in one of two ways, and the adapter uses the one it shows,
//! preferring the stable one when it shows both:
//!
//! 1. **A config option of category `model`** with a list of values
//!    (stable ACP v1; OpenCode, Zed's codex-acp, claude-agent-acp). Its
//!    values are the catalog; a request-scoped model is set with
//!    `session/set_config_option` before the prompt, then checked against
//!    the agent's answer, so a refused or ignored model never silently
//!    falls back to another.
//! 2. **The session's `models` list** (`availableModels`,
//!    `currentModelId`; codex-acp's TypeScript build). Its entries are the
//!    catalog; a model is set with `session/set_model`, the one method
//!    such an agent offers. ACP calls both unstable and the pinned schema
//!    does not type them, so the adapter reads and writes them itself
//!    ([`SessionModels`], [`SetSessionModelRequest`]), and only when the
//!    session has no model config option. The answer to `session/set_model`
//!    holds nothing to check, so a model the list does not name is refused
//!    before the agent is asked.
//!
//! No label or id heuristics: an agent with neither has no model discovery
//! and no override.

use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOptions, SessionConfigValueId, SessionId, SetSessionConfigOptionRequest,
};
use agent_client_protocol::{JsonRpcRequest, JsonRpcResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serverfs_agent_runtime::bounds::utf8_prefix;
use serverfs_protocol::bridge::{CatalogScope, CatalogStatus, ModelCatalog, ModelInfo};

/// Most models listed.
const MAX_MODELS: usize = 64;

/// Longest model id or name kept.
const MAX_NAME_BYTES: usize = 512;

/// Longest description kept (the catalog's bound).
const MAX_DESCRIPTION_CHARS: usize = 2048;

/// The source `list_agent_models` reports for a catalog from a model
/// config option.
pub(crate) const CONFIG_OPTION_SOURCE: &str = "acp_session_config";

/// The source it reports for a catalog from a session's `models` list.
pub(crate) const MODEL_LIST_SOURCE: &str = "acp_session_models";

/// The source it reports when there is no catalog (none offered, or the
/// session could not be opened).
pub(crate) const NO_CATALOG_SOURCE: &str = "acp_session";

/// A session's `models`, as codex-acp's TypeScript build sends them with
/// `session/new`, `session/resume` and `session/load` (unstable in ACP).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionModels {
    available_models: Vec<ListedModel>,
    current_model_id: String,
}

/// One entry of [`SessionModels`].
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedModel {
    model_id: String,
    name: String,
    #[serde(default)]
    description: Option<String>,
}

/// `session/set_model` (unstable in ACP): the request that selects a model
/// of a session's `models` list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "session/set_model", response = SetSessionModelResponse)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetSessionModelRequest {
    session_id: SessionId,
    model_id: String,
}

/// Its answer: nothing the Bridge uses (`{}`, perhaps with `_meta`), and
/// not refused for what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcResponse)]
#[serde(transparent)]
pub(crate) struct SetSessionModelResponse(Value);

/// How a session lets its model be chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mechanism {
    /// The config option with this id (`session/set_config_option`).
    ConfigOption(String),
    /// The `models` list (`session/set_model`).
    ModelList,
}

/// One model a selector offers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Choice {
    id: String,
    name: String,
    description: Option<String>,
}

/// A session's model selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelSelector {
    mechanism: Mechanism,
    /// The selected model.
    current: String,
    /// Every model offered, in the agent's order.
    choices: Vec<Choice>,
}

/// The request that sets a session's model, by the selector's mechanism.
#[derive(Debug)]
pub(crate) enum ModelChange {
    /// `session/set_config_option`, whose answer shows the option's value.
    ConfigOption(SetSessionConfigOptionRequest),
    /// `session/set_model`, whose answer shows nothing.
    ModelList(SetSessionModelRequest),
}

impl ModelSelector {
    /// The model selector of a session answer: the config option of
    /// category `model` among `options` if there is one, else the `models`
    /// list in `answer` (the whole result as the agent sent it), else
    /// none.
    pub(crate) fn of(options: Option<&[SessionConfigOption]>, answer: &Value) -> Option<Self> {
        ModelSelector::of_options(options).or_else(|| ModelSelector::of_list(answer))
    }

    /// The config option of category `model` with a list of values.
    pub(crate) fn of_options(options: Option<&[SessionConfigOption]>) -> Option<Self> {
        options?.iter().find_map(|option| {
            if option.category != Some(SessionConfigOptionCategory::Model) {
                return None;
            }
            let SessionConfigKind::Select(select) = &option.kind else {
                return None;
            };
            let values = match &select.options {
                SessionConfigSelectOptions::Ungrouped(values) => values.iter().collect::<Vec<_>>(),
                SessionConfigSelectOptions::Grouped(groups) => {
                    groups.iter().flat_map(|group| &group.options).collect()
                }
                // The schema enum is non-exhaustive: a shape added later is
                // not guessed at.
                _ => return None,
            };
            Some(ModelSelector {
                mechanism: Mechanism::ConfigOption(option.id.0.to_string()),
                current: select.current_value.0.to_string(),
                choices: values
                    .into_iter()
                    .map(|value| Choice {
                        id: value.value.0.to_string(),
                        name: value.name.clone(),
                        description: value.description.clone(),
                    })
                    .collect(),
            })
        })
    }

    /// The `models` list of a session answer; `None` when absent or not of
    /// its shape (never guessed at).
    fn of_list(answer: &Value) -> Option<Self> {
        let models = SessionModels::deserialize(answer.get("models")?).ok()?;
        Some(ModelSelector {
            mechanism: Mechanism::ModelList,
            current: models.current_model_id,
            choices: models
                .available_models
                .into_iter()
                .map(|model| Choice {
                    id: model.model_id,
                    name: model.name,
                    description: model.description,
                })
                .collect(),
        })
    }

    /// The request selecting `model` in `session`; `None` when the
    /// selector is a `models` list that does not name it.
    pub(crate) fn change(&self, session: &SessionId, model: &str) -> Option<ModelChange> {
        match &self.mechanism {
            Mechanism::ConfigOption(config_id) => Some(ModelChange::ConfigOption(
                SetSessionConfigOptionRequest::new(
                    session.clone(),
                    config_id.clone(),
                    SessionConfigValueId::new(model.to_owned()),
                ),
            )),
            Mechanism::ModelList => {
                self.choices
                    .iter()
                    .any(|choice| choice.id == model)
                    .then(|| {
                        ModelChange::ModelList(SetSessionModelRequest {
                            session_id: session.clone(),
                            model_id: model.to_owned(),
                        })
                    })
            }
        }
    }

    /// Whether `model` is what the selector now holds.
    pub(crate) fn holds(&self, model: &str) -> bool {
        self.current == model
    }

    /// The selector as a model catalog of `runtime`.
    pub(crate) fn catalog(&self, runtime: &str) -> ModelCatalog {
        let source = match self.mechanism {
            Mechanism::ConfigOption(_) => CONFIG_OPTION_SOURCE,
            Mechanism::ModelList => MODEL_LIST_SOURCE,
        };
        ModelCatalog {
            runtime: runtime.to_owned(),
            status: CatalogStatus::Ok,
            scope: CatalogScope::RuntimeCatalog,
            source: source.to_owned(),
            models: self
                .choices
                .iter()
                .take(MAX_MODELS)
                .map(|choice| ModelInfo {
                    id: utf8_prefix(&choice.id, MAX_NAME_BYTES).to_owned(),
                    display_name: utf8_prefix(&choice.name, MAX_NAME_BYTES).to_owned(),
                    enabled: Some(true),
                    is_default: Some(choice.id == self.current),
                    hidden: None,
                    description: choice
                        .description
                        .as_ref()
                        .map(|text| text.chars().take(MAX_DESCRIPTION_CHARS).collect()),
                    input_modalities: None,
                    reasoning: None,
                    context: None,
                    service_tiers: None,
                    is_free: None,
                    price_factor: None,
                    is_new: None,
                })
                .collect(),
            detail: None,
            model_advice: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::JsonRpcMessage;
    use serde_json::json;

    use super::*;

    fn options(value: Value) -> Vec<SessionConfigOption> {
        serde_json::from_value(value).unwrap()
    }

    fn model_option() -> Value {
        json!({ "id": "model", "name": "Model", "category": "model", "type": "select",
                "currentValue": "mock/a",
                "options": [{ "value": "mock/a", "name": "A", "description": "first" },
                            { "value": "mock/b", "name": "B" }] })
    }

    fn model_list() -> Value {
        json!({ "sessionId": "s1", "models": {
            "availableModels": [{ "modelId": "gpt-a", "name": "GPT A", "description": "fast" },
                                { "modelId": "gpt-b", "name": "GPT B" }],
            "currentModelId": "gpt-b" } })
    }

    fn ids(catalog: &ModelCatalog) -> Vec<(&str, Option<bool>)> {
        catalog
            .models
            .iter()
            .map(|model| (model.id.as_str(), model.is_default))
            .collect()
    }

    #[test]
    fn the_model_category_is_the_selector() {
        let found = options(json!([
            { "id": "mode", "name": "Mode", "category": "mode", "type": "select",
              "currentValue": "build", "options": [{ "value": "build", "name": "Build" }] },
            model_option(),
        ]));
        let selector = ModelSelector::of(Some(&found), &Value::Null).unwrap();
        assert!(selector.holds("mock/a") && !selector.holds("mock/b"));
        let catalog = selector.catalog("acp-mock");
        assert_eq!(
            (catalog.status, catalog.scope, catalog.source.as_str()),
            (
                CatalogStatus::Ok,
                CatalogScope::RuntimeCatalog,
                CONFIG_OPTION_SOURCE
            )
        );
        assert_eq!(
            ids(&catalog),
            [("mock/a", Some(true)), ("mock/b", Some(false))]
        );
        assert_eq!(catalog.models[0].description.as_deref(), Some("first"));
        let Some(ModelChange::ConfigOption(set)) = selector.change(&SessionId::new("s1"), "mock/z")
        else {
            panic!("not a config option change");
        };
        assert_eq!(
            serde_json::to_value(set).unwrap(),
            json!({ "sessionId": "s1", "configId": "model", "value": "mock/z" }),
            "the agent, not the Bridge, refuses a value of its option"
        );
    }

    #[test]
    fn a_models_list_is_the_selector_only_without_the_option() {
        let selector = ModelSelector::of(None, &model_list()).unwrap();
        let catalog = selector.catalog("acp-mock");
        assert_eq!(catalog.source, MODEL_LIST_SOURCE);
        assert_eq!(
            ids(&catalog),
            [("gpt-a", Some(false)), ("gpt-b", Some(true))]
        );
        assert_eq!(catalog.models[0].display_name, "GPT A");
        assert_eq!(catalog.models[0].description.as_deref(), Some("fast"));
        let Some(ModelChange::ModelList(set)) = selector.change(&SessionId::new("s1"), "gpt-a")
        else {
            panic!("not a set_model change");
        };
        assert_eq!(set.method(), "session/set_model");
        assert_eq!(
            serde_json::to_value(set).unwrap(),
            json!({ "sessionId": "s1", "modelId": "gpt-a" })
        );
        assert!(
            selector.change(&SessionId::new("s1"), "gpt-z").is_none(),
            "a model the list does not name is never asked for"
        );
        // Both offered: the stable config option wins.
        let both = options(json!([model_option()]));
        let preferred = ModelSelector::of(Some(&both), &model_list()).unwrap();
        assert_eq!(preferred.catalog("r").source, CONFIG_OPTION_SOURCE);
        // A list of another shape is not guessed at.
        for odd in [
            json!({ "models": ["gpt-a"] }),
            json!({ "models": { "availableModels": [] } }),
            json!({ "models": { "availableModels": [{ "id": "x" }], "currentModelId": "x" } }),
        ] {
            assert_eq!(ModelSelector::of(None, &odd), None, "{odd}");
        }
        // Whatever the agent answers to set_model is accepted.
        for answer in [json!({}), json!({ "_meta": { "x": 1 } }), Value::Null] {
            assert!(SetSessionModelResponse::from_json("session/set_model", answer).is_ok());
        }
    }

    #[test]
    fn no_heuristics_without_the_category() {
        // Named "model" but uncategorised, or a toggle: not a selector.
        let unnamed = options(json!([
            { "id": "model", "name": "Model", "type": "select", "currentValue": "a",
              "options": [{ "value": "a", "name": "A" }] },
            { "id": "fast", "name": "Fast", "category": "model", "type": "boolean", "currentValue": true },
        ]));
        assert_eq!(ModelSelector::of(Some(&unnamed), &Value::Null), None);
        assert_eq!(ModelSelector::of(None, &json!({ "sessionId": "s" })), None);
        let grouped = options(json!([
            { "id": "m", "name": "Model", "category": "model", "type": "select", "currentValue": "x",
              "options": [{ "group": "g", "name": "G", "options": [{ "value": "x", "name": "X" }] }] },
        ]));
        assert_eq!(
            ModelSelector::of(Some(&grouped), &Value::Null)
                .unwrap()
                .catalog("r")
                .models
                .len(),
            1
        );
    }
}
