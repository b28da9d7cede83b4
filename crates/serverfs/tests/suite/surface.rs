//! The advertised surface: server identity, instructions, the tool list
//! (pinned as a fixture) and the resource template.

use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::{Server, TIMEOUT};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/tools_list.json"
);

#[tokio::test]
async fn tools_list_matches_the_committed_fixture() {
    let t = TempWorkdir::new();
    let server = Server::with_workdir("demo", &t.root()).await;
    let actual = serde_json::to_value(server.tools()).unwrap();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
        std::fs::write(FIXTURE, text).unwrap();
    }
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(FIXTURE).expect("fixture missing: run with UPDATE_SCHEMA=1"),
    )
    .unwrap();
    pretty_assertions::assert_eq!(
        actual,
        expected,
        "tools/list changed; if intended, refresh with: UPDATE_SCHEMA=1 cargo test -p serverfs --test all surface"
    );
}

#[tokio::test]
async fn tools_are_listed_in_a_fixed_order_with_read_only_annotations() {
    let t = TempWorkdir::new();
    let server = Server::with_workdir("demo", &t.root()).await;
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "list_workdirs",
            "list_directory",
            "stat_file",
            "read_text_file"
        ]
    );
    for tool in server.tools() {
        let a = tool.annotations.as_ref().expect("annotations");
        assert_eq!(
            (a.read_only_hint, a.open_world_hint),
            (Some(true), Some(false)),
            "{}",
            tool.name
        );
        assert!(
            tool.output_schema.is_some(),
            "{} has an outputSchema",
            tool.name
        );
        assert_eq!(tool.input_schema["type"], json!("object"));
    }
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
