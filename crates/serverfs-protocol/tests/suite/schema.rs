//! The committed JSON Schemas under `schema/` match the types.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use serverfs_protocol::bridge::json_schemas;

const REFRESH: &str = "UPDATE_SCHEMA=1 cargo test -p serverfs-protocol";

#[test]
fn committed_schemas_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    let generated = json_schemas();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        refresh(&dir, &generated);
    }

    let committed: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("schema/ is unreadable ({e}); refresh with: {REFRESH}"))
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    let expected: BTreeSet<String> = generated.iter().map(|(name, _)| name.clone()).collect();
    assert_eq!(
        committed, expected,
        "the schema files differ from the published list; refresh with: {REFRESH}"
    );

    for (name, schema) in &generated {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let on_disk: Value = serde_json::from_str(&text).unwrap();
        if let Some(difference) = first_difference("", schema.as_value(), &on_disk) {
            panic!(
                "schema/{name} is stale ({difference}); if the change is intended, \
                 refresh with: {REFRESH}"
            );
        }
    }
}

/// Rewrites `dir` to hold exactly `generated`: a file whose schema did
/// not change is left as it is, and a changed one is written with its keys
/// sorted. The comparison ignores key order, and the order serde_json
/// keeps depends on which crates a build unifies its features with, so
/// this way a refresh shows only the schemas that changed.
fn refresh(dir: &Path, generated: &[(String, schemars::Schema)]) {
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let published = generated
            .iter()
            .any(|(name, _)| path.file_name().is_some_and(|file| file == name.as_str()));
        if path.extension().is_some_and(|ext| ext == "json") && !published {
            std::fs::remove_file(path).unwrap();
        }
    }
    for (name, schema) in generated {
        let path = dir.join(name);
        let committed: Option<Value> = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        if committed.as_ref() == Some(schema.as_value()) {
            continue;
        }
        let mut schema = schema.as_value().clone();
        schema.sort_all_objects();
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        std::fs::write(path, text).unwrap();
    }
}

/// Where `generated` and `committed` first differ, as a JSON pointer with
/// both values (shortened), or `None` when they are equal.
fn first_difference(at: &str, generated: &Value, committed: &Value) -> Option<String> {
    match (generated, committed) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| {
                let here = format!("{at}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => first_difference(&here, x, y),
                    (Some(_), None) => Some(format!("{here} is new")),
                    (None, _) => Some(format!("{here} is gone")),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(&format!("{at}/{i}"), x, y)),
        _ if generated == committed => None,
        _ => Some(format!(
            "at {at}: generated {} but committed {}",
            shorten(generated),
            shorten(committed)
        )),
    }
}

fn shorten(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[test]
fn one_params_and_one_result_schema_per_method() {
    let names: Vec<String> = json_schemas().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        [
            "request.json",
            "response.json",
            "event.json",
            "error_code.json",
            "runtime.list.params.json",
            "runtime.list.result.json",
            "runtime.models.params.json",
            "runtime.models.result.json",
            "task.submit.params.json",
            "task.submit.result.json",
            "task.get.params.json",
            "task.get.result.json",
            "task.events.params.json",
            "task.events.result.json",
            "task.result.read.params.json",
            "task.result.read.result.json",
            "task.approval.respond.params.json",
            "task.approval.respond.result.json",
            "task.question.answer.params.json",
            "task.question.answer.result.json",
            "task.message.send.params.json",
            "task.message.send.result.json",
            "task.cancel.params.json",
            "task.cancel.result.json",
            "bridge.peer.params.json",
            "bridge.peer.result.json",
        ]
    );
}
