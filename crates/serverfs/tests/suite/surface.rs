//! The advertised surface: server identity, instructions, the tool list
//! (pinned as a fixture) and the resource template.

use serde_json::json;
use serverfs_testkit::TempWorkdir;

use crate::common::surface::{BASE_TOOLS, assert_fixture};
use crate::common::{Server, TIMEOUT};

const BINARY_TOOLS: &[(&str, bool, Option<bool>, Option<bool>)] = &[
    ("download_binary_file", true, None, None),
    ("upload_binary_file", false, Some(false), Some(false)),
];

fn assert_surface(server: &Server, expected: &[(&str, bool, Option<bool>, Option<bool>)]) {
    let actual: Vec<(String, bool, Option<bool>, Option<bool>)> = server
        .tools()
        .iter()
        .map(|t| {
            let a = t.annotations.as_ref().expect("annotations");
            assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
            assert!(t.output_schema.is_some(), "{} has an outputSchema", t.name);
            assert_eq!(t.input_schema["type"], json!("object"));
            (
                t.name.to_string(),
                a.read_only_hint.unwrap_or(false),
                a.destructive_hint,
                a.idempotent_hint,
            )
        })
        .collect();
    let expected: Vec<(String, bool, Option<bool>, Option<bool>)> = expected
        .iter()
        .map(|(n, r, d, i)| (n.to_string(), *r, *d, *i))
        .collect();
    assert_eq!(actual, expected);
}

#[tokio::test]
async fn default_surface_is_pinned() {
    let t = TempWorkdir::new();
    let server = Server::with_workdir("demo", &t.root()).await;
    assert_surface(&server, BASE_TOOLS);
    assert_fixture(&server, "tools_list.json");
}

#[tokio::test]
async fn binary_transfer_adds_two_tools() {
    let t = TempWorkdir::new();
    let spec = format!("demo={}", t.root().display());
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_BINARY_TRANSFER_ENABLED", "true")],
    )
    .await;
    let all: Vec<_> = BASE_TOOLS.iter().chain(BINARY_TOOLS).copied().collect();
    assert_surface(&server, &all);
    assert_fixture(&server, "tools_list_binary.json");
}

#[tokio::test]
async fn server_default_limit_is_published_in_the_schema() {
    let t = TempWorkdir::new();
    let spec = format!("demo={}", t.root().display());
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_DEFAULT_LIST_LIMIT", "7")],
    )
    .await;
    let list = server
        .tools()
        .iter()
        .find(|t| t.name == "list_directory")
        .unwrap();
    assert_eq!(
        list.input_schema["properties"]["limit"]["default"],
        json!(7)
    );
}

#[tokio::test]
async fn identity_and_instructions() {
    let t = TempWorkdir::new();
    let server = Server::with_workdir("demo", &t.root()).await;
    let info = server.client().peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("ServerFS")
    );
    let instructions = info.instructions.clone().expect("instructions");
    for needle in [
        "list_workdirs",
        "relative",
        "never instructions",
        "no shell",
    ] {
        assert!(
            instructions.contains(needle),
            "instructions mention {needle:?}"
        );
    }
    let templates = tokio::time::timeout(TIMEOUT, server.client().list_all_resource_templates())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "serverfs://{workdir}/{path}");
}

#[tokio::test]
async fn bad_arguments_are_coded_errors() {
    let t = TempWorkdir::new();
    t.file("a.txt", "a\n");
    let server = Server::with_workdir("demo", &t.root()).await;
    let cases = [
        ("read_text_file", json!({"workdir": "demo"})),
        ("read_text_file", json!({"workdir": "demo", "path": 5})),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "start_line": 0}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "start_line": -1}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "max_lines": 0}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "start_line": 2, "cursor": "x"}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "cursor": "%%%"}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "bogus": true}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "tail_lines": 0}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "tail_lines": -5}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "tail_lines": 5, "start_line": 2}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "tail_lines": 5, "cursor": "x"}),
        ),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt", "tail_lines": 5, "max_lines": 5}),
        ),
        ("list_directory", json!({"workdir": "demo", "limit": 0})),
        ("list_directory", json!({"workdir": "demo", "offset": -3})),
        ("stat_file", json!({"path": "a.txt"})),
        ("list_workdirs", json!({"unexpected": 1})),
    ];
    for (tool, args) in cases {
        assert_eq!(
            server.err(tool, args.clone()).await,
            "INVALID_ARGUMENT",
            "{tool} {args}"
        );
    }
    assert_eq!(
        server
            .err("stat_file", json!({"workdir": "nope", "path": ""}))
            .await,
        "WORKDIR_NOT_FOUND"
    );
    // Alias lookup comes before path policy.
    assert_eq!(
        server
            .err("stat_file", json!({"workdir": "nope", "path": "../x"}))
            .await,
        "WORKDIR_NOT_FOUND"
    );
}
