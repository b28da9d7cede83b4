//! What a model sees when its client passes only a result's `content`
//! (issue 17): every tool's text block carries the fields the next call
//! takes, and its bulk (file lines, matches, entries, a diff, an agent's
//! response) in a form a model reads directly.
//!
//! The text is a JSON header line — the structured content, with the bulk
//! field replaced by a note — then the bulk as text (`src/mcp/text.rs`).
//! [`carries`] checks that shape for each call and that the fields the
//! next call needs are in the header with their structured values; it is
//! what fails if a rendering drops one.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::Server;
use crate::common::agent::{start_long_task, submit, wait_event, wait_status, wait_until};
use crate::common::bridge::AgentEnv;

/// The first text block of `result`.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|block| block.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_else(|| panic!("no text block: {:?}", result.content))
}

/// The text block split into its JSON header and the body after it.
fn split(text: &str) -> (Value, &str) {
    let (header, body) = text.split_once('\n').unwrap_or((text, ""));
    let header = serde_json::from_str(header)
        .unwrap_or_else(|e| panic!("the first line is not a JSON header ({e}): {text}"));
    (header, body)
}

/// Calls `tool`, which must succeed, and checks its text block: the header
/// is the structured content with `bulk` (if any) replaced by a note, and
/// each of `needs` is in it with its structured value. Returns the
/// structured content and the body.
async fn carries(
    server: &Server,
    tool: &str,
    args: Value,
    bulk: Option<&str>,
    needs: &[&str],
) -> (Value, String) {
    let result = server.call(tool, args.clone()).await;
    assert_ne!(
        result.is_error,
        Some(true),
        "{tool}({args}): {:?}",
        result.content
    );
    let structured = result.structured_content.clone().expect("structured");
    server.assert_matches_output_schema(tool, &structured);
    let text = text_of(&result);
    let (header, body) = split(&text);
    for need in needs {
        assert!(
            header.get(*need).is_some() && header[*need] == structured[*need],
            "{tool}: the text lacks {need} = {}:\n{text}",
            structured[*need]
        );
    }
    let mut expected = structured.clone();
    match bulk {
        Some(field) => {
            let note = header[field]
                .as_str()
                .unwrap_or_else(|| panic!("{tool}: {field} in the header is not a note: {text}"));
            assert!(note.starts_with('<') && note.ends_with('>'), "{note}");
            expected[field] = header[field].clone();
        }
        None => assert_eq!(body, "", "{tool}: a body without a bulk field"),
    }
    pretty_assertions::assert_eq!(header, expected, "{tool}: header and structure differ");
    (structured, body.to_owned())
}

/// A workdir with a file long enough to page, some matches and a few
/// entries; writable, with binary transfer.
async fn files_server(t: &TempWorkdir) -> Server {
    let lines: String = (1..=30)
        .map(|i| format!("line {i} \"quoted\"\tand tab\n"))
        .collect();
    t.file("notes.txt", &lines);
    t.file(
        "src/lib.rs",
        "fn a() {}\n// needle one\nfn b() {}\n\nfn c() {}\n// needle two\n",
    );
    t.file("src/main.rs", "fn main() {\n    println!(\"needle\");\n}\n");
    t.file("blob.bin", "\u{0}\u{1}binary");
    let spec = format!("demo={}:rw", t.root().display());
    Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_BINARY_TRANSFER_ENABLED", "true")],
    )
    .await
}

