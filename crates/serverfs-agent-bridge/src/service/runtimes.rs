//! The runtime registry: one adapter per enabled runtime name.

use std::collections::BTreeMap;
use std::sync::Arc;

use serverfs_protocol::bridge::BridgeErrorCode;

use super::error::ServiceResult;
use serverfs_agent_runtime::Adapter;
use serverfs_agent_runtime::AgentError;

/// The enabled runtimes, by name.
#[derive(Default)]
pub struct Runtimes {
    adapters: BTreeMap<String, Arc<dyn Adapter>>,
}

impl Runtimes {
    /// A registry of `adapters`; a later adapter with the same name
    /// replaces an earlier one.
    pub fn new(adapters: impl IntoIterator<Item = Arc<dyn Adapter>>) -> Runtimes {
        Runtimes {
            adapters: adapters
                .into_iter()
                .map(|adapter| (adapter.name().to_owned(), adapter))
                .collect(),
        }
    }

    /// The adapter of `name`.
    ///
    /// # Errors
    ///
    /// `AGENT_RUNTIME_UNAVAILABLE` when no such runtime is enabled.
    pub fn get(&self, name: &str) -> ServiceResult<Arc<dyn Adapter>> {
        self.adapters.get(name).cloned().ok_or_else(|| {
            AgentError::new(
                BridgeErrorCode::AgentRuntimeUnavailable,
                "the runtime is not enabled in this Agent Bridge",
            )
        })
    }

    /// Every adapter, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Adapter>> {
        self.adapters.values()
    }
}
