//! Real MCP clients of ServerFS end to end (issue 17): Claude Code and
//! Codex, over stdio and over HTTP with a bearer token, each driven by the
//! testkit's scripted model on 127.0.0.1 (`serverfs_testkit::MockModel`:
//! Anthropic Messages for Claude Code, OpenAI Responses for Codex); the
//! Python SDK as a content-only client (`tests/python/content_client.py`,
//! whose scripted model sees nothing but each result's `content`); and MCP
//! Inspector's CLI listing (with its schema-portability check) and calling
//! every tool.
//!
//! Every model does the same flow: read the first page of a file, follow
//! its `next_cursor`, search, and edit with the `revision` it was given.
//! The tests assert on the file on disk, on what the model actually
//! received (for Claude Code and Codex the mock model's request log: each
//! tool result as the client handed it over; for Python the texts its
//! model read) and on the clients' stderr: no schema warning. Measured
//! against a stub server whose schemas carry `format: "uint64"` and a
//! nullable `type` array: Claude Code 2.1.197 (`-p`) and Codex 0.171
//! (`exec`) print nothing about them, even when calling the tool, while MCP
//! Inspector 2.12's CLI prints ajv's `unknown format "uint64" ignored …`
//! when calling it and a portability warning for the `type` array with
//! `tools/list --strict`: the Inspector is what makes the check bite, the
//! others' stderr is checked all the same.
//!
//! The scripted models of Claude Code and Codex cannot read a reply: the
//! cursor and revision they send are learnt beforehand through the test's
//! own client (both are deterministic for an unchanged file), and the
//! assertions check that the model was given exactly those values in the
//! results of its earlier calls. The Python client's model does read them
//! out of the text it gets.
//!
//! Each client runs only when its variable names it
//! (`SERVERFS_E2E_CLAUDE`, `SERVERFS_E2E_CODEX`, `SERVERFS_E2E_INSPECTOR`,
//! `SERVERFS_E2E_PYTHON_SDK`); `scripts/e2e-clients.sh` installs the pinned
//! packages and runs this suite.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::{MockModel, Reply, Rule, Script, TempWorkdir};

use crate::common::e2e::{agent_cli, toml_path};

use crate::common::{Server, binary};
use crate::common_clients::{HttpServe, create_token};

/// How long one client run may take.
const RUN: Duration = Duration::from_secs(120);

/// The prompt that starts the scripted flow.
const PROMPT: &str = "please run the serverfs-flow";

/// What no client's stderr may contain: the schema complaints clients
/// print about tool lists (ajv's `unknown format "uint64" ignored`,
/// strict-mode notes, Codex's tool conversion errors).
const SCHEMA_WARNINGS: &[&str] = &[
    "unknown format",
    "strict mode",
    "schema",
    "Schema",
    "uint64",
    "Failed to convert",
];

/// The workdir of one run: a file long enough for two pages and a search
/// hit, and what the test's own client learnt about it.
struct Flow {
    tree: TempWorkdir,
    /// `next_cursor` of the first 10-line page of `notes.txt`.
    cursor: String,
    /// Its revision.
    revision: String,
}

/// `notes.txt` is 25 numbered lines; `src/lib.rs` holds the one match.
async fn flow() -> Flow {
    let tree = TempWorkdir::new();
    let notes: String = (1..=25)
        .map(|i| format!("note {i} of the notes\n"))
        .collect();
    tree.file("notes.txt", &notes);
    tree.file(
        "src/lib.rs",
        "fn a() {}\n// the needle is here\nfn b() {}\n",
    );
    let server = Server::with_workdir("demo", &tree.root()).await;
    let page = server
        .ok(
            "read_text_file",
            json!({"workdir": "demo", "path": "notes.txt", "max_lines": 10}),
        )
        .await;
    let flow = Flow {
        cursor: page["next_cursor"]
            .as_str()
            .expect("a next_cursor")
            .to_owned(),
        revision: page["revision"].as_str().expect("a revision").to_owned(),
        tree,
    };
    server.shutdown().await;
    flow
}

