//! The immutable execution manifest and the request fingerprint
//! (spec-agent-bridge.md §3.5, §3.6), both hashed over canonical JSON.

use serde_json::{Map, Value, json};
use serverfs_protocol::bridge::{AgentProfile, EpochMillis, InFlightRecovery, PROTOCOL_VERSION};

use super::policy::WorkdirPolicy;
use super::settings::ServiceSettings;
use crate::store::sha256_hex;

/// The manifest schema this Bridge writes.
const MANIFEST_SCHEMA_VERSION: u32 = 2;

/// Lowercase hex SHA-256 of `value`'s canonical JSON: keys sorted at every
/// level, compact, UTF-8 (`serde_json` cannot produce NaN, so the text is
/// always valid).
pub fn sha256_of_canonical(value: &Value) -> String {
    sha256_hex(with_sorted_keys(value).to_string().as_bytes())
}

/// `value` with every object's keys in byte order. `serde_json`'s map keeps
/// insertion order once any crate of the build enables its
/// `preserve_order` feature (the ACP schema crate does), so the order is
/// made here rather than left to the map type.
fn with_sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by_key(|(key, _)| *key);
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), with_sorted_keys(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(with_sorted_keys).collect()),
        other => other.clone(),
    }
}

/// What identifies a submission for idempotency: equal fingerprints mean
/// the same request. The prompt enters only as its digest.
#[derive(Debug)]
pub struct Fingerprint<'a> {
    /// Runtime name.
    pub runtime: &'a str,
    /// Workdir alias.
    pub workdir: &'a str,
    /// Normalized relative cwd.
    pub path: &'a str,
    /// Profile.
    pub profile: AgentProfile,
    /// The prompt.
    pub prompt: &'a str,
    /// Requested model.
    pub model: Option<&'a str>,
    /// Continued task.
    pub continue_from_task_id: Option<&'a str>,
    /// Correlation id.
    pub correlation_id: Option<&'a str>,
}

impl Fingerprint<'_> {
    /// The SHA-256 of the canonical request.
    pub fn digest(&self) -> String {
        sha256_of_canonical(&json!({
            "runtime": self.runtime,
            "workdir": self.workdir,
            "path": self.path,
            "profile": self.profile.as_str(),
            "prompt_sha256": sha256_hex(self.prompt.as_bytes()),
            "requested_model": self.model,
            "continue_from_task_id": self.continue_from_task_id,
            "correlation_id": self.correlation_id,
        }))
    }
}

/// The inputs of a manifest besides the policy and settings.
#[derive(Debug)]
pub struct ManifestInput<'a> {
    /// Runtime name.
    pub runtime: &'a str,
    /// Runtime version from the probe.
    pub runtime_version: Option<&'a str>,
    /// The runtime's recovery capability.
    pub in_flight_recovery: InFlightRecovery,
    /// Normalized relative cwd.
    pub relative_cwd: &'a str,
    /// Profile.
    pub profile: AgentProfile,
    /// Requested model.
    pub model: Option<&'a str>,
    /// Continued task.
    pub continue_from_task_id: Option<&'a str>,
    /// Correlation id.
    pub correlation_id: Option<&'a str>,
    /// Idempotency key.
    pub idempotency_key: Option<&'a str>,
    /// Deadline.
    pub deadline_at: EpochMillis,
}

/// Builds the manifest and its digest. It holds aliases, relative paths
/// and limits only — never a host path or the prompt.
pub fn build_manifest(
    input: &ManifestInput<'_>,
    workdir: &WorkdirPolicy,
    settings: &ServiceSettings,
) -> (Map<String, Value>, String) {
    let value = json!({
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "bridge_version": env!("CARGO_PKG_VERSION"),
        "protocol_version": PROTOCOL_VERSION,
        "runtime": {
            "name": input.runtime,
            "version": input.runtime_version,
            "in_flight_recovery": input.in_flight_recovery,
        },
        "workspace": {
            "alias": workdir.alias,
            "slot": workdir.legacy_slot,
            "relative_cwd": input.relative_cwd,
            "profile": input.profile.as_str(),
        },
        "model": { "requested": input.model },
        "policy": {
            "read_only": workdir.read_only,
            "agent_mode": workdir.mode.as_str(),
            "policy_sha256": workdir.policy_sha256,
        },
        "limits": settings.manifest_limits(),
        "advisor": { "enabled": false, "preflight_status": "disabled" },
        "continuation": { "from_task_id": input.continue_from_task_id },
        "correlation_id": input.correlation_id,
        "idempotency_key": input.idempotency_key,
        "deadline_at": input.deadline_at,
    });
    let digest = sha256_of_canonical(&value);
    let map = match value {
        Value::Object(map) => map,
        // `json!({...})` is always an object.
        _ => Map::new(),
    };
    (map, digest)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The digests must not depend on `serde_json`'s map order, which a
    /// dependency enabling `preserve_order` changes (the Bridge's build
    /// has it, through the ACP schema crate): that would silently change
    /// every fingerprint and manifest digest. This pins the canonical form.
    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let written_unsorted = json!({ "b": 1, "a": { "d": [2, { "f": 3, "e": 4 }], "c": null } });
        assert_eq!(
            sha256_of_canonical(&written_unsorted),
            sha256_hex(br#"{"a":{"c":null,"d":[2,{"e":4,"f":3}]},"b":1}"#)
        );
    }
}