#[tokio::test]
async fn read_pages_carry_their_lines_cursors_and_revision() {
    let t = TempWorkdir::new();
    let server = files_server(&t).await;
    let needs = [
        "revision",
        "has_more",
        "next_cursor",
        "next_start_line",
        "prev_cursor",
        "start_line",
        "end_line",
    ];
    let args = json!({"workdir": "demo", "path": "notes.txt", "max_lines": 10});
    let (first, body) = carries(&server, "read_text_file", args, Some("content"), &needs).await;
    assert_eq!(
        body,
        first["content"].as_str().unwrap(),
        "the lines verbatim"
    );
    assert!(body.contains("line 10 \"quoted\"\tand tab\n"), "{body}");
    assert_eq!(first["has_more"], true);

    // The cursor as the model read it from the text continues the file.
    let args = json!({"workdir": "demo", "path": "notes.txt", "max_lines": 10,
                      "cursor": first["next_cursor"]});
    let (second, body) = carries(&server, "read_text_file", args, Some("content"), &needs).await;
    assert!(body.starts_with("line 11 "), "{body}");
    assert!(second["prev_cursor"].is_string());

    let args = json!({"workdir": "demo", "path": "notes.txt", "tail_lines": 3});
    let (_, body) = carries(&server, "read_text_file", args, Some("content"), &needs).await;
    assert!(body.starts_with("line 28 "), "{body}");
}

#[tokio::test]
async fn searches_carry_paths_lines_and_context_as_ripgrep_prints_them() {
    let t = TempWorkdir::new();
    let server = files_server(&t).await;
    let args = json!({"workdir": "demo", "query": "needle", "context_lines": 1});
    let (found, body) = carries(
        &server,
        "search_text",
        args,
        Some("matches"),
        &["returned", "truncated", "truncated_reason"],
    )
    .await;
    assert_eq!(found["returned"], 3);
    assert_eq!(
        body,
        "src/lib.rs-1-fn a() {}\n\
         src/lib.rs:2:// needle one\n\
         src/lib.rs-3-fn b() {}\n\
         --\n\
         src/lib.rs-5-fn c() {}\n\
         src/lib.rs:6:// needle two\n\
         --\n\
         src/main.rs-1-fn main() {\n\
         src/main.rs:2:    println!(\"needle\");\n\
         src/main.rs-3-}\n"
    );

    let args = json!({"workdir": "demo", "pattern": "*.rs"});
    let (_, body) = carries(
        &server,
        "find_files",
        args,
        Some("matches"),
        &["returned", "truncated", "truncated_reason"],
    )
    .await;
    assert_eq!(body, "src/lib.rs\nsrc/main.rs\n");
}

#[tokio::test]
async fn listings_carry_each_entry_and_the_next_offset() {
    let t = TempWorkdir::new();
    let server = files_server(&t).await;
    // One line an entry, with or without its size and time; the header's
    // note names the columns.
    let modes = [
        (
            true,
            "type, size in bytes (- if not a file), modified_at, path",
        ),
        (false, "type, path"),
    ];
    for (metadata, columns) in modes {
        let args = json!({"workdir": "demo", "path": "", "limit": 2, "metadata": metadata});
        let (page, body) = carries(
            &server,
            "list_directory",
            args.clone(),
            Some("entries"),
            &["offset", "returned", "has_more"],
        )
        .await;
        assert_eq!(page["has_more"], true);
        let expected: String = page["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                let kind = entry["type"].as_str().unwrap();
                let path = entry["path"].as_str().unwrap();
                if !metadata {
                    return format!("{kind}\t{path}\n");
                }
                let size = entry["size"]
                    .as_u64()
                    .map_or("-".to_owned(), |s| s.to_string());
                let modified = entry["modified_at"].as_str().unwrap();
                format!("{kind}\t{size}\t{modified}\t{path}\n")
            })
            .collect();
        assert_eq!(
            (body.lines().count(), body.as_str()),
            (2, expected.as_str())
        );
        assert!(body.starts_with("file\t"), "blob.bin first: {body}");
        let text = text_of(&server.call("list_directory", args).await);
        let note = format!("<2 below, one per line: {columns}; tab-separated>");
        assert!(text.contains(&note), "{text}");
    }
    carries(&server, "list_workdirs", json!({}), None, &["workdirs"]).await;
}