impl Flow {
    /// `demo=<tree>:rw`.
    fn spec(&self) -> String {
        format!("demo={}:rw", self.tree.root().display())
    }

    /// The four calls, in order, as the model makes them (named as each
    /// client names the tools of its MCP server `serverfs`).
    fn calls(&self) -> Vec<Reply> {
        let call = |tool: &str, args: Value| Reply::mcp_tool_call("serverfs", tool, args);
        vec![
            call(
                "read_text_file",
                json!({"workdir": "demo", "path": "notes.txt", "max_lines": 10}),
            ),
            call(
                "read_text_file",
                json!({"workdir": "demo", "path": "notes.txt", "max_lines": 10,
                       "cursor": self.cursor}),
            ),
            call("search_text", json!({"workdir": "demo", "query": "needle"})),
            call(
                "edit_text_file",
                json!({"workdir": "demo", "path": "notes.txt",
                       "expected_revision": self.revision,
                       "edits": [{"old_text": "note 12 of", "new_text": "NOTE TWELVE of"}]}),
            ),
            Reply::text("FLOW_DONE"),
        ]
    }

    /// The scripted model.
    fn model(&self) -> MockModel {
        let script = Script::new()
            .rule(Rule::steps("serverfs-flow", self.calls()))
            .fallback(Reply::text("UNSCRIPTED"));
        MockModel::start(script).expect("start the mock model")
    }

    /// Checks the run: the edit reached the disk, and the results the model
    /// was handed (`results`, in call order) carried what each next call
    /// used.
    fn assert_done(&self, client: &str, results: &[String]) {
        let notes = std::fs::read_to_string(self.tree.root().join("notes.txt")).unwrap();
        assert!(
            notes.contains("NOTE TWELVE of the notes\n") && !notes.contains("note 12 of"),
            "{client}: the edit did not reach the file:\n{notes}\nresults: {results:#?}"
        );
        assert_eq!(results.len(), 4, "{client}: {results:#?}");
        let first = &results[0];
        for (what, needle) in [
            ("the page's lines", "note 10 of the notes"),
            ("next_cursor", self.cursor.as_str()),
            ("revision", self.revision.as_str()),
        ] {
            assert!(
                first.contains(needle),
                "{client}: the first page's result lacks {what}: {first}"
            );
        }
        assert!(
            results[1].contains("note 11 of the notes") && !results[1].contains("note 10 of"),
            "{client}: the second page: {}",
            results[1]
        );
        assert!(
            results[2].contains("src/lib.rs") && results[2].contains("the needle is here"),
            "{client}: the search: {}",
            results[2]
        );
        assert!(
            results[3].contains("+NOTE TWELVE of the notes"),
            "{client}: the edit's diff: {}",
            results[3]
        );
    }
}

/// Asserts a client's stderr holds no schema warning.
fn assert_no_schema_warning(client: &str, stderr: &str) {
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| SCHEMA_WARNINGS.iter().any(|w| line.contains(w)))
        .collect();
    assert!(
        warnings.is_empty(),
        "{client} warned about the schemas:\n{}",
        warnings.join("\n")
    );
}

