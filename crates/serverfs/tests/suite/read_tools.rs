//! Success shapes of each read tool, and the codes each can raise.

use serde_json::json;
use serverfs_testkit::TempWorkdir;

use crate::common::Server;

#[tokio::test]
async fn list_workdirs_reports_policy_without_host_paths() {
    let a = TempWorkdir::new();
    let b = TempWorkdir::new();
    let specs = [
        format!("docs={}", a.root().display()),
        format!("work={}:rw", b.root().display()),
    ];
    let server = Server::start(&["--workdir", &specs[0], "--workdir", &specs[1]], &[]).await;
    let result = server.ok("list_workdirs", json!({})).await;
    assert_eq!(
        result,
        json!({"workdirs": [
            {"alias": "docs", "description": null, "access": "read-only", "binary_transfer": false,
             "agent_mode": "disabled", "agent_runtimes": [], "approvals": "model"},
            {"alias": "work", "description": null, "access": "read-write", "binary_transfer": false,
             "agent_mode": "disabled", "agent_runtimes": [], "approvals": "model"},
        ]})
    );
    assert!(!result.to_string().contains(&a.root().display().to_string()));
}

#[tokio::test]
async fn list_directory_shape() {
    let t = TempWorkdir::new();
    t.file("src/b.rs", "bb")
        .file("src/a.rs", "a")
        .dir("src/sub")
        .symlink("src/link", "a.rs");
    let _ = t.fifo("src/pipe");
    let server = Server::with_workdir("w", &t.root()).await;
    let r = server
        .ok(
            "list_directory",
            json!({"workdir": "w", "path": "./src/", "limit": 3}),
        )
        .await;
    assert_eq!(r["workdir"], "w");
    assert_eq!(r["path"], "src", "normalized path is echoed");
    assert_eq!(
        (
            r["offset"].clone(),
            r["limit"].clone(),
            r["returned"].clone()
        ),
        (json!(0), json!(3), json!(3))
    );
    assert_eq!(r["has_more"], true);
    let entries = r["entries"].as_array().unwrap();
    let summary: Vec<(String, String, serde_json::Value)> = entries
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
                e["size"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("src/a.rs".to_owned(), "file".to_owned(), json!(1)),
            ("src/b.rs".to_owned(), "file".to_owned(), json!(2)),
            ("src/link".to_owned(), "symlink".to_owned(), json!(null)),
        ]
    );
    let modified = entries[0]["modified_at"].as_str().unwrap();
    assert_eq!(modified.len(), 20);
    assert!(modified.ends_with('Z'));
    let rest = server
        .ok(
            "list_directory",
            json!({"workdir": "w", "path": "src", "offset": 3}),
        )
        .await;
    let names: Vec<&str> = rest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pipe", "sub"]);
    assert_eq!(rest["has_more"], false);
    // Names and types only: the same entries and paging, no size or time.
    let kinds = server
        .ok(
            "list_directory",
            json!({"workdir": "w", "path": "src", "offset": 1, "limit": 3, "metadata": false}),
        )
        .await;
    assert_eq!(
        kinds["entries"],
        json!([
            {"name": "b.rs", "path": "src/b.rs", "type": "file", "size": null, "modified_at": null},
            {"name": "link", "path": "src/link", "type": "symlink", "size": null, "modified_at": null},
            {"name": "pipe", "path": "src/pipe", "type": "other", "size": null, "modified_at": null},
        ])
    );
    assert_eq!(
        (kinds["returned"].clone(), kinds["has_more"].clone()),
        (json!(3), json!(true))
    );
    for metadata in [json!("no"), json!(null), json!(0)] {
        assert_eq!(
            server
                .err(
                    "list_directory",
                    json!({"workdir": "w", "path": "src", "metadata": metadata})
                )
                .await,
            "INVALID_ARGUMENT",
            "{metadata}"
        );
    }
    // The cap applies silently and is reported.
    let capped = server
        .ok(
            "list_directory",
            json!({"workdir": "w", "limit": 1_000_000}),
        )
        .await;
    assert_eq!(capped["limit"], 500);
    for (path, code) in [
        ("src/a.rs", "NOT_A_DIRECTORY"),
        ("src/pipe", "NOT_A_DIRECTORY"),
        ("src/link", "SYMLINK_NOT_ALLOWED"),
        ("nope", "PATH_NOT_FOUND"),
        ("../x", "PATH_OUTSIDE_WORKDIR"),
        (".git", "HIDDEN_PATH_NOT_ALLOWED"),
    ] {
        assert_eq!(
            server
                .err("list_directory", json!({"workdir": "w", "path": path}))
                .await,
            code,
            "{path}"
        );
    }
}

