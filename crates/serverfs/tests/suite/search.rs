//! `find_files` and `search_text` through the real binary: result shapes,
//! defaults and server caps, argument and pattern errors, policy filtering
//! from a TOML configuration, every truncation reason driven by the
//! `SERVERFS_*` knobs, and the directory-for-symlink swap race.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};
use tokio::task::JoinSet;

use crate::common::Server;

const FIND: &str = "find_files";
const SEARCH: &str = "search_text";

/// The `path` of every match, in order.
fn match_paths(result: &Value) -> Vec<String> {
    result["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect()
}

/// The distinct matched files, sorted.
fn matched_files(result: &Value) -> Vec<String> {
    let mut files = match_paths(result);
    files.dedup();
    files
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// A TOML basic string holding `path`.
fn toml_string(path: &Path) -> String {
    let text = path.to_str().expect("UTF-8 temp path");
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[tokio::test]
async fn result_shapes_defaults_and_server_cap() {
    let t = TempWorkdir::new();
    t.file("src/main.rs", "fn main() {\n    println!(\"needle\");\n}\n")
        .file("src/lib.rs", "// needle\r\npub fn f() {}\r\n")
        .file("docs/guide.md", "Needle in a haystack\n")
        .file("many/lines.txt", "needle\n".repeat(150));
    let server = Server::with_workdir("w", &t.root()).await;

    let found = server
        .ok(
            FIND,
            json!({"workdir": "w", "pattern": "*.rs", "path": "./src/"}),
        )
        .await;
    assert_eq!(
        found,
        json!({
            "workdir": "w",
            "path": "src",
            "matches": [{"path": "src/lib.rs"}, {"path": "src/main.rs"}],
            "returned": 2,
            "truncated": false,
            "truncated_reason": null,
        })
    );

    let searched = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "needle", "path": "src", "context_lines": 1}),
        )
        .await;
    assert_eq!(
        searched,
        json!({
            "workdir": "w",
            "path": "src",
            "matches": [
                {"path": "src/lib.rs", "line": 1, "text": "// needle\r", "line_truncated": false,
                 "context_before": [], "context_after": ["pub fn f() {}\r"]},
                {"path": "src/main.rs", "line": 2, "text": "    println!(\"needle\");",
                 "line_truncated": false,
                 "context_before": ["fn main() {"], "context_after": ["}"]},
            ],
            "returned": 2,
            "truncated": false,
            "truncated_reason": null,
            "files_searched": 2,
            "files_skipped": 0,
        })
    );

    // Case folding and regex mode.
    let folded = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "NEEDLE IN", "case_sensitive": false}),
        )
        .await;
    assert_eq!(match_paths(&folded), ["docs/guide.md"]);
    let regex = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": r"^\s+println!", "mode": "regex"}),
        )
        .await;
    assert_eq!(match_paths(&regex), ["src/main.rs"]);
    let literal = server
        .ok(SEARCH, json!({"workdir": "w", "query": r"^\s+println!"}))
        .await;
    assert_eq!(literal["returned"], 0);

    // Default limit 50; a larger request is capped at the server's 100.
    let default = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "needle", "path": "many"}),
        )
        .await;
    assert_eq!(
        (
            &default["returned"],
            &default["truncated"],
            &default["truncated_reason"]
        ),
        (&json!(50), &json!(true), &json!("limit"))
    );
    let capped = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "needle", "path": "many", "limit": 1000}),
        )
        .await;
    assert_eq!(
        (
            &capped["returned"],
            &capped["truncated"],
            &capped["truncated_reason"]
        ),
        (&json!(100), &json!(true), &json!("limit"))
    );
    let lines: Vec<u64> = capped["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, (1..=100).collect::<Vec<u64>>());

    // find_files: exactly `limit` matches is complete; one fewer truncates.
    let exact = server
        .ok(FIND, json!({"workdir": "w", "pattern": "*", "limit": 4}))
        .await;
    assert_eq!(
        (&exact["returned"], &exact["truncated"]),
        (&json!(4), &json!(false))
    );
    let cut = server
        .ok(FIND, json!({"workdir": "w", "pattern": "*", "limit": 3}))
        .await;
    assert_eq!(
        (
            match_paths(&cut),
            &cut["truncated"],
            &cut["truncated_reason"]
        ),
        (
            strings(&["docs/guide.md", "many/lines.txt", "src/lib.rs"]),
            &json!(true),
            &json!("limit")
        )
    );
    server.shutdown().await;

    // The default comes from the environment.
    let spec = format!("w={}", t.root().display());
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_DEFAULT_SEARCH_RESULTS", "3")],
    )
    .await;
    let r = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "needle", "path": "many"}),
        )
        .await;
    assert_eq!(
        (&r["returned"], &r["truncated_reason"]),
        (&json!(3), &json!("limit"))
    );
    let r = server
        .ok(FIND, json!({"workdir": "w", "pattern": "*"}))
        .await;
    assert_eq!(
        (&r["returned"], &r["truncated_reason"]),
        (&json!(3), &json!("limit"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn argument_pattern_and_path_errors() {
    let t = TempWorkdir::new();
    t.file("a.txt", "needle\n")
        .file(".hidden/x.txt", "needle\n")
        .file("dir/b.txt", "needle\n")
        .symlink("link", "dir");
    let server = Server::with_workdir("w", &t.root()).await;
    let search = |extra: Value| {
        let mut args = json!({"workdir": "w", "query": "needle"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        (SEARCH, search(json!({"query": ""})), "INVALID_ARGUMENT"),
        (
            SEARCH,
            search(json!({"context_lines": 6})),
            "INVALID_ARGUMENT",
        ),
        (SEARCH, search(json!({"limit": 0})), "INVALID_ARGUMENT"),
        (
            SEARCH,
            search(json!({"query": "(", "mode": "regex"})),
            "INVALID_PATTERN",
        ),
        (
            SEARCH,
            search(json!({"query": "a{1000}{1000}", "mode": "regex"})),
            "INVALID_PATTERN",
        ),
        (
            SEARCH,
            search(json!({"query": r"\w{300}{300}", "mode": "regex"})),
            "INVALID_PATTERN",
        ),
        (SEARCH, search(json!({"glob": "[a"})), "INVALID_PATTERN"),
        (SEARCH, search(json!({"glob": "!{a"})), "INVALID_PATTERN"),
        (SEARCH, search(json!({"path": "a.txt"})), "NOT_A_DIRECTORY"),
        (SEARCH, search(json!({"path": "nope"})), "PATH_NOT_FOUND"),
        (
            SEARCH,
            search(json!({"path": "link"})),
            "SYMLINK_NOT_ALLOWED",
        ),
        (
            SEARCH,
            search(json!({"path": ".hidden"})),
            "HIDDEN_PATH_NOT_ALLOWED",
        ),
        (
            SEARCH,
            search(json!({"path": "../outside"})),
            "PATH_OUTSIDE_WORKDIR",
        ),
        (
            SEARCH,
            search(json!({"workdir": "nope"})),
            "WORKDIR_NOT_FOUND",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": "[a"}),
            "INVALID_PATTERN",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": "{a,b"}),
            "INVALID_PATTERN",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": ""}),
            "INVALID_PATTERN",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": "*", "limit": 0}),
            "INVALID_ARGUMENT",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": "*", "path": "a.txt"}),
            "NOT_A_DIRECTORY",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": "*", "path": "link"}),
            "SYMLINK_NOT_ALLOWED",
        ),
        (
            FIND,
            json!({"workdir": "w", "pattern": "*", "path": "nope/deeper"}),
            "PATH_NOT_FOUND",
        ),
        (
            FIND,
            json!({"workdir": "nope", "pattern": "*"}),
            "WORKDIR_NOT_FOUND",
        ),
    ];
    let mut failures = Vec::new();
    for (tool, args, want) in &cases {
        let code = server.err(tool, args.clone()).await;
        if code != *want {
            failures.push(format!("{tool}({args}): want {want}, got {code}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // context_lines 5 is the maximum, and valid.
    server.ok(SEARCH, search(json!({"context_lines": 5}))).await;
    server.shutdown().await;
}

/// Two workdirs over copies of one tree: `strict` with the defaults,
/// `open` with hidden names allowed and operator deny globs.
#[tokio::test]
async fn toml_policy_filters_both_tools() {
    let strict = TempWorkdir::new();
    let open = TempWorkdir::new();
    for t in [&strict, &open] {
        for path in [
            "visible.txt",
            ".hidden.txt",
            ".config/app.txt",
            "dir/.dot/x.txt",
            "id_rsa",
            "keys/server.pem",
            "app.log",
            "private/notes.txt",
            "docs/secret/s.txt",
            "docs/ok.txt",
            ".serverfs-tmp-123",
            "dir/.serverfs-tmp-9/inner.txt",
            ".serverfs-disabled",
            "repo/.git/config",
            "repo/src/code.txt",
            "repo/build/out.txt",
        ] {
            t.file(path, format!("needle in {path}\n"));
        }
        t.file("repo/.gitignore", "build/\n")
            .file(".ignore", "*.log\n")
            .symlink("out", t.outside())
            .symlink("secret-link", t.outside().join("secret.txt"))
            .fifo("pipe.txt");
    }
    let config = strict.root().parent().unwrap().join("serverfs.toml");
    std::fs::write(
        &config,
        format!(
            "[[workdirs]]\nalias = \"strict\"\npath = {}\n\n\
             [[workdirs]]\nalias = \"open\"\npath = {}\nallow_hidden = true\n\
             deny = [\"*.log\", \"private\", \"docs/secret/**\"]\n",
            toml_string(&strict.root()),
            toml_string(&open.root()),
        ),
    )
    .unwrap();
    let server = Server::start(&["--config", config.to_str().unwrap()], &[]).await;

    let find_all = |alias: &str| json!({"workdir": alias, "pattern": "*"});
    let search_all = |alias: &str, include_ignored: bool| json!({"workdir": alias, "query": "needle", "include_ignored": include_ignored});

    let r = server.ok(FIND, find_all("strict")).await;
    assert_eq!(
        match_paths(&r),
        [
            "app.log",
            "docs/ok.txt",
            "docs/secret/s.txt",
            "private/notes.txt",
            "repo/build/out.txt",
            "repo/src/code.txt",
            "visible.txt",
        ]
    );
    // `.ignore` drops app.log; `repo/.gitignore` drops repo/build.
    let r = server.ok(SEARCH, search_all("strict", false)).await;
    assert_eq!(
        matched_files(&r),
        [
            "docs/ok.txt",
            "docs/secret/s.txt",
            "private/notes.txt",
            "repo/src/code.txt",
            "visible.txt",
        ]
    );
    let r = server.ok(SEARCH, search_all("strict", true)).await;
    assert_eq!(
        matched_files(&r),
        [
            "app.log",
            "docs/ok.txt",
            "docs/secret/s.txt",
            "private/notes.txt",
            "repo/build/out.txt",
            "repo/src/code.txt",
            "visible.txt",
        ]
    );

    // Hidden allowed, deny globs active: `.git` found by find (no VCS
    // exclusion there) but never searched.
    let r = server.ok(FIND, find_all("open")).await;
    assert_eq!(
        match_paths(&r),
        [
            ".config/app.txt",
            ".hidden.txt",
            ".ignore",
            "dir/.dot/x.txt",
            "docs/ok.txt",
            "repo/.git/config",
            "repo/.gitignore",
            "repo/build/out.txt",
            "repo/src/code.txt",
            "visible.txt",
        ]
    );
    let r = server.ok(SEARCH, search_all("open", true)).await;
    assert_eq!(
        matched_files(&r),
        [
            ".config/app.txt",
            ".hidden.txt",
            "dir/.dot/x.txt",
            "docs/ok.txt",
            "repo/build/out.txt",
            "repo/src/code.txt",
            "visible.txt",
        ]
    );
    let r = server.ok(SEARCH, search_all("open", false)).await;
    assert_eq!(
        matched_files(&r),
        [
            ".config/app.txt",
            ".hidden.txt",
            "dir/.dot/x.txt",
            "docs/ok.txt",
            "repo/src/code.txt",
            "visible.txt",
        ]
    );
    for (alias, path, code) in [
        ("open", "private", "DENIED_PATH"),
        ("open", "docs/secret", "DENIED_PATH"),
        ("open", "dir/.serverfs-tmp-9", "RESERVED_PATH"),
        ("strict", ".config", "HIDDEN_PATH_NOT_ALLOWED"),
        ("strict", "keys", "OK"),
    ] {
        for (tool, args) in [
            (
                FIND,
                json!({"workdir": alias, "pattern": "*", "path": path}),
            ),
            (
                SEARCH,
                json!({"workdir": alias, "query": "needle", "path": path}),
            ),
        ] {
            if code == "OK" {
                let r = server.ok(tool, args).await;
                assert_eq!(r["returned"], 0, "{tool} under {alias}:{path}");
            } else {
                assert_eq!(server.err(tool, args).await, code, "{tool} {alias}:{path}");
            }
        }
    }
    // Nothing from outside, no host path, in any answer.
    let forbidden = [
        OUTSIDE_SECRET.to_owned(),
        strict.root().display().to_string(),
        open.root().display().to_string(),
    ];
    for alias in ["strict", "open"] {
        for args in [
            json!({"workdir": alias, "pattern": "**"}),
            json!({"workdir": alias, "pattern": "*secret*"}),
        ] {
            let wire = server.ok(FIND, args).await.to_string();
            assert!(
                forbidden.iter().all(|f| !wire.contains(f.as_str())),
                "{wire}"
            );
        }
        for query in [OUTSIDE_SECRET, "OUTSIDE", "needle"] {
            let wire = server
                .ok(
                    SEARCH,
                    json!({"workdir": alias, "query": query, "include_ignored": true}),
                )
                .await
                .to_string();
            assert!(
                forbidden.iter().all(|f| !wire.contains(f.as_str())),
                "{wire}"
            );
        }
    }
    server.shutdown().await;
}

#[tokio::test]
async fn response_bytes_oversize_and_walk_limit() {
    let t = TempWorkdir::new();
    // 2,000-byte lines, every one matching: with five lines of context on
    // each side a match costs ~22 KB, so the 1 MiB response budget runs out
    // before the 100-match limit.
    let line = format!("needle {}", "y".repeat(1993));
    t.file("long/a.txt", format!("{line}\n").repeat(150))
        .file("size/small.txt", "needle small\n")
        .file("size/big.txt", format!("needle big{}\n", " ".repeat(200)))
        .file("size/bin.dat", b"needle\0\n");
    for d in 0..4 {
        for f in 0..5 {
            t.file(&format!("walk/d{d}/f{f}.txt"), "needle\n");
        }
    }
    let spec = format!("w={}", t.root().display());
    let server = Server::with_workdir("w", &t.root()).await;
    let r = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "needle", "path": "long", "context_lines": 5,
                   "limit": 100}),
        )
        .await;
    assert_eq!(
        (&r["truncated"], &r["truncated_reason"]),
        (&json!(true), &json!("response_bytes"))
    );
    let returned = r["returned"].as_u64().unwrap();
    assert!(returned > 0 && returned < 100, "{returned}");
    assert!(
        r.to_string().len() < 2 << 20,
        "response of {} bytes",
        r.to_string().len()
    );

    server.shutdown().await;

    // Files over SERVERFS_SEARCH_MAX_FILE_BYTES are skipped and counted,
    // like binary ones.
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_SEARCH_MAX_FILE_BYTES", "100")],
    )
    .await;
    let r = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "needle", "path": "size"}),
        )
        .await;
    assert_eq!(match_paths(&r), ["size/small.txt"]);
    assert_eq!(
        (&r["files_searched"], &r["files_skipped"], &r["truncated"]),
        (&json!(1), &json!(2), &json!(false))
    );
    server.shutdown().await;

    // 4 directories + 20 files = 24 entries under `walk`.
    for (max, truncated) in [("24", false), ("23", true), ("5", true)] {
        let server =
            Server::start(&["--workdir", &spec], &[("SERVERFS_MAX_WALK_ENTRIES", max)]).await;
        let f = server
            .ok(
                FIND,
                json!({"workdir": "w", "pattern": "*.txt", "path": "walk"}),
            )
            .await;
        let s = server
            .ok(
                SEARCH,
                json!({"workdir": "w", "query": "needle", "path": "walk"}),
            )
            .await;
        for r in [&f, &s] {
            let want = if truncated {
                (json!(true), json!("walk_limit"))
            } else {
                (json!(false), json!(null))
            };
            assert_eq!(
                (r["truncated"].clone(), r["truncated_reason"].clone()),
                want,
                "max {max}: {r}"
            );
            let returned = r["returned"].as_u64().unwrap();
            assert_eq!(returned == 20, !truncated, "max {max}: {returned}");
        }
        server.shutdown().await;
    }
}

/// A fresh directory for a big generated tree, removed on drop: on tmpfs
/// (`/dev/shm`) when there is one, because creating tens of thousands of
/// files on a busy journaled disk can take longer than the rest of the
/// suite; the server under test does not care which filesystem it walks.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = base.join(format!("serverfs-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&path).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn timeout_returns_partial_results() {
    // 30,000 files of 4 KiB each, scanned case-insensitively: about two
    // seconds of work for a debug build on two cores, far more than the
    // 100 ms budget even on a much faster machine. One file per directory
    // holds the needle: 100 matches in all, so the match cap (101st match)
    // can never end the search; only the clock can.
    let dir = Scratch::new("timeout");
    let text = "Some text to scan through, line after line, without the query.\n".repeat(64);
    for d in 0..100 {
        let sub = dir.0.join(format!("d{d:03}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..300 {
            let content = if f == 150 {
                format!("{text}the needle\n")
            } else {
                text.clone()
            };
            std::fs::write(sub.join(format!("f{f:03}.txt")), content).unwrap();
        }
    }
    let spec = format!("w={}", dir.0.display());
    let server = Server::start(
        &["--workdir", &spec],
        &[("SERVERFS_SEARCH_TIMEOUT_MS", "100")],
    )
    .await;
    let r = server
        .ok(
            SEARCH,
            json!({"workdir": "w", "query": "NEEDLE", "case_sensitive": false, "limit": 100}),
        )
        .await;
    assert_eq!(
        (&r["truncated"], &r["truncated_reason"]),
        (&json!(true), &json!("timeout")),
        "{r}"
    );
    let searched = r["files_searched"].as_u64().unwrap();
    assert!(searched < 30_000, "{searched} files searched");
    // Whatever was found before the deadline is returned, and is right.
    let returned = r["returned"].as_u64().unwrap();
    assert!(returned < 100, "{returned} matches");
    for m in r["matches"].as_array().unwrap() {
        let path = m["path"].as_str().unwrap();
        assert!(path.ends_with("/f150.txt"), "{m}");
        assert_eq!((&m["line"], &m["text"]), (&json!(65), &json!("the needle")));
    }
    server.shutdown().await;
}

// While a thread keeps replacing `swap/` with a symlink to the outside
// directory and back, concurrent searches and finds through the server must
// never report the outside file, its content or a host path. `parked/` is
// inside the root, so a search may legitimately report the inside file
// under `parked/swap/` for a moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swap_race_never_searches_outside() {
    let t = TempWorkdir::new();
    std::fs::write(t.outside().join("needle.txt"), "needle OUTSIDE\n").unwrap();
    t.file("swap/inside.txt", "needle inside\n").dir("parked");
    let server = Arc::new(Server::with_workdir("w", &t.root()).await);
    let forbidden = [
        OUTSIDE_SECRET.to_owned(),
        "OUTSIDE".to_owned(),
        "swap/needle.txt".to_owned(),
        "swap/secret.txt".to_owned(),
        t.outside().display().to_string(),
        t.root().display().to_string(),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = std::thread::spawn({
        let (stop, root, outside) = (stop.clone(), t.root(), t.outside());
        move || {
            let (swap, parked) = (root.join("swap"), root.join("parked/swap"));
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&swap, &parked).unwrap();
                std::os::unix::fs::symlink(&outside, &swap).unwrap();
                std::thread::yield_now();
                std::fs::remove_file(&swap).unwrap();
                std::fs::rename(&parked, &swap).unwrap();
                swaps += 1;
            }
            swaps
        }
    });
    let mut clients = JoinSet::new();
    for client in 0..6 {
        let server = server.clone();
        let forbidden = forbidden.clone();
        clients.spawn(async move {
            let mut wrong = Vec::new();
            let mut inside = 0u64;
            for round in 0..40 {
                let (tool, args) = match (client + round) % 3 {
                    0 => (
                        SEARCH,
                        json!({"workdir": "w", "query": "needle", "include_ignored": true}),
                    ),
                    1 => (
                        SEARCH,
                        json!({"workdir": "w", "query": "needle", "path": "swap"}),
                    ),
                    _ => (FIND, json!({"workdir": "w", "pattern": "*.txt"})),
                };
                let result = server.call(tool, args).await;
                let wire = serde_json::to_string(&result).unwrap();
                if forbidden.iter().any(|f| wire.contains(f.as_str())) {
                    wrong.push(format!("LEAK: {wire}"));
                    continue;
                }
                let Some(structured) = result.structured_content else {
                    wrong.push(format!("no structured content: {wire}"));
                    continue;
                };
                if result.is_error == Some(true) {
                    let code = structured["error"]["code"].as_str().unwrap_or_default();
                    if !matches!(
                        code,
                        "SYMLINK_NOT_ALLOWED" | "PATH_NOT_FOUND" | "FILE_CHANGED_DURING_READ"
                    ) {
                        wrong.push(format!("unexpected error: {wire}"));
                    }
                    continue;
                }
                for m in structured["matches"].as_array().unwrap() {
                    let path = m["path"].as_str().unwrap();
                    if !matches!(path, "swap/inside.txt" | "parked/swap/inside.txt") {
                        wrong.push(format!("unexpected path: {m}"));
                    }
                    if tool == SEARCH && m["text"] != "needle inside" {
                        wrong.push(format!("unexpected text: {m}"));
                    }
                    inside += 1;
                }
            }
            (inside, wrong)
        });
    }
    let mut inside = 0;
    let mut wrong = Vec::new();
    while let Some(joined) = clients.join_next().await {
        let (n, w) = joined.unwrap();
        inside += n;
        wrong.extend(w);
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        wrong.is_empty(),
        "{} bad answers:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(swaps > 0, "the swapper never ran");
    assert!(inside > 0, "the inside file was never found");
    let server = Arc::into_inner(server).expect("clients finished");
    server.shutdown().await;
}