/// Runs `command` to its end (bounded by [`RUN`]); its stdout and stderr.
async fn run(client: &str, mut command: tokio::process::Command) -> (String, String) {
    command
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(RUN, command.output())
        .await
        .unwrap_or_else(|_| panic!("{client} did not finish within {RUN:?}"))
        .unwrap_or_else(|e| panic!("{client} did not start: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{client} failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    (stdout, stderr)
}

/// The text of a tool result as a client put it in its next model
/// request: a string, or the text parts of a list.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().or(p["output"].as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// How a client reaches ServerFS.
#[derive(Clone, Copy)]
enum Transport {
    Stdio,
    Http,
}

// ---- Claude Code ----------------------------------------------------------

fn claude() -> Option<PathBuf> {
    agent_cli("SERVERFS_E2E_CLAUDE", "scripts/e2e-clients.sh")
}

/// The tool results Claude Code sent back to the model, in order: the
/// `tool_result` blocks of the last Messages request.
fn claude_results(model: &MockModel) -> Vec<String> {
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/v1/messages" && r.body["stream"] == true)
        .expect("Claude Code asked the model");
    last.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| result_text(&block["content"]))
        .collect()
}

async fn claude_flow(claude: &Path, transport: Transport) {
    let flow = flow().await;
    let model = flow.model();
    let home = tempfile::tempdir().unwrap();
    let tokens = home.path().join("tokens.json");
    let (server, config) = match transport {
        Transport::Stdio => (
            None,
            json!({"mcpServers": {"serverfs": {"type": "stdio", "command": binary(),
                "args": ["serve", "--workdir", flow.spec()]}}}),
        ),
        Transport::Http => {
            let token = create_token(&tokens, "claude");
            let spec = flow.spec();
            let server = HttpServe::start(
                &["--workdir", &spec],
                &[("SERVERFS_TOKEN_FILE", tokens.to_str().unwrap())],
            )
            .await;
            let config = json!({"mcpServers": {"serverfs": {"type": "http", "url": server.url,
                "headers": {"Authorization": format!("Bearer {token}")}}}});
            (Some(server), config)
        }
    };
    let config_file = home.path().join("mcp.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let mut command = tokio::process::Command::new(claude);
    command
        .args([
            "-p",
            PROMPT,
            "--output-format",
            "json",
            "--strict-mcp-config",
        ])
        .arg("--mcp-config")
        .arg(&config_file)
        .args(["--allowedTools", "mcp__serverfs"])
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", model.origin())
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-not-a-real-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1");
    let (stdout, stderr) = run("claude", command).await;
    let results = claude_results(&model);
    assert!(stdout.contains("FLOW_DONE"), "claude: {stdout}\n{stderr}");
    flow.assert_done("claude", &results);
    assert_no_schema_warning("claude", &stderr);
    drop(server);
}

#[tokio::test]
async fn claude_code_over_stdio() {
    let Some(claude) = claude() else { return };
    claude_flow(&claude, Transport::Stdio).await;
}

#[tokio::test]
async fn claude_code_over_http_with_a_bearer_token() {
    let Some(claude) = claude() else { return };
    claude_flow(&claude, Transport::Http).await;
}

// ---- Codex ----------------------------------------------------------------

fn codex() -> Option<PathBuf> {
    agent_cli("SERVERFS_E2E_CODEX", "scripts/e2e-clients.sh")
}

/// The tool results Codex sent back to the model, in order: the
/// `function_call_output` items of the last Responses request.
fn codex_results(model: &MockModel) -> Vec<String> {
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/v1/responses")
        .expect("Codex asked the model");
    last.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| result_text(&item["output"]))
        .collect()
}

async fn codex_flow(codex: &Path, transport: Transport) {
    let flow = flow().await;
    let model = flow.model();
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join("codex-home");
    std::fs::create_dir(&codex_home).unwrap();
    let tokens = home.path().join("tokens.json");
    let (server, server_table, token) = match transport {
        Transport::Stdio => (
            None,
            format!(
                "command = {}\nargs = [\"serve\", \"--workdir\", {}]\n",
                toml_path(Path::new(binary())),
                toml_path(Path::new(&flow.spec()))
            ),
            None,
        ),
        Transport::Http => {
            let token = create_token(&tokens, "codex");
            let spec = flow.spec();
            let server = HttpServe::start(
                &["--workdir", &spec],
                &[("SERVERFS_TOKEN_FILE", tokens.to_str().unwrap())],
            )
            .await;
            let table = format!(
                "url = \"{}\"\nbearer_token_env_var = \"SERVERFS_TOKEN\"\n",
                server.url
            );
            (Some(server), table, Some(token))
        }
    };
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n\
             [model_providers.mock]\nname = \"Mock\"\nbase_url = \"{}\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n\n\
             [mcp_servers.serverfs]\n{server_table}\n\
             [mcp_servers.serverfs.tools.edit_text_file]\napproval_mode = \"approve\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let work = home.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut command = tokio::process::Command::new(codex);
    command
        .args(["exec", "--skip-git-repo-check", "--color", "never", PROMPT])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex_home)
        .env("MOCK_API_KEY", "e2e-not-a-real-key");
    if let Some(token) = &token {
        command.env("SERVERFS_TOKEN", token);
    }
    let (stdout, stderr) = run("codex", command).await;
    let results = codex_results(&model);
    assert!(stdout.contains("FLOW_DONE"), "codex: {stdout}\n{stderr}");
    flow.assert_done("codex", &results);
    assert_no_schema_warning("codex", &stderr);
    drop(server);
}

