//! The advertised tool surface as tests pin it: the committed
//! `tools/list` fixtures and the base tools' hints.

use serde_json::Value;

use super::Server;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// Compares `tools/list` with a committed fixture (rewritten under
/// `UPDATE_SCHEMA=1`).
pub fn assert_fixture(server: &Server, name: &str) {
    let path = format!("{FIXTURES}/{name}");
    let actual = serde_json::to_value(server.tools()).unwrap();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        let text = serde_json::to_string_pretty(&with_sorted_keys(&actual)).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
    }
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).expect("fixture missing: run with UPDATE_SCHEMA=1"),
    )
    .unwrap();
    pretty_assertions::assert_eq!(
        actual,
        expected,
        "tools/list changed; if intended, refresh with: UPDATE_SCHEMA=1 cargo test -p serverfs --test all surface"
    );
}

/// `value` with every object's keys sorted: the fixture's text stays the
/// same whatever order the server writes keys in (the comparison ignores
/// it), so a refresh shows only what changed.
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

/// `(name, readOnly, destructive, idempotent)` in listing order; every
/// tool is closed-world.
pub const BASE_TOOLS: &[(&str, bool, Option<bool>, Option<bool>)] = &[
    ("list_workdirs", true, None, None),
    ("list_directory", true, None, None),
    ("find_files", true, None, None),
    ("search_text", true, None, None),
    ("read_text_file", true, None, None),
    ("stat_file", true, None, None),
    ("create_text_file", false, Some(false), Some(false)),
    ("edit_text_file", false, Some(true), Some(true)),
    ("delete_file", false, Some(true), Some(true)),
    ("create_directory", false, Some(false), Some(true)),
    ("delete_directory", false, Some(true), Some(true)),
];
