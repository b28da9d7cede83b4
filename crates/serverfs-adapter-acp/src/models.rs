//! Models through ACP's stable session configuration (spec-adapters.md
//! §5.7, seed 002 §12): a session's config option of category `model`
//! with a list of values is its model selector. Its values are the
//! catalog, and a request-scoped model is set with
//! `session/set_config_option` before the prompt, then checked against the
//! agent's answer, so a refused or ignored model never silently falls
//! back to another. No label or id heuristics: an agent without such an
//! option has no model discovery and no override. (`session/set_model`
//! and the `models` field are unstable in the pinned schema, and unused.)

use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOptions, SessionConfigValueId, SessionId, SetSessionConfigOptionRequest,
};
use serverfs_agent_runtime::bounds::utf8_prefix;
use serverfs_protocol::bridge::{CatalogScope, CatalogStatus, ModelCatalog, ModelInfo};

/// Most models listed.
const MAX_MODELS: usize = 64;

/// Longest model id or name kept.
const MAX_NAME_BYTES: usize = 512;

/// Longest description kept (the catalog's bound).
const MAX_DESCRIPTION_CHARS: usize = 2048;

/// Where the catalog comes from, as `list_agent_models` reports it.
pub(crate) const CATALOG_SOURCE: &str = "acp_session_config";

/// A session's model selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelSelector {
    /// The config option's id.
    config_id: String,
    /// The selected value.
    current: String,
    /// Every value, in the agent's order: `(value, name, description)`.
    values: Vec<(String, String, Option<String>)>,
}

impl ModelSelector {
    /// The model selector among a session's config options, if it has one.
    pub(crate) fn of(options: Option<&[SessionConfigOption]>) -> Option<ModelSelector> {
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
                config_id: option.id.0.to_string(),
                current: select.current_value.0.to_string(),
                values: values
                    .into_iter()
                    .map(|value| {
                        (
                            value.value.0.to_string(),
                            utf8_prefix(&value.name, MAX_NAME_BYTES).to_owned(),
                            value.description.clone(),
                        )
                    })
                    .collect(),
            })
        })
    }

    /// The request setting `model` in `session`.
    pub(crate) fn set(&self, session: &SessionId, model: &str) -> SetSessionConfigOptionRequest {
        SetSessionConfigOptionRequest::new(
            session.clone(),
            self.config_id.clone(),
            SessionConfigValueId::new(model.to_owned()),
        )
    }

    /// Whether `model` is what the selector now holds.
    pub(crate) fn holds(&self, model: &str) -> bool {
        self.current == model
    }

    /// The selector as a model catalog of `runtime`.
    pub(crate) fn catalog(&self, runtime: &str) -> ModelCatalog {
        ModelCatalog {
            runtime: runtime.to_owned(),
            status: CatalogStatus::Ok,
            scope: CatalogScope::RuntimeCatalog,
            source: CATALOG_SOURCE.to_owned(),
            models: self
                .values
                .iter()
                .take(MAX_MODELS)
                .map(|(value, name, description)| ModelInfo {
                    id: utf8_prefix(value, MAX_NAME_BYTES).to_owned(),
                    display_name: name.clone(),
                    enabled: Some(true),
                    is_default: Some(*value == self.current),
                    hidden: None,
                    description: description
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
    use serde_json::{Value, json};

    use super::*;

    fn options(value: Value) -> Vec<SessionConfigOption> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_model_category_is_the_selector() {
        let found = options(json!([
            { "id": "mode", "name": "Mode", "category": "mode", "type": "select",
              "currentValue": "build", "options": [{ "value": "build", "name": "Build" }] },
            { "id": "model", "name": "Model", "category": "model", "type": "select",
              "currentValue": "mock/a",
              "options": [{ "value": "mock/a", "name": "A", "description": "first" },
                          { "value": "mock/b", "name": "B" }] },
        ]));
        let selector = ModelSelector::of(Some(&found)).unwrap();
        assert!(selector.holds("mock/a") && !selector.holds("mock/b"));
        let catalog = selector.catalog("acp-mock");
        assert_eq!(
            (catalog.status, catalog.scope),
            (CatalogStatus::Ok, CatalogScope::RuntimeCatalog)
        );
        let ids: Vec<(&str, Option<bool>)> = catalog
            .models
            .iter()
            .map(|model| (model.id.as_str(), model.is_default))
            .collect();
        assert_eq!(ids, [("mock/a", Some(true)), ("mock/b", Some(false))]);
        assert_eq!(catalog.models[0].description.as_deref(), Some("first"));
        let set = serde_json::to_value(selector.set(&SessionId::new("s1"), "mock/b")).unwrap();
        assert_eq!(
            set,
            json!({ "sessionId": "s1", "configId": "model", "value": "mock/b" })
        );
    }

    #[test]
    fn no_heuristics_without_the_category() {
        // Named "model" but uncategorised, or a toggle: not a selector.
        let unnamed = options(json!([
            { "id": "model", "name": "Model", "type": "select", "currentValue": "a",
              "options": [{ "value": "a", "name": "A" }] },
            { "id": "fast", "name": "Fast", "category": "model", "type": "boolean", "currentValue": true },
        ]));
        assert_eq!(ModelSelector::of(Some(&unnamed)), None);
        assert_eq!(ModelSelector::of(None), None);
        let grouped = options(json!([
            { "id": "m", "name": "Model", "category": "model", "type": "select", "currentValue": "x",
              "options": [{ "group": "g", "name": "G", "options": [{ "value": "x", "name": "X" }] }] },
        ]));
        assert_eq!(
            ModelSelector::of(Some(&grouped))
                .unwrap()
                .catalog("r")
                .models
                .len(),
            1
        );
    }
}