#[tokio::test]
async fn codex_over_stdio() {
    let Some(codex) = codex() else { return };
    codex_flow(&codex, Transport::Stdio).await;
}

#[tokio::test]
async fn codex_over_http_with_a_bearer_token() {
    let Some(codex) = codex() else { return };
    codex_flow(&codex, Transport::Http).await;
}

// ---- The Python SDK, content only ------------------------------------------

/// The directory holding the pinned Python SDK (`mcp`), or `None` (with
/// a note) when not configured.
fn python_sdk() -> Option<PathBuf> {
    const VARIABLE: &str = "SERVERFS_E2E_PYTHON_SDK";
    match std::env::var_os(VARIABLE) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.is_absolute() && dir.is_dir(),
                "{VARIABLE}={} is not an absolute path to a directory",
                dir.display()
            );
            Some(dir)
        }
        None => {
            eprintln!("skipped: set {VARIABLE} (scripts/e2e-clients.sh does)");
            None
        }
    }
}

async fn python_flow(sdk: &Path, transport: Transport) {
    let flow = flow().await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/content_client.py"
    );
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.json");
    let spec = flow.spec();
    let mut command = tokio::process::Command::new("python3");
    command.arg(script).env("PYTHONPATH", sdk);
    let server = match transport {
        Transport::Stdio => {
            command.args(["stdio", binary(), &spec]);
            None
        }
        Transport::Http => {
            let token = create_token(&file, "python");
            let server = HttpServe::start(
                &["--workdir", &spec],
                &[("SERVERFS_TOKEN_FILE", file.to_str().unwrap())],
            )
            .await;
            command.args(["http", &server.url, &token]);
            Some(server)
        }
    };
    let (stdout, stderr) = run("the Python SDK client", command).await;
    let transcript: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not a transcript ({e}): {stdout}\n{stderr}"));
    let results: Vec<String> = transcript["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| call["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    flow.assert_done("python", &results);
    // What the model sent is what it read: the cursor and the revision.
    assert_eq!(
        transcript["calls"][1]["arguments"]["cursor"],
        json!(flow.cursor)
    );
    assert_eq!(
        transcript["calls"][3]["arguments"]["expected_revision"],
        json!(flow.revision)
    );
    assert_no_schema_warning("python", &stderr);
    // The SDK logs this when a session's DELETE is not answered 200/204.
    assert!(
        !stderr.contains("Session termination failed"),
        "python: {stderr}"
    );
    drop(server);
}

#[tokio::test]
async fn python_sdk_content_only_over_stdio() {
    let Some(sdk) = python_sdk() else { return };
    python_flow(&sdk, Transport::Stdio).await;
}

#[tokio::test]
async fn python_sdk_content_only_over_http_with_a_bearer_token() {
    let Some(sdk) = python_sdk() else { return };
    python_flow(&sdk, Transport::Http).await;
}

// ---- MCP Inspector: schema warnings ---------------------------------------

fn inspector() -> Option<PathBuf> {
    agent_cli("SERVERFS_E2E_INSPECTOR", "scripts/e2e-clients.sh")
}

