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
//! The tests assert on the file on disk, and on what the model actually
//! received (for Claude Code and Codex the mock model's request log: each
//! tool result as the client handed it over; for Python the texts its
//! model read).
//!
//! Schema warnings are checked where each client surfaces them, found by
//! serving a stub whose schemas carry `format: "uint64"` and a nullable
//! `type` array (`tests/python/uint64_stub.py`; a positive control below
//! serves it again in every run, so a check that no longer sees the
//! warnings fails):
//! - Claude Code 2.1.197: `claude -p` prints nothing about them, not even
//!   with `--debug`, `--verbose` or `--debug-file` (its tool listing does
//!   not compile the schemas); `claude mcp list`, which checks each server
//!   through the MCP SDK's `listTools`, prints ajv's
//!   `unknown format "uint64" ignored in schema at path …` on stderr. The
//!   suite registers ServerFS with `claude mcp add` and checks that stream.
//! - Codex 0.171: no output carries them, even at `RUST_LOG=trace`: Codex
//!   rewrites every MCP input schema silently (it dropped `format`,
//!   turned `type: "foo"` into `{}` and `true` into a string). The suite
//!   checks the rewrite itself instead: what Codex handed the model as each
//!   tool's parameters must be ServerFS's `inputSchema` up to Codex's
//!   routine, meaning-keeping rewrites ([`codex_rewrites`]).
//! - MCP Inspector 2.12's CLI prints ajv's warning when a call compiles a
//!   tool's outputSchema, and a portability report for the `type` array
//!   with `tools/list --strict`.
//! - The Python SDK (`mcp` 2.3.0) prints nothing about them either; its
//!   stderr is checked all the same.
//!
//! The scripted models of Claude Code and Codex cannot read a reply: the
//! cursor and revision they send are learnt beforehand through the test's
//! own client (both are deterministic for an unchanged file), and the
//! assertions check that the model was given exactly those values in the
//! results of its earlier calls. The Python client's model does read them
//! out of the text it gets.
//!
//! mcp-remote, the stdio-to-HTTP bridge that docs/clients.md gives Claude
//! Desktop for ServerFS over HTTP, is driven by the Inspector (a stdio
//! client, as Claude Desktop is) with the bearer header in a file.
//!
//! Each client runs only when its variable names it
//! (`SERVERFS_E2E_CLAUDE`, `SERVERFS_E2E_CODEX`, `SERVERFS_E2E_INSPECTOR`,
//! `SERVERFS_E2E_MCP_REMOTE`, `SERVERFS_E2E_PYTHON_SDK`); `scripts/e2e-clients.sh` installs the pinned
//! packages and runs this suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::{MockModel, Reply, Rule, Script, TempWorkdir};

use crate::common::e2e::{agent_cli, codex_mock_provider, toml_path};

use crate::common::{Server, binary};
use crate::common_clients::{HttpServe, create_token};

/// How long one client run may take.
const RUN: Duration = Duration::from_secs(120);

/// The prompt that starts the scripted flow.
const PROMPT: &str = "please run the serverfs-flow";

/// The stdio server of the positive controls: one tool whose schemas
/// carry `format: "uint64"` and a nullable `type` array.
const UINT64_STUB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/uint64_stub.py");

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
    /// ServerFS's published `inputSchema`s, by tool name.
    published: BTreeMap<String, Value>,
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
        published: server
            .tools()
            .iter()
            .map(|tool| {
                let schema = Value::Object((*tool.input_schema).clone());
                (tool.name.to_string(), schema)
            })
            .collect(),
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

/// The lines of a client's output that complain about schemas.
fn schema_warnings(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| SCHEMA_WARNINGS.iter().any(|w| line.contains(w)))
        .collect()
}

/// Asserts a client's stderr holds no schema warning.
fn assert_no_schema_warning(client: &str, stderr: &str) {
    let warnings = schema_warnings(stderr);
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

/// Claude Code run in `home` (its `HOME` and working directory), its model
/// at `model`.
fn claude_command(claude: &Path, home: &Path, model: &MockModel) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(claude);
    command
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", model.origin())
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-not-a-real-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1");
    command
}

/// `claude mcp add ADD…` in `home`, then `claude mcp list`: its stdout
/// (each server and whether it connected) and its stderr, where Claude
/// Code prints the schema warnings of the servers it checked.
async fn claude_mcp_list(claude: &Path, home: &Path, add: &[&str]) -> (String, String) {
    let model = MockModel::start(Script::new()).expect("start the mock model");
    let mut command = claude_command(claude, home, &model);
    command.args(["mcp", "add"]).args(add);
    run("claude mcp add", command).await;
    let mut command = claude_command(claude, home, &model);
    command.args(["mcp", "list"]);
    run("claude mcp list", command).await
}

