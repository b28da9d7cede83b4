//! Concurrent calls through one server and one MCP client: racing creates
//! and same-revision edits have exactly one winner, read-modify-write loops
//! that retry on `REVISION_CONFLICT` lose no update, an edit racing a delete
//! has one winner, readers racing edits see whole contents only, and two
//! workdirs mutate side by side (spec-mcp-filesystem.md §4.3, §10.1).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use crate::common::Server;

const W: &str = "w";
/// Bound on a whole concurrent phase (each call is bounded by the harness).
const PHASE: Duration = Duration::from_secs(60);
const RACERS: usize = 24;

async fn rw_server(t: &TempWorkdir) -> Arc<Server> {
    let spec = format!("{W}={}:rw", t.root().display());
    Arc::new(Server::start(&["--workdir", &spec], &[]).await)
}

/// `Ok(structured)` or `Err(code)`.
fn outcome(result: CallToolResult) -> Result<Value, String> {
    let structured = result.structured_content.unwrap_or_default();
    if result.is_error == Some(true) {
        Err(structured["error"]["code"]
            .as_str()
            .unwrap_or("<no code>")
            .to_owned())
    } else {
        Ok(structured)
    }
}

/// Runs every task of `set` to completion within [`PHASE`].
async fn join_all<T: 'static>(mut set: JoinSet<T>) -> Vec<T> {
    tokio::time::timeout(PHASE, async {
        let mut out = Vec::new();
        while let Some(joined) = set.join_next().await {
            out.push(joined.expect("a task panicked"));
        }
        out
    })
    .await
    .expect("concurrent phase timed out")
}

