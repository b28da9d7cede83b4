//! `model/list` pages → the neutral model catalog (spec-adapters.md §2.8).

use serde_json::{Map, Value, json};
use serverfs_protocol::bridge::ModelInfo;

use crate::wire::{Effort, Model};

/// Longest model description kept, in characters.
const MAX_DESCRIPTION_CHARS: usize = 2048;
/// Most input modalities kept per model.
const MAX_MODALITIES: usize = 16;

/// The catalog entries of one page; an entry that does not decode, or has
/// neither a `model` nor an `id`, is skipped rather than costing the page.
pub(crate) fn models_of(data: &[Value]) -> Vec<ModelInfo> {
    data.iter()
        .filter_map(|entry| serde_json::from_value::<Model>(entry.clone()).ok())
        .filter_map(model_info)
        .collect()
}

fn model_info(model: Model) -> Option<ModelInfo> {
    let id = model.model.or(model.id)?;
    let efforts: Vec<Value> = model
        .supported_reasoning_efforts
        .unwrap_or_default()
        .into_iter()
        .filter_map(|effort| match effort {
            Effort::Name(name)
            | Effort::Described {
                reasoning_effort: name,
            } => Some(json!(name)),
            Effort::Other(_) => None,
        })
        .collect();
    let mut reasoning = Map::new();
    reasoning.insert("supported".to_owned(), Value::Array(efforts));
    reasoning.insert(
        "default".to_owned(),
        model.default_reasoning_effort.unwrap_or(Value::Null),
    );
    Some(ModelInfo {
        display_name: model.display_name.unwrap_or_else(|| id.clone()),
        id,
        enabled: None,
        is_default: model.is_default,
        hidden: model.hidden,
        description: model
            .description
            .map(|d| d.chars().take(MAX_DESCRIPTION_CHARS).collect()),
        input_modalities: model.input_modalities.map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .take(MAX_MODALITIES)
                .map(str::to_owned)
                .collect()
        }),
        reasoning: Some(reasoning),
        context: None,
        service_tiers: None,
        is_free: None,
        price_factor: None,
        is_new: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_pages_accept_object_efforts_and_skip_odd_entries() {
        let page = json!([{
            "id": "m", "model": "gpt-x", "displayName": "GPT X", "isDefault": true, "hidden": false,
            "supportedReasoningEfforts": [{ "reasoningEffort": "low", "description": "fast" }, "high"],
            "defaultReasoningEffort": "low", "inputModalities": ["text"]
        }, { "displayName": "no id" }, 42]);
        let models = models_of(page.as_array().unwrap());
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].id, "gpt-x");
        assert_eq!(
            models[0]
                .reasoning
                .as_ref()
                .and_then(|r| r.get("supported")),
            Some(&json!(["low", "high"]))
        );
    }
}