/// `mcp-inspector --cli ARGS` to its end: its stdout as JSON, after
/// checking it said nothing on stderr but the served ServerFS's own log
/// lines (a stdio server's stderr is the Inspector's). Anything else there
/// is the Inspector's complaint: ajv's `unknown format … ignored` when a
/// call compiles an outputSchema, a schema-portability report for
/// `tools/list --strict`, a result its outputSchema refuses.
async fn inspect(inspector: &Path, args: &[&str]) -> Value {
    let mut command = tokio::process::Command::new(inspector);
    command.arg("--cli").args(args);
    let (stdout, stderr) = run("MCP Inspector", command).await;
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            serde_json::from_str::<Value>(line).map_or(true, |log| {
                log["event"].as_str().is_none() || log["level"].is_null()
            })
        })
        .collect();
    assert!(
        complaints.is_empty(),
        "MCP Inspector complained about {args:?}:\n{}",
        complaints.join("\n")
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[tokio::test]
async fn the_mcp_inspector_lists_and_calls_every_tool_without_a_warning() {
    let Some(inspector) = inspector() else { return };
    let t = TempWorkdir::new();
    t.file("notes.txt", "one\ntwo\n");
    t.file("blob.bin", "\u{0}\u{1}");
    let spec = format!("demo={}:rw", t.root().display());
    let files = [
        "-e",
        "SERVERFS_BINARY_TRANSFER_ENABLED=true",
        binary(),
        "serve",
        "--workdir",
        &spec,
    ];
    let list = ["--method", "tools/list", "--strict"];
    let listed = inspect(&inspector, &[&files[..], &list].concat()).await;
    assert_eq!(
        listed["tools"].as_array().map(Vec::len),
        Some(13),
        "{listed}"
    );

    // Each call makes the Inspector compile that tool's outputSchema and
    // check the result against it.
    let calls: [(&str, &[&str]); 10] = [
        ("list_workdirs", &[]),
        ("list_directory", &["workdir=demo"]),
        ("stat_file", &["workdir=demo", "path=notes.txt"]),
        ("read_text_file", &["workdir=demo", "path=notes.txt"]),
        ("find_files", &["workdir=demo", "pattern=*.txt"]),
        (
            "search_text",
            &["workdir=demo", "query=two", "context_lines=1"],
        ),
        (
            "create_text_file",
            &["workdir=demo", "path=new.txt", "content=x"],
        ),
        ("create_directory", &["workdir=demo", "path=d"]),
        ("download_binary_file", &["workdir=demo", "path=blob.bin"]),
        (
            "upload_binary_file",
            &["workdir=demo", "path=up.bin", "data_base64=AAE="],
        ),
    ];
    for (tool, arguments) in calls {
        let mut args = files.to_vec();
        args.extend(["--method", "tools/call", "--tool-name", tool]);
        if !arguments.is_empty() {
            args.push("--tool-arg");
            args.extend(arguments);
        }
        let result = inspect(&inspector, &args).await;
        assert_eq!(result["isError"], false, "{tool}: {result}");
    }
    assert!(t.root().join("up.bin").is_file() && t.root().join("d").is_dir());

    // Over HTTP with a bearer token, as docs/clients.md configures it.
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.json");
    let token = create_token(&file, "inspector");
    let server = HttpServe::start(
        &["--workdir", &spec],
        &[("SERVERFS_TOKEN_FILE", file.to_str().unwrap())],
    )
    .await;
    let header = format!("Authorization: Bearer {token}");
    let http = [&server.url, "--transport", "http", "--header", &header];
    let listed = inspect(&inspector, &[&http[..], &list].concat()).await;
    assert_eq!(
        listed["tools"].as_array().map(Vec::len),
        Some(11),
        "{listed}"
    );
    drop(server);

    // The agent surface's schemas (listing needs no Bridge running).
    let env = crate::common::bridge::AgentEnv::builder().build();
    let config = env.root().join("serverfs.toml");
    // By SERVERFS_CONFIG: the Inspector takes --config for itself.
    let config = format!("SERVERFS_CONFIG={}", config.display());
    let agents = ["-e", &config, binary(), "serve"];
    let listed = inspect(&inspector, &[&agents[..], &list].concat()).await;
    assert!(
        listed["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == "get_agent_task"),
        "{listed}"
    );
}
