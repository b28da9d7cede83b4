//! The payloads every adapter builds, with the fields that depend on the
//! provider left for the adapter to fill: approvals, and the model
//! catalogs of a runtime that cannot list its models.

use serverfs_protocol::bridge::{
    ApprovalCategory, ApprovalDecision, ApprovalPayload, CatalogScope, CatalogStatus, ModelCatalog,
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
