//! Published schemas in the subset of JSON Schema every MCP client takes
//! without a warning.
//!
//! schemars writes exactly what serde means, in JSON Schema 2020-12, with
//! two habits that clients trip over (issue 17):
//!
//! - `format` values of its own for Rust's numeric types (`uint64`,
//!   `int64`, `uint32`, `uint8`, `double`). Validators built on ajv — Claude
//!   Code, MCP Inspector — print `unknown format "uint64" ignored` once per
//!   occurrence when they compile the tool list.
//! - nullable `type` arrays (`["integer", "null"]`), which MCP Inspector
//!   reports as unportable: several model providers accept only one `type`
//!   per schema in tool parameters.
//!
//! [`portable`] rewrites a generated schema into the common subset:
//!
//! - a `format` outside the JSON Schema vocabulary is dropped; the range
//!   keywords schemars writes beside it (`minimum: 0`, `maximum: 255`)
//!   still say what it meant;
//! - in an input schema, an optional argument loses its `null`
//!   alternative (and a `null` default): a client leaves out an argument it
//!   does not want, and the server still accepts an explicit `null`, so
//!   the published schema only narrows what a client may send;
//! - anywhere else, a nullable type array becomes
//!   `anyOf: [{"type": T, …}, {"type": "null"}]` — the form pydantic writes
//!   for `Optional[T]`, so every Python client meets it daily — with the
//!   value constraints inside the non-null branch and the annotations
//!   (`description`, `default`) outside.
//! - a schema with no validation keyword at all (`{}` or only a
//!   `description`: schemars' spelling of a free-form `serde_json::Value`,
//!   such as an agent's tool input in an approval) spells out what it
//!   accepts, `anyOf` each JSON type: MCP Inspector 2.12 reports the bare
//!   form as a schema that constrains nothing.
//!
//! The rewrite is structural: it follows the keywords that hold
//! subschemas, so a property that happens to be *named* `format` or
//! `type` is never touched.

use serde_json::{Map, Value, json};

/// Which side of a tool a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaUse {
    /// An `inputSchema`: what a client may send.
    Input,
    /// An `outputSchema`: what the server writes, `null`s included.
    Output,
}

/// The `format` values JSON Schema 2020-12 defines (Validation §7.3);
/// any other is an extension that strict validators warn about.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords that annotate a schema rather than constrain its values: they
/// stay on the outside when a nullable type array is split into branches.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// Keywords whose value is one subschema.
const ONE_SUBSCHEMA: &[&str] = &[
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// Keywords whose value maps names to subschemas (`properties` is handled
/// on its own: it needs the object's `required` list).
const SUBSCHEMA_MAPS: &[&str] = &[
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// `schema` rewritten into the portable subset (see the module docs).
pub fn portable(mut schema: Map<String, Value>, used: SchemaUse) -> Map<String, Value> {
    rewrite(&mut schema, used, false);
    schema
}

/// Rewrites one schema object and, first, everything below it.
/// `optional_input` is true for the schema of an input property that is
/// not `required`.
fn rewrite(schema: &mut Map<String, Value>, used: SchemaUse, optional_input: bool) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let optional = used == SchemaUse::Input && !required.contains(name);
            rewrite_value(property, used, optional);
        }
    }
    for keyword in SUBSCHEMA_MAPS {
        if let Some(Value::Object(map)) = schema.get_mut(*keyword) {
            for sub in map.values_mut() {
                rewrite_value(sub, used, false);
            }
        }
    }
    for keyword in ONE_SUBSCHEMA {
        if let Some(sub) = schema.get_mut(*keyword) {
            rewrite_value(sub, used, false);
        }
    }
    for keyword in SUBSCHEMA_LISTS {
        if let Some(Value::Array(list)) = schema.get_mut(*keyword) {
            for sub in list {
                rewrite_value(sub, used, false);
            }
        }
    }
    if schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
    {
        schema.remove("format");
    }
    if optional_input {
        drop_null_alternative(schema);
    } else {
        split_nullable_type(schema);
    }
    if schema.keys().all(|key| ANNOTATIONS.contains(&key.as_str())) {
        schema.insert("anyOf".to_owned(), any_json_value());
    }
}

/// Every JSON value, one `type` per branch.
fn any_json_value() -> Value {
    json!([
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ])
}

fn rewrite_value(value: &mut Value, used: SchemaUse, optional_input: bool) {
    if let Value::Object(schema) = value {
        rewrite(schema, used, optional_input);
    }
}

