//! Hard links (issue 14, item 11): a hard link planted in a workdir is
//! another name of a file outside it, which no path check can see. Every
//! path-taking read tool and the resource refuse its content (search skips
//! and counts it) unless the workdir reads hard-linked files; metadata tools
//! still show it. New configurations (`--workdir`, TOML) refuse by default,
//! the upstream container environment keeps reading.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};

use crate::common::{Server, TIMEOUT};

const REFUSED: &str = "MULTIPLE_HARDLINKS_NOT_ALLOWED";

/// A workdir holding `docs/planted.txt`, a hard link to the fixture's
/// outside secret, beside `docs/own.txt`, a file of its own whose text the
/// same search finds.
fn planted() -> TempWorkdir {
    let t = TempWorkdir::new();
    t.file("docs/own.txt", "inside SECRET\n");
    std::fs::hard_link(t.outside().join("secret.txt"), t.path("docs/planted.txt")).unwrap();
    t
}

/// The resource's text, or the error's message (`CODE: …`).
async fn resource(server: &Server, uri: &str) -> Result<String, String> {
    let request = ReadResourceRequestParams::new(uri.to_owned());
    match tokio::time::timeout(TIMEOUT, server.client().read_resource(request))
        .await
        .unwrap()
    {
        Ok(result) => match &result.contents[..] {
            [ResourceContents::TextResourceContents { text, .. }] => Ok(text.clone()),
            other => panic!("unexpected contents {other:?}"),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// What every content read of `docs/planted.txt` in workdir `w` gives: the
/// code of each refusal, or the content read.
async fn content_reads(server: &Server, w: &str) -> Vec<(&'static str, Result<String, String>)> {
    let path = "docs/planted.txt";
    let mut reads = Vec::new();
    for (name, tool, args) in [
        (
            "read_text_file",
            "read_text_file",
            json!({"workdir": w, "path": path}),
        ),
        (
            "read_text_file tail_lines",
            "read_text_file",
            json!({"workdir": w, "path": path, "tail_lines": 5}),
        ),
        (
            "download_binary_file",
            "download_binary_file",
            json!({"workdir": w, "path": path}),
        ),
        (
            "download_binary_file range",
            "download_binary_file",
            json!({"workdir": w, "path": path, "offset": 2, "max_bytes": 100}),
        ),
    ] {
        let result = server.call(tool, args).await;
        let outcome = if result.is_error == Some(true) {
            let structured = result.structured_content.unwrap();
            Err(structured["error"]["code"].as_str().unwrap().to_owned())
        } else if tool == "read_text_file" {
            Ok(result.structured_content.unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned())
        } else {
            let block = serde_json::to_value(result.content.last().unwrap()).unwrap();
            let bytes = STANDARD
                .decode(block["resource"]["blob"].as_str().unwrap())
                .unwrap();
            Ok(String::from_utf8(bytes).unwrap())
        };
        reads.push((name, outcome));
    }
    let uri = format!("serverfs://{w}/{path}");
    let outcome = resource(server, &uri).await.map_err(|message| {
        if message.contains(&format!("{REFUSED}: ")) {
            REFUSED.to_owned()
        } else {
            message
        }
    });
    reads.push(("resource", outcome));
    reads
}

/// `search_text` for `SECRET` from `path` (optionally restricted by
/// `glob`): the files with matches, and `files_skipped`.
async fn search(server: &Server, w: &str, path: &str, glob: Option<&str>) -> (Vec<String>, u64) {
    let mut args = json!({"workdir": w, "path": path, "query": "SECRET"});
    if let Some(glob) = glob {
        args["glob"] = json!(glob);
    }
    let found = server.ok("search_text", args).await;
    let mut files: Vec<String> = found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect();
    files.dedup();
    (files, found["files_skipped"].as_u64().unwrap())
}

fn refused() -> Vec<(&'static str, Result<String, String>)> {
    [
        "read_text_file",
        "read_text_file tail_lines",
        "download_binary_file",
        "download_binary_file range",
        "resource",
    ]
    .into_iter()
    .map(|name| (name, Err(REFUSED.to_owned())))
    .collect()
}

fn read_through() -> Vec<(&'static str, Result<String, String>)> {
    vec![
        ("read_text_file", Ok(OUTSIDE_SECRET.to_owned())),
        ("read_text_file tail_lines", Ok(OUTSIDE_SECRET.to_owned())),
        ("download_binary_file", Ok(OUTSIDE_SECRET.to_owned())),
        (
            "download_binary_file range",
            Ok(OUTSIDE_SECRET[2..].to_owned()),
        ),
        ("resource", Ok(OUTSIDE_SECRET.to_owned())),
    ]
}

/// The quick start is a new configuration: nothing reads the planted
/// link's content, search skips it and says so in `files_skipped` and in
/// its text, while metadata tools still show the name. The outside
/// content appears in no result and no log line.
#[tokio::test]
async fn a_planted_hard_link_is_not_read_by_default() {
    let t = planted();
    let spec = format!("w={}", t.root().display());
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_BINARY_TRANSFER_ENABLED", "true")],
    )
    .await;
    assert_eq!(content_reads(&server, "w").await, refused());

    let own = vec!["docs/own.txt".to_owned()];
    assert_eq!(search(&server, "w", ".", None).await, (own.clone(), 1));
    assert_eq!(search(&server, "w", "docs", None).await, (own, 1));
    assert_eq!(
        search(&server, "w", "docs", Some("planted.txt")).await,
        (vec![], 1)
    );
    let text = server
        .call(
            "search_text",
            json!({"workdir": "w", "path": ".", "query": "SECRET"}),
        )
        .await;
    let summary = &text.content[0].as_text().unwrap().text;
    assert!(summary.contains(r#""files_skipped":1"#), "{summary}");

    let stat = server
        .ok(
            "stat_file",
            json!({"workdir": "w", "path": "docs/planted.txt"}),
        )
        .await;
    assert_eq!(stat["type"], "file");
    let listing = server
        .ok("list_directory", json!({"workdir": "w", "path": "docs"}))
        .await;
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["own.txt", "planted.txt"]);
    let found = server
        .ok(
            "find_files",
            json!({"workdir": "w", "path": ".", "pattern": "planted.txt"}),
        )
        .await;
    assert_eq!(found["matches"], json!([{"path": "docs/planted.txt"}]));

    let log = server.shutdown().await.join("\n");
    assert!(!log.contains(OUTSIDE_SECRET), "{log}");
}

/// Reading hard-linked files is the operator's choice per workdir: one TOML
/// file exposes the same directory as `strict` (the file's default) and as
/// `linked` (`read_hardlinked_files = true`); only `linked` reads the
/// outside content and searches it. `check-config` shows both.
#[tokio::test]
async fn reading_hard_linked_files_is_a_per_workdir_choice() {
    let t = planted();
    let config = t.outside().join("serverfs.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nbinary_transfer = true\n\
             [[workdirs]]\nalias = \"strict\"\npath = {root:?}\n\
             [[workdirs]]\nalias = \"linked\"\npath = {root:?}\nread_hardlinked_files = true\n",
            root = t.root().display().to_string()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let server = Server::start(&["--config", &config], &[]).await;
    assert_eq!(content_reads(&server, "strict").await, refused());
    assert_eq!(content_reads(&server, "linked").await, read_through());
    assert_eq!(
        search(&server, "linked", ".", None).await,
        (
            vec!["docs/own.txt".to_owned(), "docs/planted.txt".to_owned()],
            0
        )
    );
    assert_eq!(
        search(&server, "strict", ".", None).await,
        (vec!["docs/own.txt".to_owned()], 1)
    );

    let report = std::process::Command::new(crate::common::binary())
        .args(["check-config", "--config", &config])
        .env_clear()
        .output()
        .unwrap();
    let report = String::from_utf8(report.stdout).unwrap();
    let lines: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("hard-linked files"))
        .collect();
    assert_eq!(
        lines,
        [
            "    hard-linked files (more than one link): refused",
            "    hard-linked files (more than one link): read"
        ],
        "{report}"
    );
}

/// The container environment is upstream's, whose deployments read every
/// regular file: unset, it keeps reading; the variable turns it off (as the
/// shipped compose.yml does).
#[tokio::test]
async fn the_container_environment_keeps_reading_until_told_otherwise() {
    let t = planted();
    // Slot 01 is the fixture's root, moved (hard link and all) under a
    // slots directory of its own on the same filesystem.
    let slots = tempfile::tempdir_in(t.outside()).unwrap();
    std::fs::rename(t.root(), slots.path().join("01")).unwrap();
    let slots_root = slots.path().display().to_string();
    let env = |extra: &[(&'static str, &'static str)]| {
        let mut env = vec![
            ("SERVERFS_WORKDIRS_ROOT", slots_root.clone()),
            ("WORKDIR_01_ALIAS", "w".to_owned()),
            ("SERVERFS_BINARY_TRANSFER_ENABLED", "true".to_owned()),
        ];
        env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
        env
    };
    for (extra, expected) in [
        (&[][..], read_through()),
        (
            &[("SERVERFS_READ_HARDLINKED_FILES", "false")][..],
            refused(),
        ),
        (
            &[("WORKDIR_01_READ_HARDLINKED_FILES", "false")][..],
            refused(),
        ),
    ] {
        let env = env(extra);
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = Server::start(&[], &pairs).await;
        assert_eq!(content_reads(&server, "w").await, expected, "{extra:?}");
    }
}
