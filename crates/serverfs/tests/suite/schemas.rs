//! Every published `inputSchema` and `outputSchema`, on every surface
//! (base, binary transfer, agent tools), is valid JSON Schema 2020-12 and
//! free of the constructs that make MCP clients warn, refuse a tool or
//! misread its arguments (issue 17): the list is [`troubles`].

use serde_json::{Map, Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::Server;
use crate::common::bridge::AgentEnv;

/// The `format` values JSON Schema 2020-12 defines; ajv (Claude Code, MCP
/// Inspector) prints `unknown format "…" ignored` for any other.
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

/// Keywords that apply to one JSON type only. ajv's default strict mode
/// (`strictTypes: "log"`) prints `missing type "…" for keyword "…"` when a
/// schema object uses one without declaring that type beside it.
const TYPED_KEYWORDS: &[(&str, &[&str])] = &[
    ("minimum", &["integer", "number"]),
    ("maximum", &["integer", "number"]),
    ("exclusiveMinimum", &["integer", "number"]),
    ("exclusiveMaximum", &["integer", "number"]),
    ("multipleOf", &["integer", "number"]),
    ("minLength", &["string"]),
    ("maxLength", &["string"]),
    ("pattern", &["string"]),
    ("format", &["string"]),
    ("items", &["array"]),
    ("prefixItems", &["array"]),
    ("minItems", &["array"]),
    ("maxItems", &["array"]),
    ("uniqueItems", &["array"]),
    ("properties", &["object"]),
    ("required", &["object"]),
    ("additionalProperties", &["object"]),
    ("patternProperties", &["object"]),
    ("propertyNames", &["object"]),
];

/// Keywords holding one subschema, a list of them, or a map of them.
const ONE: &[&str] = &[
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
const LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// Keywords that annotate a schema without constraining its values.
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
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// What in `schema` (a tool's input schema when `input`) is known to
/// trouble a client, one line per finding with its JSON pointer.
fn troubles(schema: &Value, input: bool) -> Vec<String> {
    let mut found = Vec::new();
    if schema["type"] != "object" {
        found.push("/: the root is not `type: object` (MCP requires it)".to_owned());
    }
    if input {
        // The Anthropic API refuses a tool whose input_schema combines at
        // the top level, and so every Claude client does.
        for keyword in ["anyOf", "oneOf", "allOf", "not", "enum", "const"] {
            if schema.get(keyword).is_some() {
                found.push(format!("/: top-level {keyword} in an inputSchema"));
            }
        }
    }
    walk(schema, schema, "", input, &mut found);
    found
}

fn walk(root: &Value, value: &Value, at: &str, input: bool, found: &mut Vec<String>) {
    let schema = match value {
        Value::Object(schema) => schema,
        // Codex reads a boolean schema as a string parameter, except as
        // `additionalProperties` (`false` there is how arguments are made
        // strict, and every client knows it).
        Value::Bool(_) if input && !at.ends_with("/additionalProperties") => {
            found.push(format!("{at}: boolean schema in an inputSchema"));
            return;
        }
        _ => return,
    };
    check_one(root, schema, at, found);
    for keyword in ONE {
        if let Some(sub) = schema.get(*keyword) {
            walk(root, sub, &format!("{at}/{keyword}"), input, found);
        }
    }
    for keyword in LISTS {
        for (i, sub) in schema
            .get(*keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(root, sub, &format!("{at}/{keyword}/{i}"), input, found);
        }
    }
    for keyword in MAPS {
        for (name, sub) in schema
            .get(*keyword)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            walk(root, sub, &format!("{at}/{keyword}/{name}"), input, found);
        }
    }
}

fn check_one(root: &Value, schema: &Map<String, Value>, at: &str, found: &mut Vec<String>) {
    let at = if at.is_empty() { "/" } else { at };
    if let Some(format) = schema.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        found.push(format!("{at}: non-standard format {format:?}"));
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => {
            // MCP Inspector reports these as unportable; several model
            // providers take one type per schema only.
            found.push(format!("{at}: `type` array {}", Value::Array(ts.clone())));
            ts.iter().filter_map(Value::as_str).collect()
        }
        _ => Vec::new(),
    };
    if schema.keys().all(|key| ANNOTATIONS.contains(&key.as_str())) {
        // MCP Inspector 2.12 (`tools/list --strict`) reports a schema that
        // constrains nothing.
        found.push(format!("{at}: no validation keyword (accepts any value)"));
    }
    if schema.contains_key("nullable") {
        found.push(format!(
            "{at}: OpenAPI `nullable` (not JSON Schema; strict validators refuse it)"
        ));
    }
    for (keyword, applies_to) in TYPED_KEYWORDS {
        if schema.contains_key(*keyword) && !types.iter().any(|t| applies_to.contains(t)) {
            found.push(format!(
                "{at}: {keyword} without type {}",
                applies_to.join(" or ")
            ));
        }
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root["$defs"].get(name));
        if target.is_none() {
            found.push(format!(
                "{at}: $ref {reference:?} is not a local $defs entry"
            ));
        }
    }
    if let Some(default) = schema.get("default") {
        // Clients (MCP Inspector's forms) fill a default in as a value; one
        // its own schema refuses makes the call fail.
        let mut own = schema.clone();
        own.remove("default");
        if let Some(defs) = root.get("$defs") {
            own.insert("$defs".to_owned(), defs.clone());
        }
        let validator = jsonschema::validator_for(&Value::Object(own));
        if !validator.is_ok_and(|v| v.is_valid(default)) {
            found.push(format!("{at}: default {default} does not fit its schema"));
        }
    }
}