async fn claude_flow(claude: &Path, transport: Transport) {
    let flow = flow().await;
    let model = flow.model();
    let home = tempfile::tempdir().unwrap();
    let tokens = home.path().join("tokens.json");
    let spec = flow.spec();
    let (server, config, add) = match transport {
        Transport::Stdio => (
            None,
            json!({"mcpServers": {"serverfs": {"type": "stdio", "command": binary(),
                "args": ["serve", "--workdir", spec]}}}),
            vec![
                "serverfs".to_owned(),
                "--".to_owned(),
                binary().to_owned(),
                "serve".to_owned(),
                "--workdir".to_owned(),
                spec.clone(),
            ],
        ),
        Transport::Http => {
            let token = create_token(&tokens, "claude");
            let server = HttpServe::start(
                &["--workdir", &spec],
                &[("SERVERFS_TOKEN_FILE", tokens.to_str().unwrap())],
            )
            .await;
            let header = format!("Authorization: Bearer {token}");
            let config = json!({"mcpServers": {"serverfs": {"type": "http", "url": server.url,
                "headers": {"Authorization": format!("Bearer {token}")}}}});
            let add = [
                "--transport",
                "http",
                "serverfs",
                &server.url,
                "--header",
                &header,
            ];
            let add = add.map(str::to_owned).to_vec();
            (Some(server), config, add)
        }
    };
    let config_file = home.path().join("mcp.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let mut command = claude_command(claude, home.path(), &model);
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
        .args(["--allowedTools", "mcp__serverfs"]);
    let (stdout, stderr) = run("claude", command).await;
    let results = claude_results(&model);
    assert!(stdout.contains("FLOW_DONE"), "claude: {stdout}\n{stderr}");
    flow.assert_done("claude", &results);

    // Schema warnings: where Claude Code prints them (see the module doc).
    let add: Vec<&str> = add.iter().map(String::as_str).collect();
    let (listed, stderr) = claude_mcp_list(claude, home.path(), &add).await;
    assert!(
        listed.contains("serverfs:") && listed.contains("Connected"),
        "claude mcp list: {listed}\n{stderr}"
    );
    assert_no_schema_warning("claude mcp list", &stderr);
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

/// What Codex handed the model as the parameters of each tool of its MCP
/// server `server` (from the last Responses request), by tool name.
fn codex_offered(model: &MockModel, server: &str) -> BTreeMap<String, Value> {
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/v1/responses")
        .expect("Codex asked the model");
    let namespace = format!("mcp__{server}");
    last.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|tool| tool["name"] == namespace.as_str())
        .flat_map(|tool| tool["tools"].as_array().cloned().unwrap_or_default())
        .map(|tool| {
            (
                tool["name"].as_str().unwrap_or_default().to_owned(),
                tool["parameters"].clone(),
            )
        })
        .collect()
}

/// Where `offered` (what Codex handed the model) departs from `published`
/// (an `inputSchema`) other than by Codex 0.171's routine rewrites, seen on
/// every ServerFS schema: it drops `$schema`, `default`, `minimum` and
/// `maximum`, writes `const: X` as `enum: [X]`, and gives an object
/// without properties `properties: {}`. Anything else is a construct Codex
/// did not take as published (such as a `format` it dropped).
fn codex_rewrites(published: &Value, offered: &Value, at: &str) -> Vec<String> {
    const DROPPED: &[&str] = &["$schema", "default", "minimum", "maximum"];
    match (published, offered) {
        (Value::Object(published), Value::Object(offered)) => {
            let mut found = Vec::new();
            for (key, value) in published {
                let here = format!("{at}/{key}");
                match offered.get(key) {
                    Some(offered) => found.extend(codex_rewrites(value, offered, &here)),
                    None if DROPPED.contains(&key.as_str()) => {}
                    None if key == "const" && offered.get("enum") == Some(&json!([value])) => {}
                    None => found.push(format!("{here}: dropped {value}")),
                }
            }
            for (key, value) in offered {
                let routine = (key == "enum" && published.contains_key("const"))
                    || (key == "properties" && value == &json!({}));
                if !published.contains_key(key) && !routine {
                    found.push(format!("{at}/{key}: added {value}"));
                }
            }
            found
        }
        (Value::Array(published), Value::Array(offered)) if published.len() == offered.len() => {
            published
                .iter()
                .zip(offered)
                .enumerate()
                .flat_map(|(i, (p, o))| codex_rewrites(p, o, &format!("{at}/{i}")))
                .collect()
        }
        _ if published == offered => Vec::new(),
        _ => vec![format!("{at}: {published} became {offered}")],
    }
}

/// `codex exec PROMPT` in `home` with `config` (the TOML of its
/// configuration after the model provider) and `env` added, against
/// `model`: its stdout and stderr.
async fn codex_exec(
    codex: &Path,
    home: &Path,
    model: &MockModel,
    config: &str,
    env: &[(&str, &str)],
) -> (String, String) {
    let codex_home = home.join("codex-home");
    std::fs::create_dir(&codex_home).unwrap();
    let provider = codex_mock_provider(model);
    std::fs::write(
        codex_home.join("config.toml"),
        format!("{provider}env_key = \"MOCK_API_KEY\"\n\n{config}"),
    )
    .unwrap();
    let work = home.join("work");
    std::fs::create_dir(&work).unwrap();
    let mut command = tokio::process::Command::new(codex);
    command
        .args(["exec", "--skip-git-repo-check", "--color", "never", PROMPT])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEX_HOME", &codex_home)
        .env("MOCK_API_KEY", "e2e-not-a-real-key")
        .envs(env.iter().copied());
    run("codex", command).await
}

async fn codex_flow(codex: &Path, transport: Transport) {
    let flow = flow().await;
    let model = flow.model();
    let home = tempfile::tempdir().unwrap();
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
    let config = format!(
        "[mcp_servers.serverfs]\n{server_table}\n\
         [mcp_servers.serverfs.tools.edit_text_file]\napproval_mode = \"approve\"\n"
    );
    let env: Vec<(&str, &str)> = token
        .iter()
        .map(|t| ("SERVERFS_TOKEN", t.as_str()))
        .collect();
    let (stdout, stderr) = codex_exec(codex, home.path(), &model, &config, &env).await;
    let results = codex_results(&model);
    assert!(stdout.contains("FLOW_DONE"), "codex: {stdout}\n{stderr}");
    flow.assert_done("codex", &results);
    assert_no_schema_warning("codex", &stderr);
    // Codex prints no schema warning (see the module doc): every tool must
    // reach the model as published, up to Codex's routine rewrites.
    let offered = codex_offered(&model, "serverfs");
    assert_eq!(
        offered.keys().collect::<Vec<_>>(),
        flow.published.keys().collect::<Vec<_>>(),
        "codex offered other tools than ServerFS lists"
    );
    let rewrites: Vec<String> = flow
        .published
        .iter()
        .flat_map(|(tool, schema)| codex_rewrites(schema, &offered[tool], tool))
        .collect();
    assert!(
        rewrites.is_empty(),
        "codex did not take these schema parts as published:\n{}",
        rewrites.join("\n")
    );
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

/// `mcp-inspector --cli ARGS` to its end: its stdout as JSON, and what it
/// said on stderr besides the served ServerFS's own log lines (a stdio
/// server's stderr is the Inspector's). Anything else there is the
/// Inspector's complaint: ajv's `unknown format … ignored` when a call
/// compiles an outputSchema, a schema-portability report for
/// `tools/list --strict`, a result its outputSchema refuses.
async fn inspect_with_complaints(inspector: &Path, args: &[&str]) -> (Value, Vec<String>) {
    let mut command = tokio::process::Command::new(inspector);
    command.arg("--cli").args(args);
    let (stdout, stderr) = run("MCP Inspector", command).await;
    let complaints = stderr
        .lines()
        .filter(|line| {
            serde_json::from_str::<Value>(line).map_or(true, |log| {
                log["event"].as_str().is_none() || log["level"].is_null()
            })
        })
        .map(str::to_owned)
        .collect();
    let output =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    (output, complaints)
}

/// [`inspect_with_complaints`], checked to have none.
async fn inspect(inspector: &Path, args: &[&str]) -> Value {
    let (output, complaints) = inspect_with_complaints(inspector, args).await;
    assert!(
        complaints.is_empty(),
        "MCP Inspector complained about {args:?}:\n{}",
        complaints.join("\n")
    );
    output
}

/// `server… --method tools/call --tool-name TOOL --tool-args-json ARGS`
/// through the Inspector: the call's structured content, checked to be a
/// success (and, by the Inspector, to match the tool's outputSchema).
async fn inspect_call(inspector: &Path, server: &[&str], tool: &str, arguments: Value) -> Value {
    let arguments = arguments.to_string();
    let call = [
        "--method",
        "tools/call",
        "--tool-name",
        tool,
        "--tool-args-json",
        &arguments,
    ];
    let result = inspect(inspector, &[server, &call[..]].concat()).await;
    assert_eq!(result["isError"], false, "{tool}: {result}");
    result["structuredContent"].clone()
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
    // check the result against it: all 13 tools, the destructive ones last,
    // each with the revision an earlier answer gave.
    let calls = [
        ("list_workdirs", json!({})),
        ("list_directory", json!({"workdir": "demo"})),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "notes.txt"}),
        ),
        ("find_files", json!({"workdir": "demo", "pattern": "*.txt"})),
        (
            "search_text",
            json!({"workdir": "demo", "query": "two", "context_lines": 1}),
        ),
        (
            "create_text_file",
            json!({"workdir": "demo", "path": "new.txt", "content": "x"}),
        ),
        (
            "download_binary_file",
            json!({"workdir": "demo", "path": "blob.bin"}),
        ),
        (
            "upload_binary_file",
            json!({"workdir": "demo", "path": "up.bin", "data_base64": "AAE="}),
        ),
    ];
    for (tool, arguments) in calls {
        inspect_call(&inspector, &files, tool, arguments).await;
    }
    assert!(t.root().join("up.bin").is_file() && t.root().join("new.txt").is_file());
    let directory = inspect_call(
        &inspector,
        &files,
        "create_directory",
        json!({"workdir": "demo", "path": "d"}),
    )
    .await;
    let notes = inspect_call(
        &inspector,
        &files,
        "stat_file",
        json!({"workdir": "demo", "path": "notes.txt"}),
    )
    .await;
    let edited = inspect_call(
        &inspector,
        &files,
        "edit_text_file",
        json!({"workdir": "demo", "path": "notes.txt", "expected_revision": notes["revision"],
               "edits": [{"old_text": "two", "new_text": "TWO"}]}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(t.root().join("notes.txt")).unwrap(),
        "one\nTWO\n"
    );
    inspect_call(
        &inspector,
        &files,
        "delete_file",
        json!({"workdir": "demo", "path": "notes.txt", "expected_revision": edited["revision"]}),
    )
    .await;
    inspect_call(
        &inspector,
        &files,
        "delete_directory",
        json!({"workdir": "demo", "path": "d", "expected_revision": directory["revision"]}),
    )
    .await;
    assert!(!t.root().join("notes.txt").exists() && !t.root().join("d").exists());

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

    // The agent tools, against the Bridge and its fake runtime: listed,
    // and called through a task's life, so that their outputSchemas are
    // compiled too.
    let env = crate::common::bridge::AgentEnv::builder().build();
    let _bridge = env.start_bridge();
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
    let runtimes = inspect_call(&inspector, &agents, "list_agent_runtimes", json!({})).await;
    assert!(runtimes.to_string().contains("fake"), "{runtimes}");
    let submitted = inspect_call(
        &inspector,
        &agents,
        "submit_agent_task",
        json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: wait 60000"}),
    )
    .await;
    let task = json!({"task_id": submitted["task_id"]});
    inspect_call(&inspector, &agents, "get_agent_task", task.clone()).await;
    let mut events = task.clone();
    events["after_event_id"] = json!(0);
    inspect_call(&inspector, &agents, "read_agent_task_events", events).await;
    let cancelled = inspect_call(&inspector, &agents, "cancel_agent_task", task).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

fn mcp_remote() -> Option<PathBuf> {
    agent_cli("SERVERFS_E2E_MCP_REMOTE", "scripts/e2e-clients.sh")
}

/// Claude Desktop's entry for ServerFS over HTTP (docs/clients.md): the
/// stdio client starts `mcp-remote URL --header-file FILE`, which speaks
/// Streamable HTTP to ServerFS with the file's bearer header. The header
/// goes in a file because a header argument with a space is split by
/// clients that rebuild the command line (the Inspector's CLI does: the
/// server then sees no token).
#[tokio::test]
async fn mcp_remote_bridges_a_stdio_client_to_serverfs_over_http() {
    let (Some(inspector), Some(mcp_remote)) = (inspector(), mcp_remote()) else {
        return;
    };
    let t = TempWorkdir::new();
    t.file("notes.txt", "one\ntwo\n");
    let spec = format!("demo={}", t.root().display());
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let token = create_token(&tokens, "desktop");
    let server = HttpServe::start(
        &["--workdir", &spec],
        &[("SERVERFS_TOKEN_FILE", tokens.to_str().unwrap())],
    )
    .await;
    let headers = dir.path().join("headers.txt");
    std::fs::write(&headers, format!("Authorization: Bearer {token}\n")).unwrap();
    // mcp-remote keeps its state under HOME: a throw-away one.
    let home = format!("HOME={}", dir.path().display());
    let bridge = [
        "-e",
        &home,
        mcp_remote.to_str().unwrap(),
        &server.url,
        "--header-file",
        headers.to_str().unwrap(),
        "--silent",
    ];
    // mcp-remote notes on stderr that it loaded the header file: not a
    // complaint, but no schema warning may be among its lines.
    let list = ["--method", "tools/list", "--strict"];
    let (listed, said) = inspect_with_complaints(&inspector, &[&bridge[..], &list].concat()).await;
    assert_eq!(
        listed["tools"].as_array().map(Vec::len),
        Some(11),
        "{listed}"
    );
    assert_no_schema_warning("mcp-remote", &said.join("\n"));
    let read = r#"{"workdir": "demo", "path": "notes.txt"}"#;
    let call = [
        "--method",
        "tools/call",
        "--tool-name",
        "read_text_file",
        "--tool-args-json",
        read,
    ];
    let (result, said) = inspect_with_complaints(&inspector, &[&bridge[..], &call].concat()).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["lines_returned"], 2, "{result}");
    assert_no_schema_warning("mcp-remote", &said.join("\n"));
}