#[tokio::test]
async fn stat_file_shape_and_revision_agreement() {
    let t = TempWorkdir::new();
    t.file("notes/a.md", "# hi\n").symlink("notes/l", "a.md");
    let server = Server::with_workdir("w", &t.root()).await;
    let stat = server
        .ok("stat_file", json!({"workdir": "w", "path": "notes//a.md"}))
        .await;
    let revision = stat["revision"].as_str().unwrap().to_owned();
    assert_eq!(stat["path"], "notes/a.md");
    assert_eq!(stat["type"], "file");
    assert_eq!(stat["size"], 5);
    assert_eq!(stat["mime_type"], "text/markdown");
    assert!(
        revision.starts_with("v1:") && revision.len() == 19,
        "{revision}"
    );
    let read = server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "notes/a.md"}),
        )
        .await;
    assert_eq!(read["revision"], revision.as_str(), "stat and read agree");
    let link = server
        .ok("stat_file", json!({"workdir": "w", "path": "notes/l"}))
        .await;
    assert_eq!(
        (
            link["type"].clone(),
            link["size"].clone(),
            link["mime_type"].clone()
        ),
        (json!("symlink"), json!(null), json!(null))
    );
    let root = server
        .ok("stat_file", json!({"workdir": "w", "path": ""}))
        .await;
    assert_eq!(
        (root["path"].clone(), root["type"].clone()),
        (json!("."), json!("directory"))
    );
    // The result carries no identity numbers.
    let keys: Vec<&String> = stat.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 7, "{keys:?}");
    for (path, code) in [
        ("notes/l/x", "SYMLINK_NOT_ALLOWED"),
        ("notes/a.md/x", "NOT_A_DIRECTORY"),
        ("missing", "PATH_NOT_FOUND"),
        ("id_rsa", "DENIED_PATH"),
    ] {
        assert_eq!(
            server
                .err("stat_file", json!({"workdir": "w", "path": path}))
                .await,
            code,
            "{path}"
        );
    }
}

#[tokio::test]
async fn read_text_file_shape_and_codes() {
    let t = TempWorkdir::new();
    t.file("a.txt", "one\r\ntwo\nthree")
        .file("bin.dat", b"\x00\x01\x02")
        .file("latin1.txt", b"caf\xe9\n")
        .file("long.txt", "x".repeat(600 * 1024))
        .dir("d");
    let server = Server::with_workdir("w", &t.root()).await;
    let r = server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "a.txt", "max_lines": 2}),
        )
        .await;
    assert_eq!(r["content"], "one\r\ntwo\n");
    assert_eq!(
        (r["start_line"].clone(), r["end_line"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(
        (r["has_more"].clone(), r["next_start_line"].clone()),
        (json!(true), json!(3))
    );
    assert_eq!(r["bytes_returned"], 9);
    let cursor = r["next_cursor"].as_str().unwrap();
    let next = server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "a.txt", "cursor": cursor}),
        )
        .await;
    assert_eq!(next["content"], "three");
    assert_eq!(
        (
            next["start_line"].clone(),
            next["has_more"].clone(),
            next["next_cursor"].clone()
        ),
        (json!(3), json!(false), json!(null))
    );
    for (path, code) in [
        ("bin.dat", "BINARY_FILE"),
        ("latin1.txt", "UNSUPPORTED_TEXT_ENCODING"),
        ("long.txt", "LINE_TOO_LARGE"),
        ("d", "NOT_A_FILE"),
        ("", "NOT_A_FILE"),
        ("missing.txt", "PATH_NOT_FOUND"),
    ] {
        assert_eq!(
            server
                .err("read_text_file", json!({"workdir": "w", "path": path}))
                .await,
            code,
            "{path}"
        );
    }
}

#[tokio::test]
async fn tail_lines_and_paging_backwards() {
    let t = TempWorkdir::new();
    let text: String = (1..=10).map(|i| format!("{i}\n")).collect();
    t.file("ten.txt", &text);
    let server = Server::with_workdir("w", &t.root()).await;
    let tail = server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "ten.txt", "tail_lines": 4}),
        )
        .await;
    assert_eq!(tail["content"], "7\n8\n9\n10\n");
    // A small file is counted, so its numbers are there.
    assert_eq!(
        (
            tail["start_line"].clone(),
            tail["end_line"].clone(),
            tail["lines_returned"].clone(),
            tail["from_end"].clone(),
            tail["has_more"].clone(),
            tail["next_cursor"].clone()
        ),
        (
            json!(7),
            json!(10),
            json!(4),
            json!(0),
            json!(false),
            json!(null)
        )
    );
    let mut pages = vec![tail["content"].as_str().unwrap().to_owned()];
    let mut cursor = tail["prev_cursor"].clone();
    while let Some(token) = cursor.as_str() {
        let page = server
            .ok(
                "read_text_file",
                json!({"workdir": "w", "path": "ten.txt", "cursor": token, "max_lines": 4}),
            )
            .await;
        pages.push(page["content"].as_str().unwrap().to_owned());
        cursor = page["prev_cursor"].clone();
    }
    pages.reverse();
    assert_eq!(pages, ["1\n2\n", "3\n4\n5\n6\n", "7\n8\n9\n10\n"]);
    // tail_lines is capped like max_lines.
    let all = server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "ten.txt", "tail_lines": 1_000_000}),
        )
        .await;
    assert_eq!(all["content"], text);
}
