//! The audit trail: one JSON `tool_call` line per call, nothing secret.

use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::Server;

#[tokio::test]
async fn one_tool_call_line_per_call_without_content_or_host_paths() {
    let t = TempWorkdir::new();
    t.file("secret-notes.txt", "TOP-SECRET-CONTENT\n");
    let server = Server::with_workdir("w", &t.root()).await;
    server.ok("list_workdirs", json!({})).await;
    server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "./secret-notes.txt"}),
        )
        .await;
    server
        .err("stat_file", json!({"workdir": "w", "path": "/etc/passwd"}))
        .await;
    server
        .err("stat_file", json!({"workdir": "zz", "path": "x"}))
        .await;
    let lines = server.shutdown().await;

    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 4, "{lines:#?}");
    let pick = |e: &Value| {
        json!({
            "tool": e["tool"], "workdir": e["workdir"], "path": e["path"],
            "success": e["success"], "error_code": e["error_code"],
        })
    };
    assert_eq!(
        calls.iter().map(|e| pick(e)).collect::<Vec<_>>(),
        [
            json!({"tool": "list_workdirs", "workdir": null, "path": null, "success": true, "error_code": null}),
            json!({"tool": "read_text_file", "workdir": "w", "path": "secret-notes.txt", "success": true, "error_code": null}),
            json!({"tool": "stat_file", "workdir": "w", "path": null, "success": false, "error_code": "PATH_OUTSIDE_WORKDIR"}),
            json!({"tool": "stat_file", "workdir": null, "path": null, "success": false, "error_code": "WORKDIR_NOT_FOUND"}),
        ]
    );
    assert_eq!(calls[0]["returned"], 1);
    assert_eq!(calls[1]["bytes_returned"], 19);
    assert_eq!(
        (calls[1]["start_line"].clone(), calls[1]["end_line"].clone()),
        (json!(1), json!(1))
    );
    for call in &calls {
        assert!(call["duration_ms"].is_number());
        assert_eq!(call["level"], "INFO");
        assert!(call["timestamp"].is_string());
    }
    assert!(events.iter().any(|e| e["event"] == "startup"));
    let all = lines.join("\n");
    assert!(
        !all.contains("TOP-SECRET-CONTENT"),
        "content leaked into logs"
    );
    assert!(
        !all.contains(&t.root().display().to_string()),
        "host path leaked into logs"
    );
    assert!(
        !all.contains("/etc/passwd"),
        "raw caller path leaked into logs"
    );
}