async fn revision(server: &Server, workdir: &str, path: &str) -> String {
    server
        .ok("stat_file", json!({"workdir": workdir, "path": path}))
        .await["revision"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn temp_debris(t: &TempWorkdir) -> Vec<String> {
    std::fs::read_dir(t.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".serverfs-tmp-"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_creates_have_one_winner() {
    let t = TempWorkdir::new();
    let server = rw_server(&t).await;
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut set = JoinSet::new();
    for i in 0..RACERS {
        let (server, barrier) = (server.clone(), barrier.clone());
        set.spawn(async move {
            let content = format!("writer {i}\n{}\n", "x".repeat(i * 100));
            barrier.wait().await;
            let args = json!({"workdir": W, "path": "race.txt", "content": content});
            (
                content,
                outcome(server.call("create_text_file", args).await),
            )
        });
    }
    let results = join_all(set).await;
    let winners: Vec<&(String, Result<Value, String>)> =
        results.iter().filter(|(_, r)| r.is_ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one create wins: {results:?}");
    for (_, r) in &results {
        if let Err(code) = r {
            assert_eq!(code, "PATH_ALREADY_EXISTS");
        }
    }
    let (content, won) = winners[0];
    let won = won.as_ref().unwrap();
    assert_eq!(
        std::fs::read_to_string(t.path("race.txt")).unwrap(),
        *content
    );
    assert_eq!(won["bytes_written"], content.len());
    assert_eq!(won["revision"], revision(&server, W, "race.txt").await);
    assert_eq!(temp_debris(&t), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn same_revision_edits_have_one_winner() {
    let t = TempWorkdir::new();
    t.file("f.txt", "value=initial\n");
    let server = rw_server(&t).await;
    let rev = revision(&server, W, "f.txt").await;
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut set = JoinSet::new();
    for i in 0..RACERS {
        let (server, barrier, rev) = (server.clone(), barrier.clone(), rev.clone());
        set.spawn(async move {
            let new_text = format!("value={i}");
            let args = json!({"workdir": W, "path": "f.txt", "expected_revision": rev,
                              "edits": [{"old_text": "value=initial", "new_text": new_text}]});
            barrier.wait().await;
            (i, outcome(server.call("edit_text_file", args).await))
        });
    }
    let results = join_all(set).await;
    let winners: Vec<usize> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one edit wins: {results:?}");
    for (_, r) in &results {
        if let Err(code) = r {
            assert_eq!(code, "REVISION_CONFLICT");
        }
    }
    assert_eq!(
        std::fs::read_to_string(t.path("f.txt")).unwrap(),
        format!("value={}\n", winners[0])
    );
    assert_eq!(temp_debris(&t), Vec::<String>::new());
}

/// One read-modify-write increment of `counter.txt`, retried on conflict.
/// Returns the number of conflicts met.
async fn increment(server: &Server) -> u64 {
    let mut conflicts = 0;
    for _ in 0..10_000 {
        let read = outcome(
            server
                .call(
                    "read_text_file",
                    json!({"workdir": W, "path": "counter.txt"}),
                )
                .await,
        );
        let read = match read {
            Ok(read) => read,
            // The file was replaced while it was being read: read again.
            Err(code) if code == "FILE_CHANGED_DURING_READ" => continue,
            Err(code) => panic!("read failed: {code}"),
        };
        let text = read["content"].as_str().unwrap();
        let n: u64 = text.trim_end().parse().unwrap();
        let args = json!({"workdir": W, "path": "counter.txt", "expected_revision": read["revision"],
                          "edits": [{"old_text": text, "new_text": format!("{}\n", n + 1)}]});
        match outcome(server.call("edit_text_file", args).await) {
            Ok(_) => return conflicts,
            Err(code) if code == "REVISION_CONFLICT" => conflicts += 1,
            Err(code) => panic!("edit failed: {code}"),
        }
    }
    panic!("no progress after 10000 attempts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_modify_write_loses_no_update() {
    const TASKS: u64 = 6;
    const INCREMENTS: u64 = 12;
    let t = TempWorkdir::new();
    t.file("counter.txt", "0\n");
    let server = rw_server(&t).await;
    let mut set = JoinSet::new();
    for _ in 0..TASKS {
        let server = server.clone();
        set.spawn(async move {
            let mut conflicts = 0;
            for _ in 0..INCREMENTS {
                conflicts += increment(&server).await;
            }
            conflicts
        });
    }
    let conflicts: u64 = join_all(set).await.into_iter().sum();
    eprintln!("{conflicts} conflicts retried");
    assert_eq!(
        std::fs::read_to_string(t.path("counter.txt")).unwrap(),
        format!("{}\n", TASKS * INCREMENTS),
        "after {conflicts} retried conflicts"
    );
    assert_eq!(temp_debris(&t), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn edit_racing_delete_has_one_winner() {
    let t = TempWorkdir::new();
    let server = rw_server(&t).await;
    let (mut edits_won, mut deletes_won) = (0, 0);
    for round in 0..12 {
        let path = format!("f{round}.txt");
        let created = server
            .ok(
                "create_text_file",
                json!({"workdir": W, "path": path, "content": "original\n"}),
            )
            .await;
        let rev = created["revision"].as_str().unwrap().to_owned();
        let barrier = Arc::new(Barrier::new(2));
        let edit = {
            let (server, barrier) = (server.clone(), barrier.clone());
            let args = json!({"workdir": W, "path": path, "expected_revision": rev,
                              "edits": [{"old_text": "original", "new_text": "edited"}]});
            tokio::spawn(async move {
                barrier.wait().await;
                outcome(server.call("edit_text_file", args).await)
            })
        };
        let delete = {
            let (server, barrier) = (server.clone(), barrier.clone());
            let args = json!({"workdir": W, "path": path, "expected_revision": rev});
            tokio::spawn(async move {
                barrier.wait().await;
                outcome(server.call("delete_file", args).await)
            })
        };
        let (edit, delete) = tokio::time::timeout(PHASE, async {
            (edit.await.unwrap(), delete.await.unwrap())
        })
        .await
        .expect("edit/delete race timed out");
        match (&edit, &delete) {
            (Ok(_), Err(code)) => {
                assert_eq!(code, "REVISION_CONFLICT", "round {round}");
                assert_eq!(std::fs::read(t.path(&path)).unwrap(), b"edited\n");
                edits_won += 1;
            }
            (Err(code), Ok(deleted)) => {
                assert!(
                    code == "REVISION_CONFLICT" || code == "PATH_NOT_FOUND",
                    "round {round}: {code}"
                );
                assert_eq!(deleted["revision_deleted"], rev.as_str());
                assert!(!t.path(&path).exists());
                deletes_won += 1;
            }
            _ => panic!("round {round}: exactly one must win: edit {edit:?}, delete {delete:?}"),
        }
    }
    assert_eq!(edits_won + deletes_won, 12);
    eprintln!("edit won {edits_won} rounds, delete won {deletes_won}");
    assert_eq!(temp_debris(&t), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_racing_edits_see_whole_contents() {
    const EDITS: usize = 40;
    const READERS: usize = 4;
    let t = TempWorkdir::new();
    let a: String = (0..300).map(|i| format!("alpha line {i:03}\n")).collect();
    let b: String = (0..200)
        .map(|i| format!("BETA {i:03} is a longer line of the other version\n"))
        .collect();
    t.file("f.txt", &a);
    let server = rw_server(&t).await;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = JoinSet::new();
    for _ in 0..READERS {
        let (server, done, a, b) = (server.clone(), done.clone(), a.clone(), b.clone());
        readers.spawn(async move {
            let (mut seen_a, mut seen_b, mut changed) = (0u64, 0u64, 0u64);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let args = json!({"workdir": W, "path": "f.txt", "max_lines": 500});
                match outcome(server.call("read_text_file", args).await) {
                    Ok(read) => {
                        assert_eq!(read["has_more"], false);
                        let content = read["content"].as_str().unwrap();
                        if content == a {
                            seen_a += 1;
                        } else if content == b {
                            seen_b += 1;
                        } else {
                            panic!("a reader saw a mixed or partial content: {content:?}");
                        }
                    }
                    // A replaced file may be reported as changed mid-read,
                    // never as mixed content.
                    Err(code) if code == "FILE_CHANGED_DURING_READ" => changed += 1,
                    Err(code) => panic!("read failed: {code}"),
                }
            }
            (seen_a, seen_b, changed)
        });
    }
    let mut rev = revision(&server, W, "f.txt").await;
    for i in 0..EDITS {
        let (old, new) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let r = server
            .ok(
                "edit_text_file",
                json!({"workdir": W, "path": "f.txt", "expected_revision": rev,
                       "edits": [{"old_text": old, "new_text": new}]}),
            )
            .await;
        rev = r["revision"].as_str().unwrap().to_owned();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let tallies = join_all(readers).await;
    let reads: u64 = tallies.iter().map(|(a, b, _)| a + b).sum();
    assert!(reads > 0, "the readers completed reads: {tallies:?}");
    eprintln!("readers (old, new, changed-during-read): {tallies:?}");
    assert_eq!(std::fs::read_to_string(t.path("f.txt")).unwrap(), a);
    assert_eq!(temp_debris(&t), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workdirs_mutate_in_parallel() {
    let one = TempWorkdir::new();
    let two = TempWorkdir::new();
    let specs = [
        format!("one={}:rw", one.root().display()),
        format!("two={}:rw", two.root().display()),
    ];
    let server =
        Arc::new(Server::start(&["--workdir", &specs[0], "--workdir", &specs[1]], &[]).await);
    let mut set = JoinSet::new();
    for workdir in ["one", "two"] {
        for i in 0..8 {
            let server = server.clone();
            set.spawn(async move {
                let path = format!("f{i}.txt");
                let created = outcome(
                    server
                        .call(
                            "create_text_file",
                            json!({"workdir": workdir, "path": path, "content": "v0\n"}),
                        )
                        .await,
                )
                .unwrap_or_else(|code| panic!("{workdir}:{path} create: {code}"));
                let mut rev = created["revision"].as_str().unwrap().to_owned();
                for step in 0..4 {
                    let args = json!({"workdir": workdir, "path": path, "expected_revision": rev,
                                      "edits": [{"old_text": format!("v{step}"),
                                                 "new_text": format!("v{}", step + 1)}]});
                    let edited = outcome(server.call("edit_text_file", args).await)
                        .unwrap_or_else(|code| panic!("{workdir}:{path} edit: {code}"));
                    rev = edited["revision"].as_str().unwrap().to_owned();
                }
            });
        }
    }
    join_all(set).await;
    for t in [&one, &two] {
        for i in 0..8 {
            assert_eq!(
                std::fs::read_to_string(t.path(&format!("f{i}.txt"))).unwrap(),
                "v4\n"
            );
        }
        assert_eq!(temp_debris(t), Vec::<String>::new());
    }
}