#[tokio::test]
async fn mutations_carry_the_revisions_and_diffs_the_next_call_needs() {
    let t = TempWorkdir::new();
    let server = files_server(&t).await;
    let (stat, _) = carries(
        &server,
        "stat_file",
        json!({"workdir": "demo", "path": "notes.txt"}),
        None,
        &["revision", "type", "size"],
    )
    .await;
    let edit = json!({"workdir": "demo", "path": "notes.txt",
                      "expected_revision": stat["revision"],
                      "edits": [{"old_text": "line 2 ", "new_text": "LINE TWO "}]});
    let mut dry = edit.clone();
    dry["dry_run"] = json!(true);
    let (preview, body) = carries(
        &server,
        "edit_text_file",
        dry,
        Some("diff"),
        &["revision", "edited", "dry_run", "diff_truncated"],
    )
    .await;
    assert_eq!(body, preview["diff"].as_str().unwrap());
    assert!(body.contains("+LINE TWO \"quoted\"\tand tab\n"), "{body}");
    let (edited, _) = carries(&server, "edit_text_file", edit, Some("diff"), &["revision"]).await;
    assert_ne!(edited["revision"], stat["revision"]);

    let (created, _) = carries(
        &server,
        "create_text_file",
        json!({"workdir": "demo", "path": "new.txt", "content": "x"}),
        None,
        &["revision", "path"],
    )
    .await;
    carries(
        &server,
        "delete_file",
        json!({"workdir": "demo", "path": "new.txt", "expected_revision": created["revision"]}),
        None,
        &["deleted", "revision_deleted"],
    )
    .await;
    let (dir, _) = carries(
        &server,
        "create_directory",
        json!({"workdir": "demo", "path": "d"}),
        None,
        &["revision"],
    )
    .await;
    carries(
        &server,
        "delete_directory",
        json!({"workdir": "demo", "path": "d", "expected_revision": dir["revision"]}),
        None,
        &["deleted"],
    )
    .await;
    carries(
        &server,
        "upload_binary_file",
        json!({"workdir": "demo", "path": "up.bin", "data_base64": "AAE="}),
        None,
        &["revision", "sha256"],
    )
    .await;
    // A download's bytes are a blob resource after the text; the text
    // carries where the next range starts.
    carries(
        &server,
        "download_binary_file",
        json!({"workdir": "demo", "path": "blob.bin", "max_bytes": 3}),
        None,
        &["revision", "offset", "bytes_returned", "has_more", "size"],
    )
    .await;

    // Errors: the code leads the text.
    let result = server
        .call(
            "edit_text_file",
            json!({"workdir": "demo", "path": "notes.txt",
            "expected_revision": stat["revision"],
            "edits": [{"old_text": "line 3 ", "new_text": "x"}]}),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        text_of(&result).starts_with("REVISION_CONFLICT: "),
        "{}",
        text_of(&result)
    );
}

