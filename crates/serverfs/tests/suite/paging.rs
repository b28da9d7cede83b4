//! Paging a file of two million lines by `start_line`, by `cursor` and
//! from its end.

use std::io::Write;

use serde_json::json;
use serverfs_testkit::TempWorkdir;

use crate::common::Server;

const LINES: u64 = 2_000_000;
const PAGE: u64 = 100_000;

#[tokio::test]
async fn two_million_lines_by_line_and_by_cursor() {
    let t = TempWorkdir::new();
    let path = t.path("big.log");
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for i in 1..=LINES {
            writeln!(out, "line {i:07} of the big log").unwrap();
        }
    }
    let spec = format!("w={}", t.root().display());
    let server = Server::start(
        &["--workdir", &spec],
        &[
            ("SERVERFS_MAX_READ_LINES", "100000"),
            ("SERVERFS_MAX_READ_BYTES", "4194304"),
        ],
    )
    .await;
    let args = |extra: serde_json::Value| {
        let mut base = json!({"workdir": "w", "path": "big.log", "max_lines": PAGE});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    };

    // The last page, before anything has read the file through: its line
    // numbers are not known, its place from the end is.
    let tail_args = json!({"workdir": "w", "path": "big.log", "tail_lines": 3});
    let tail = server.ok("read_text_file", tail_args.clone()).await;
    assert_eq!(
        tail["content"],
        "line 1999998 of the big log\nline 1999999 of the big log\nline 2000000 of the big log\n"
    );
    assert_eq!(
        (
            tail["start_line"].clone(),
            tail["end_line"].clone(),
            tail["from_end"].clone(),
            tail["lines_returned"].clone(),
            tail["has_more"].clone()
        ),
        (json!(null), json!(null), json!(0), json!(3), json!(false))
    );
    let before = server
        .ok(
            "read_text_file",
            args(json!({"cursor": tail["prev_cursor"], "max_lines": 2})),
        )
        .await;
    assert_eq!(
        (before["content"].clone(), before["from_end"].clone()),
        (
            json!("line 1999996 of the big log\nline 1999997 of the big log\n"),
            json!(3)
        )
    );

    let mut by_cursor = Vec::new();
    let mut page = server.ok("read_text_file", args(json!({}))).await;
    loop {
        by_cursor.push(page["content"].as_str().unwrap().to_owned());
        let Some(cursor) = page["next_cursor"].as_str() else {
            break;
        };
        page = server
            .ok("read_text_file", args(json!({"cursor": cursor})))
            .await;
    }
    assert_eq!(by_cursor.len() as u64, LINES / PAGE);

    let mut by_line = Vec::new();
    let mut next = Some(1u64);
    while let Some(line) = next {
        let page = server
            .ok("read_text_file", args(json!({"start_line": line})))
            .await;
        by_line.push(page["content"].as_str().unwrap().to_owned());
        next = page["next_start_line"].as_u64();
    }
    assert_eq!(by_cursor, by_line, "cursor pages return identical text");

    let whole = std::fs::read_to_string(&path).unwrap();
    assert_eq!(by_cursor.concat(), whole, "pages reassemble the file");

    // A page deep in the file, by number.
    let deep = server
        .ok(
            "read_text_file",
            args(json!({"start_line": LINES - 1, "max_lines": 5})),
        )
        .await;
    assert_eq!(
        deep["content"],
        "line 1999999 of the big log\nline 2000000 of the big log\n"
    );
    assert_eq!(deep["has_more"], false);

    // Reading by line to the end counted the file: the tail now has numbers.
    let tail = server.ok("read_text_file", tail_args).await;
    assert_eq!(
        (tail["start_line"].clone(), tail["end_line"].clone()),
        (json!(LINES - 2), json!(LINES))
    );

    // Modifying the file invalidates an outstanding cursor.
    let first = server
        .ok("read_text_file", args(json!({"max_lines": 10})))
        .await;
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"appended\n")
        .unwrap();
    assert_eq!(
        server
            .err("read_text_file", args(json!({"cursor": cursor})))
            .await,
        "CURSOR_STALE"
    );
}