/// An optional argument: `null` is dropped from its `type` array or its
/// `anyOf` (a lone remaining branch is merged into the schema), and a
/// `null` default goes with it.
fn drop_null_alternative(schema: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(branches)) = schema.get_mut("anyOf") {
        branches.retain(|branch| !is_null_schema(branch));
        if let [Value::Object(_)] = branches.as_slice()
            && let Some(Value::Array(mut branches)) = schema.remove("anyOf")
            && let Some(Value::Object(branch)) = branches.pop()
        {
            for (key, value) in branch {
                schema.entry(key).or_insert(value);
            }
        }
    }
    if schema.get("default") == Some(&Value::Null) {
        schema.remove("default");
    }
}

/// `{"type": [T, "null"], …}` becomes `{"anyOf": [{"type": T, …},
/// {"type": "null"}]}` with the annotations kept outside.
fn split_nullable_type(schema: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = schema.get("type") else {
        return;
    };
    // A schema combining a type array with its own anyOf is not something
    // schemars writes; leave it for the published-schema test to report.
    if schema.contains_key("anyOf") {
        return;
    }
    let (nulls, others): (Vec<&Value>, Vec<&Value>) = types.iter().partition(|t| *t == "null");
    let others: Vec<Value> = others.into_iter().cloned().collect();
    let nullable = !nulls.is_empty();
    schema.remove("type");
    let constraints: Map<String, Value> = schema
        .keys()
        .filter(|key| !ANNOTATIONS.contains(&key.as_str()))
        .cloned()
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(|key| schema.remove_entry(&key))
        .collect();
    let mut branches: Vec<Value> = others
        .into_iter()
        .map(|t| {
            let mut branch = constraints.clone();
            branch.insert("type".to_owned(), t);
            Value::Object(branch)
        })
        .collect();
    if nullable {
        branches.push(json!({ "type": "null" }));
    }
    if let [Value::Object(only)] = branches.as_slice() {
        let only = only.clone();
        schema.extend(only);
    } else {
        schema.insert("anyOf".to_owned(), Value::Array(branches));
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.as_object().is_some_and(|s| {
        s.get("type") == Some(&json!("null")) && s.keys().all(|k| k == "type" || k == "description")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn input_optional_arguments_lose_null_and_custom_formats() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "limit": {"type": ["integer", "null"], "format": "uint64", "minimum": 1,
                          "description": "d"},
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}],
                         "default": null, "description": "m"},
                "offset": {"type": "integer", "format": "uint64", "minimum": 0, "default": 0},
                "when": {"type": "string", "format": "date-time"},
                "must": {"type": ["string", "null"]},
            },
            "required": ["must"],
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}},
        }));
        assert_eq!(
            Value::Object(portable(schema, SchemaUse::Input)),
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "description": "d"},
                    "mode": {"$ref": "#/$defs/Mode", "description": "m"},
                    "offset": {"type": "integer", "minimum": 0, "default": 0},
                    "when": {"type": "string", "format": "date-time"},
                    // Required and nullable: null stays sendable.
                    "must": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "required": ["must"],
                "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}},
            })
        );
    }

    #[test]
    fn output_nullable_types_become_any_of_with_constraints_inside() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "size": {"type": ["integer", "null"], "format": "uint64", "minimum": 0,
                         "description": "bytes"},
                "items": {"type": "array", "items": {"type": ["string", "null"]}},
                "format": {"type": "string", "description": "a property named format"},
            },
            "required": ["size", "items", "format"],
        }));
        assert_eq!(
            Value::Object(portable(schema, SchemaUse::Output)),
            json!({
                "type": "object",
                "properties": {
                    "size": {"description": "bytes",
                             "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
                    "items": {"type": "array",
                              "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                    "format": {"type": "string", "description": "a property named format"},
                },
                "required": ["size", "items", "format"],
            })
        );
    }

    #[test]
    fn free_form_values_say_they_take_any_json_value() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "input": {"description": "the tool's input, as the agent gave it"},
                "details": {},
                "named": {"$ref": "#/$defs/X"},
            },
            "$defs": {"X": {"type": "object"}},
        }));
        let any = any_json_value();
        assert_eq!(
            Value::Object(portable(schema, SchemaUse::Output)),
            json!({
                "type": "object",
                "properties": {
                    "input": {"description": "the tool's input, as the agent gave it",
                              "anyOf": any},
                    "details": {"anyOf": any},
                    "named": {"$ref": "#/$defs/X"},
                },
                "$defs": {"X": {"type": "object"}},
            })
        );
    }

    #[test]
    fn optional_output_fields_keep_null() {
        // Output objects are written with their nulls: `required` or not,
        // a nullable field must still validate as null.
        let schema = object(json!({
            "type": "object",
            "properties": {"x": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}},
            "$defs": {"X": {"type": "object"}},
        }));
        assert_eq!(
            Value::Object(portable(schema.clone(), SchemaUse::Output)),
            Value::Object(schema)
        );
    }
}