#[tokio::test]
async fn agent_results_carry_ids_pending_requests_and_responses() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    let (submitted, _) = carries(
        &server,
        "submit_agent_task",
        json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: approval echo hi"}),
        None,
        &["task_id", "status"],
    )
    .await;
    let task = submitted["task_id"].as_str().unwrap().to_owned();
    wait_status(&server, &task, "waiting_for_approval").await;
    let (view, body) = carries(
        &server,
        "get_agent_task",
        json!({"task_id": task}),
        None,
        &["status", "pending_request", "pending_request_id"],
    )
    .await;
    assert_eq!(body, "");
    let request = &view["pending_request"];
    assert!(
        request["request_id"].is_string() && request["payload"]["available_decisions"].is_array()
    );
    carries(
        &server,
        "respond_agent_approval",
        json!({"task_id": task, "request_id": request["request_id"], "decision": "approve_once"}),
        None,
        &["resolved", "request_id"],
    )
    .await;
    let done = wait_status(&server, &task, "succeeded").await;
    let (_, body) = carries(
        &server,
        "get_agent_task",
        json!({"task_id": task}),
        Some("final_response"),
        &["status", "final_response_truncated", "result"],
    )
    .await;
    assert_eq!(body, done["final_response"].as_str().unwrap());
    // An inline result: the refusal says where the response is.
    let inline = server
        .call("read_agent_task_result", json!({"task_id": task}))
        .await;
    let refusal = text_of(&inline);
    assert!(
        refusal.starts_with("AGENT_RESULT_NOT_RETRIEVABLE: ") && refusal.contains("final_response"),
        "{refusal}"
    );
    let (events, _) = carries(
        &server,
        "read_agent_task_events",
        json!({"task_id": task}),
        None,
        &["events", "next_after_event_id"],
    )
    .await;
    assert!(!events["events"].as_array().unwrap().is_empty());

    // A spooled response: the chunk's text verbatim, the offset to go on.
    let long: String = "spooled → text ".repeat(200);
    let spooled = submit(&server, &format!("fake: complete {long}")).await;
    wait_until(&server, &spooled, "a spooled result", |v| {
        v["final_response_truncated"] == true
    })
    .await;
    let (chunk, body) = carries(
        &server,
        "read_agent_task_result",
        json!({"task_id": spooled, "max_bytes": 1000}),
        Some("text"),
        &["next_offset_bytes", "eof"],
    )
    .await;
    assert_eq!(body, chunk["text"].as_str().unwrap());
    assert_eq!(chunk["eof"], false);

    // The catalogue, a question, a steering message and a cancel.
    carries(
        &server,
        "list_agent_runtimes",
        json!({}),
        None,
        &["runtimes"],
    )
    .await;
    carries(
        &server,
        "list_agent_models",
        json!({"runtime": "fake"}),
        None,
        &["runtime", "models"],
    )
    .await;
    let asking = submit(&server, "fake: question Which colour?").await;
    let view = wait_status(&server, &asking, "waiting_for_question").await;
    carries(
        &server,
        "answer_agent_question",
        json!({"task_id": asking, "request_id": view["pending_request_id"],
               "answers": [{"question_id": "q1", "selected_option_ids": ["b"]}]}),
        None,
        &["resolved", "request_id"],
    )
    .await;
    // One agent writer per workdir at a time.
    wait_status(&server, &asking, "succeeded").await;
    let steered = submit(&server, "fake: steer").await;
    wait_event(&server, &steered, "turn.started").await;
    carries(
        &server,
        "send_agent_message",
        json!({"task_id": steered, "message": "turn left"}),
        None,
        &["accepted", "task_id"],
    )
    .await;
    wait_status(&server, &steered, "succeeded").await;
    let long = start_long_task(&server).await;
    carries(
        &server,
        "cancel_agent_task",
        json!({"task_id": long}),
        None,
        &["status", "task_id"],
    )
    .await;
}

/// Every published tool is checked by a [`carries`] call in this file, so
/// a new tool cannot ship without its text block being checked: the tool
/// names come from the committed `tools/list` fixtures, the checked ones
/// from the first string literal of each `carries(` call here.
#[test]
fn every_tool_has_its_text_checked() {
    let source = include_str!("model_text.rs");
    let checked: std::collections::BTreeSet<&str> = source
        .split("carries(")
        .skip(1)
        .filter_map(|call| call.split('"').nth(1))
        .collect();
    let fixtures = [
        include_str!("../fixtures/tools_list_binary.json"),
        include_str!("../fixtures/tools_list_agent.json"),
    ];
    let mut unchecked = Vec::new();
    for fixture in fixtures {
        let tools: Vec<Value> = serde_json::from_str(fixture).unwrap();
        for tool in tools {
            let name = tool["name"].as_str().unwrap().to_owned();
            if !checked.contains(name.as_str()) && !unchecked.contains(&name) {
                unchecked.push(name);
            }
        }
    }
    assert!(
        unchecked.is_empty(),
        "tools whose text block no test checks: {unchecked:?}"
    );
}