/// Asserts every schema `server` publishes is valid and untroubled.
fn assert_portable(server: &Server) {
    let mut problems = Vec::new();
    for tool in server.tools() {
        let input = Value::Object((*tool.input_schema).clone());
        let output = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone()))
            .unwrap_or_else(|| panic!("{} has no outputSchema", tool.name));
        for (side, schema, is_input) in [
            ("inputSchema", &input, true),
            ("outputSchema", &output, false),
        ] {
            if let Err(error) = jsonschema::meta::validate(schema) {
                problems.push(format!(
                    "{} {side}: not valid JSON Schema: {error}",
                    tool.name
                ));
            }
            for trouble in troubles(schema, is_input) {
                problems.push(format!("{} {side} {trouble}", tool.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_finds_each_trouble() {
    let bad = json!({
        "type": "object",
        "properties": {
            "limit": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
            "size": {"minimum": 0},
            "mode": {"$ref": "#/$defs/Missing"},
            "count": {"type": "integer", "default": null},
            "any": true,
            "old": {"type": "string", "nullable": true},
            "free": {"description": "anything"},
        },
        "anyOf": [{"required": ["limit"]}],
    });
    let found = troubles(&bad, true);
    let expected = [
        "/: top-level anyOf in an inputSchema",
        "/properties/any: boolean schema in an inputSchema",
        "/properties/count: default null does not fit its schema",
        "/properties/limit: non-standard format \"uint64\"",
        "/properties/limit: `type` array [\"integer\",\"null\"]",
        "/properties/limit: format without type string",
        "/properties/mode: $ref \"#/$defs/Missing\" is not a local $defs entry",
        "/properties/old: OpenAPI `nullable` (not JSON Schema; strict validators refuse it)",
        "/properties/size: minimum without type integer or number",
        "/properties/free: no validation keyword (accepts any value)",
        "/anyOf/0: required without type object",
    ];
    let mut found_sorted = found.clone();
    found_sorted.sort();
    let mut expected_sorted: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    expected_sorted.sort();
    pretty_assertions::assert_eq!(found_sorted, expected_sorted);
    // The same nullable as the portable rewrite writes it is fine.
    let good = json!({
        "type": "object",
        "properties": {"size": {"description": "d",
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}},
        "required": ["size"],
    });
    assert_eq!(troubles(&good, false), Vec::<String>::new());
}

#[tokio::test]
async fn base_and_binary_surfaces_publish_portable_schemas() {
    let t = TempWorkdir::new();
    let spec = format!("demo={}", t.root().display());
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_BINARY_TRANSFER_ENABLED", "true")],
    )
    .await;
    assert_eq!(server.tools().len(), 13);
    assert_portable(&server);
}

#[tokio::test]
async fn agent_surface_publishes_portable_schemas() {
    // Listing needs no Bridge: nothing is started.
    let env = AgentEnv::builder().build();
    let server = env.start_server().await;
    assert!(
        server.tools().iter().any(|t| t.name == "get_agent_task"),
        "the agent tools are listed"
    );
    assert_portable(&server);
}
