//! The payloads every adapter builds, with the fields that depend on the
//! provider left for the adapter to fill: approvals, and the model
//! catalogs of a runtime that cannot list its models; and the human's
//! answers to questions in the provider's own words.

use serverfs_protocol::bridge::{
    ApprovalCategory, ApprovalDecision, ApprovalPayload, CatalogScope, CatalogStatus, ModelCatalog,
    Question, QuestionPayload, QuestionResolution,
};

/// An approval of `category` titled `title`, offering `decisions` (only
/// those the provider really allows), every other field empty.
pub fn approval(
    category: ApprovalCategory,
    title: &str,
    decisions: Vec<ApprovalDecision>,
) -> ApprovalPayload {
    ApprovalPayload {
        category,
        title: Some(title.to_owned()),
        reason: None,
        command_display: None,
        relative_cwd: None,
        additional_permissions: None,
        network_approval_context: None,
        file_changes: None,
        requested_permissions: None,
        tool: None,
        tool_input: None,
        blocked_path: None,
        available_decisions: decisions,
        options: None,
        approval_advice: None,
    }
}

/// The catalog of a runtime that has no model discovery at all.
pub fn catalog_unsupported(runtime: &str, source: &str) -> ModelCatalog {
    ModelCatalog {
        runtime: runtime.to_owned(),
        status: CatalogStatus::Unsupported,
        scope: CatalogScope::None,
        source: source.to_owned(),
        models: Vec::new(),
        detail: None,
        model_advice: None,
    }
}

/// The catalog of a runtime whose discovery failed now; `detail` says why
/// (client-safe).
pub fn catalog_unavailable(runtime: &str, source: &str, detail: &str) -> ModelCatalog {
    ModelCatalog {
        runtime: runtime.to_owned(),
        status: CatalogStatus::Unavailable,
        scope: CatalogScope::None,
        source: source.to_owned(),
        models: Vec::new(),
        detail: Some(detail.to_owned()),
        model_advice: None,
    }
}

/// The human's answers as a provider takes them: for each answer to a
/// question of `payload`, the question and what was given — the labels of
/// the chosen options, in the order chosen, then the free text when there
/// is any. The option ids are the Bridge's own (a provider knows its
/// options by label), so an id the question does not offer, and an answer
/// to a question not asked, are skipped.
pub fn answer_labels<'a>(
    payload: &'a QuestionPayload,
    resolution: &'a QuestionResolution,
) -> Vec<(&'a Question, Vec<&'a str>)> {
    resolution
        .answers
        .iter()
        .filter_map(|answer| {
            let question = payload
                .questions
                .iter()
                .find(|question| question.question_id == answer.question_id)?;
            let mut given: Vec<&str> = answer
                .selected_option_ids
                .iter()
                .filter_map(|id| question.options.iter().find(|o| &o.option_id == id))
                .map(|option| option.label.as_str())
                .collect();
            if let Some(text) = answer.text.as_deref().filter(|text| !text.is_empty()) {
                given.push(text);
            }
            Some((question, given))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serverfs_protocol::bridge::{QuestionAnswer, QuestionOption};

    use super::*;

    fn question(id: &str, options: &[(&str, &str)]) -> Question {
        Question {
            question_id: id.to_owned(),
            prompt: format!("{id}?"),
            options: options
                .iter()
                .map(|(option_id, label)| QuestionOption {
                    option_id: (*option_id).to_owned(),
                    label: (*label).to_owned(),
                    description: None,
                    preview: None,
                })
                .collect(),
            multi_select: true,
            allow_free_text: true,
        }
    }

    fn answer(id: &str, selected: &[&str], text: Option<&str>) -> QuestionAnswer {
        QuestionAnswer {
            question_id: id.to_owned(),
            selected_option_ids: selected.iter().map(|s| (*s).to_owned()).collect(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn answers_become_labels_in_the_order_chosen_then_the_free_text() {
        let payload = QuestionPayload {
            questions: vec![
                question("q1", &[("a", "Alpha"), ("b", "Beta")]),
                question("q2", &[("c", "Gamma")]),
            ],
        };
        let resolution = QuestionResolution {
            answers: vec![
                answer("q1", &["b", "forged", "a"], Some("because")),
                answer("q2", &[], Some("")),
                answer("unasked", &["a"], Some("lost")),
            ],
        };
        let given: Vec<(&str, Vec<&str>)> = answer_labels(&payload, &resolution)
            .into_iter()
            .map(|(question, given)| (question.question_id.as_str(), given))
            .collect();
        assert_eq!(
            given,
            vec![("q1", vec!["Beta", "Alpha", "because"]), ("q2", Vec::new()),]
        );
    }
}