/// The text block against the structured JSON (compact, as sent) for a
/// read page, a search result and a listing of real source files: the
/// figures `docs/tools.md` reports. The rendering must stay smaller than
/// the JSON it replaces for content-only clients.
#[tokio::test]
async fn text_blocks_are_smaller_than_the_structured_json() {
    let t = TempWorkdir::new();
    let sources = concat!(env!("CARGO_MANIFEST_DIR"), "/../serverfs-fs/src");
    for entry in std::fs::read_dir(sources).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            t.file(
                &format!("src/{name}"),
                std::fs::read_to_string(&path).unwrap(),
            );
        }
    }
    for i in 0..50 {
        t.file(&format!("listing/entry_{i:02}.txt"), "x".repeat(i * 37));
    }
    let server = Server::with_workdir("demo", &t.root()).await;
    let cases = [
        (
            "a 200-line page of walk.rs",
            "read_text_file",
            json!({"workdir": "demo", "path": "src/walk.rs", "max_lines": 200}),
        ),
        (
            "50 matches of `self.` with 2 context lines",
            "search_text",
            json!({"workdir": "demo", "path": "src", "query": "self.", "context_lines": 2,
                   "limit": 50}),
        ),
        (
            "a listing of 50 entries",
            "list_directory",
            json!({"workdir": "demo", "path": "listing", "limit": 50}),
        ),
    ];
    for (what, tool, args) in cases {
        let result = server.call(tool, args).await;
        let text = text_of(&result);
        let structured = result.structured_content.clone().unwrap().to_string();
        let ratio = text.len() as f64 / structured.len() as f64;
        eprintln!(
            "text size: {what}: {} bytes of text, {} of structured JSON ({:.0} %)",
            text.len(),
            structured.len(),
            ratio * 100.0
        );
        assert!(ratio < 1.0, "{what}: the text is larger than the JSON");
    }
}

/// `[server] text_content = "summary"` (or `SERVERFS_TEXT_CONTENT`) trades
/// the full text for the one-line summary; the structured content is the
/// same either way, and errors keep `CODE: message`.
#[tokio::test]
async fn text_content_summary_sends_one_line_and_the_same_structure() {
    let t = TempWorkdir::new();
    t.file("notes.txt", "alpha\nbeta\n");
    let read = json!({"workdir": "demo", "path": "notes.txt"});
    let missing = json!({"workdir": "demo", "path": "absent.txt"});
    let config = t.root().join("serverfs.toml");
    let toml = |mode: &str| {
        format!(
            "[server]\ntext_content = \"{mode}\"\n[[workdirs]]\nalias = \"demo\"\npath = {:?}\n",
            t.root().display().to_string()
        )
    };
    let spec = format!("demo={}", t.root().display());

    // The full text, by default and when configured.
    let default = Server::with_workdir("demo", &t.root()).await;
    std::fs::write(&config, toml("full")).unwrap();
    let full = Server::start(&["--config", config.to_str().unwrap()], &[]).await;
    let mut structured = None;
    for server in [&default, &full] {
        let (page, body) = carries(
            server,
            "read_text_file",
            read.clone(),
            Some("content"),
            &["revision"],
        )
        .await;
        assert_eq!(body, "alpha\nbeta\n");
        structured = Some(page);
    }
    let structured = structured.unwrap();

    // The summary, from the file and from the environment.
    std::fs::write(&config, toml("summary")).unwrap();
    let from_file = Server::start(&["--config", config.to_str().unwrap()], &[]).await;
    let from_env = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_TEXT_CONTENT", "summary")],
    )
    .await;
    for server in [&from_file, &from_env] {
        let result = server.call("read_text_file", read.clone()).await;
        let text = text_of(&result);
        assert_eq!(
            text, "demo:notes.txt lines 1-2 (11 bytes, content in structured result); end of file",
            "the summary"
        );
        let page = result.structured_content.clone().expect("structured");
        pretty_assertions::assert_eq!(page, structured);
        let error = server.call("read_text_file", missing.clone()).await;
        assert!(
            text_of(&error).starts_with("PATH_NOT_FOUND: "),
            "{}",
            text_of(&error)
        );
    }
}