/// The stub's `tools/list` answer, asked of it directly.
fn stub_tools() -> Vec<Value> {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .arg(UINT64_STUB)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the stub");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let answers = String::from_utf8(output.stdout).unwrap();
    let listed: Value = serde_json::from_str(answers.lines().nth(1).expect("two answers")).unwrap();
    listed["result"]["tools"]
        .as_array()
        .cloned()
        .expect("tools")
}

/// The positive control of the schema-warning checks above: served the
/// stub whose schemas carry `format: "uint64"` and a nullable `type` array,
/// each installed client's checked output does show them. If a new client
/// version stops printing them there, this fails, and the checks need a
/// new place to look.
#[tokio::test]
async fn the_schema_checks_see_the_warnings_of_a_uint64_schema() {
    if let Some(claude) = claude() {
        let home = tempfile::tempdir().unwrap();
        let add = ["stub", "--", "python3", UINT64_STUB];
        let (listed, stderr) = claude_mcp_list(&claude, home.path(), &add).await;
        assert!(
            listed.contains("stub:") && listed.contains("Connected"),
            "{listed}"
        );
        assert!(
            schema_warnings(&stderr)
                .iter()
                .any(|w| w.contains("uint64")),
            "claude mcp list printed no schema warning for the stub:\n{stderr}"
        );
    }
    if let Some(codex) = codex() {
        let model = MockModel::start(Script::new().fallback(Reply::text("FLOW_DONE"))).unwrap();
        let home = tempfile::tempdir().unwrap();
        let config = format!(
            "[mcp_servers.stub]\ncommand = \"python3\"\nargs = [{}]\n",
            toml_path(Path::new(UINT64_STUB))
        );
        codex_exec(&codex, home.path(), &model, &config, &[]).await;
        let offered = codex_offered(&model, "stub");
        let published = &stub_tools()[0]["inputSchema"];
        let rewrites = codex_rewrites(published, &offered["probe"], "probe");
        assert!(
            rewrites.iter().any(|r| r.contains("/format: dropped")),
            "codex took the stub's schema as published: {rewrites:?}\n{}",
            offered["probe"]
        );
    }
    if let Some(inspector) = inspector() {
        let stub = ["python3", UINT64_STUB];
        let list = ["--method", "tools/list", "--strict"];
        let (_, complaints) =
            inspect_with_complaints(&inspector, &[&stub[..], &list].concat()).await;
        assert!(
            complaints.iter().any(|c| c.contains("is an array")),
            "no portability warning for the stub: {complaints:?}"
        );
        let call = [
            "--method",
            "tools/call",
            "--tool-name",
            "probe",
            "--tool-arg",
            "n=3",
        ];
        let (_, complaints) =
            inspect_with_complaints(&inspector, &[&stub[..], &call].concat()).await;
        assert!(
            schema_warnings(&complaints.join("\n"))
                .iter()
                .any(|w| w.contains("unknown format")),
            "no ajv warning calling the stub: {complaints:?}"
        );
    }
}
