//! The five base mutation tools through the real binary: each success
//! shape (with its revision equal to the next `stat_file`), every code each
//! tool can raise and their precedence, byte-exact content, the dry run,
//! metadata preservation on replace, and that no temporary file is ever left
//! behind or shown (spec-mcp-filesystem.md §1.5, §4.3, §6, §8.2).

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::Server;

/// The read-write workdir of every test here.
const W: &str = "w";
/// A well-formed revision token no object has.
const STALE: &str = "v1:0000000000000000";
const TOOLS: [&str; 5] = [
    "create_text_file",
    "edit_text_file",
    "delete_file",
    "create_directory",
    "delete_directory",
];

async fn rw_server(t: &TempWorkdir, env: &[(&str, &str)]) -> Server {
    let spec = format!("{W}={}:rw", t.root().display());
    Server::start(&["--workdir", &spec], env).await
}

async fn revision(server: &Server, path: &str) -> String {
    let stat = server
        .ok("stat_file", json!({"workdir": W, "path": path}))
        .await;
    stat["revision"].as_str().expect("revision").to_owned()
}

/// Calls a tool that must fail; returns `(code, message)`.
async fn failure(server: &Server, tool: &str, args: Value) -> (String, String) {
    let result = server.call(tool, args.clone()).await;
    assert_eq!(result.is_error, Some(true), "{tool}({args}) should fail");
    let error = &result.structured_content.expect("structured error")["error"];
    (
        error["code"].as_str().expect("code").to_owned(),
        error["message"].as_str().expect("message").to_owned(),
    )
}

/// Arguments of `tool` for `path`; revision-guarded tools get [`STALE`].
fn args_for(tool: &str, workdir: &str, path: &str) -> Value {
    match tool {
        "create_text_file" => json!({"workdir": workdir, "path": path, "content": "x"}),
        "edit_text_file" => json!({"workdir": workdir, "path": path, "expected_revision": STALE,
                                   "edits": [{"old_text": "a", "new_text": "b"}]}),
        "create_directory" => json!({"workdir": workdir, "path": path}),
        _ => json!({"workdir": workdir, "path": path, "expected_revision": STALE}),
    }
}

/// Every entry beneath `root` (symlinks not followed): relative path →
/// `file:<bytes>`, `dir`, `link:<target>` or `other`.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let kind = if meta.file_type().is_symlink() {
                format!("link:{}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                walk(root, &path, out);
                "dir".to_owned()
            } else if meta.is_file() {
                format!("file:{:?}", std::fs::read(&path).unwrap())
            } else {
                "other".to_owned()
            };
            out.insert(rel, kind);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Names of ServerFS temporary files anywhere beneath `root`.
fn temp_debris(root: &Path) -> Vec<String> {
    snapshot(root)
        .into_keys()
        .filter(|rel| {
            Path::new(rel)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".serverfs-tmp-"))
        })
        .collect()
}

fn assert_no_debris(t: &TempWorkdir) {
    assert_eq!(temp_debris(&t.root()), Vec::<String>::new(), "temp debris");
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Sets a `user.*` extended attribute with `setfattr`, falling back to
/// Python's `os.setxattr`. `Err` says why neither worked (the check is then
/// skipped, not failed: the machine or filesystem lacks the means).
fn set_xattr(path: &Path, name: &str, value: &str) -> Result<(), String> {
    let mut setfattr = Command::new("setfattr");
    setfattr.args(["-n", name, "-v", value]).arg(path);
    let mut python = Command::new("python3");
    python
        .args([
            "-c",
            "import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())",
        ])
        .arg(path)
        .args([name, value]);
    let mut reasons = Vec::new();
    for mut command in [setfattr, python] {
        match command.output() {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => reasons.push(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
            Err(e) => reasons.push(format!("{:?}: {e}", command.get_program())),
        }
    }
    Err(reasons.join("; "))
}

/// Reads a `user.*` extended attribute (`getfattr`, then Python).
fn get_xattr(path: &Path, name: &str) -> Option<String> {
    let mut getfattr = Command::new("getfattr");
    getfattr
        .args(["--only-values", "--absolute-names", "-n", name])
        .arg(path);
    let mut python = Command::new("python3");
    python
        .args([
            "-c",
            "import os, sys; sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).decode())",
        ])
        .arg(path)
        .arg(name);
    [getfattr, python]
        .into_iter()
        .filter_map(|mut command| command.output().ok())
        .find(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn edit_args(path: &str, revision: &str, edits: Value) -> Value {
    json!({"workdir": W, "path": path, "expected_revision": revision, "edits": edits})
}

// ---------------------------------------------------------------------------
// Refusals shared by all five tools, and their precedence.

#[tokio::test]
async fn refusals_common_to_every_mutation_tool() {
    let t = TempWorkdir::new();
    let ro = TempWorkdir::new();
    t.file("a.txt", "a\n").dir("d");
    ro.file("a.txt", "a\n").file(".env", "SECRET=1\n").dir("d");
    let specs = [
        format!("{W}={}:rw", t.root().display()),
        format!("ro={}", ro.root().display()),
    ];
    let server = Server::start(&["--workdir", &specs[0], "--workdir", &specs[1]], &[]).await;
    let (before, ro_before) = (snapshot(&t.root()), snapshot(&ro.root()));

    let cases: &[(&str, &[&str], &str)] = &[
        ("nope", &["a.txt", "../x", ""], "WORKDIR_NOT_FOUND"),
        // Read-only is decided before anything about the path.
        (
            "ro",
            &[
                "a.txt",
                "new.txt",
                "d",
                ".env",
                "../x",
                "/etc/passwd",
                "",
                ".",
                "a/..",
                ".serverfs-tmp-x",
                "key.pem",
                "bad\0name",
            ],
            "WORKDIR_READ_ONLY",
        ),
        (
            W,
            &["", ".", "./", "a/..", "a/b/../..", "d/.."],
            "ROOT_MUTATION_NOT_ALLOWED",
        ),
        (
            W,
            &["../x", "/etc/passwd", "a/../../x", "~/x"],
            "PATH_OUTSIDE_WORKDIR",
        ),
        (W, &["bad\0name"], "ACCESS_DENIED"),
        (
            W,
            &[
                ".serverfs-tmp-x",
                "d/.serverfs-tmp-1-2",
                ".serverfs-disabled",
            ],
            "RESERVED_PATH",
        ),
        (
            W,
            &[".env", ".hidden/x.txt", "d/.git"],
            "HIDDEN_PATH_NOT_ALLOWED",
        ),
        (
            W,
            &["key.pem", "d/id_rsa", "prod.env", "x.key"],
            "DENIED_PATH",
        ),
    ];
    for tool in TOOLS {
        for (workdir, paths, code) in cases {
            for path in *paths {
                assert_eq!(
                    server.err(tool, args_for(tool, workdir, path)).await,
                    *code,
                    "{tool} {workdir}:{path:?}"
                );
            }
        }
    }
    assert_eq!(snapshot(&t.root()), before, "refusals change nothing");
    assert_eq!(snapshot(&ro.root()), ro_before);
}

#[tokio::test]
async fn missing_or_empty_arguments_are_invalid_argument() {
    let t = TempWorkdir::new();
    t.file("f.txt", "abc\n").dir("d");
    let server = rw_server(&t, &[]).await;
    let rev = revision(&server, "f.txt").await;
    let cases = [
        (
            "create_text_file",
            json!({"workdir": W, "path": "n.txt"}),
            "content",
        ),
        (
            "create_text_file",
            json!({"workdir": W, "content": "x"}),
            "path",
        ),
        (
            "edit_text_file",
            json!({"workdir": W, "path": "f.txt", "edits": [{"old_text": "a", "new_text": "b"}]}),
            "expected_revision",
        ),
        (
            "edit_text_file",
            edit_args("f.txt", &rev, json!([])),
            "edits",
        ),
        (
            "edit_text_file",
            edit_args(
                "f.txt",
                &rev,
                json!([{"old_text": "a", "new_text": "b", "expected_count": 0}]),
            ),
            "expected_count",
        ),
        (
            "edit_text_file",
            edit_args("f.txt", &rev, json!([{"old_text": "a"}])),
            "new_text",
        ),
        (
            "delete_file",
            json!({"workdir": W, "path": "f.txt"}),
            "expected_revision",
        ),
        (
            "delete_directory",
            json!({"workdir": W, "path": "d"}),
            "expected_revision",
        ),
        ("create_directory", json!({"workdir": W}), "path"),
    ];
    for (tool, args, field) in cases {
        assert_eq!(
            server.err(tool, args.clone()).await,
            "INVALID_ARGUMENT",
            "{tool}({args})"
        );
        let (_, message) = failure(&server, tool, args.clone()).await;
        assert!(
            message.contains(field),
            "{tool}({args}): {message:?} names {field}"
        );
    }
    // Schema validation comes before the workdir lookup.
    assert_eq!(
        server
            .err(
                "edit_text_file",
                json!({"workdir": "nope", "path": "f.txt", "expected_revision": rev, "edits": []})
            )
            .await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(std::fs::read(t.path("f.txt")).unwrap(), b"abc\n");
    assert_eq!(revision(&server, "f.txt").await, rev);
}

// ---------------------------------------------------------------------------
// create_text_file

#[tokio::test]
async fn create_text_file_result_and_revision() {
    let t = TempWorkdir::new();
    t.dir("docs");
    let server = rw_server(&t, &[]).await;
    let r = server
        .ok(
            "create_text_file",
            json!({"workdir": W, "path": "./docs/sub/../notes.md", "content": "hello\n"}),
        )
        .await;
    let stat = server
        .ok("stat_file", json!({"workdir": W, "path": "docs/notes.md"}))
        .await;
    let rev = stat["revision"].as_str().unwrap();
    assert_eq!(
        r,
        json!({"workdir": W, "path": "docs/notes.md", "created": true, "bytes_written": 6,
               "revision": rev})
    );
    assert!(rev.starts_with("v1:") && rev.len() == 19, "{rev}");
    let read = server
        .ok(
            "read_text_file",
            json!({"workdir": W, "path": "docs/notes.md"}),
        )
        .await;
    assert_eq!(read["revision"], rev);
    assert_eq!(read["content"], "hello\n");
    assert_eq!(std::fs::read(t.path("docs/notes.md")).unwrap(), b"hello\n");
    // New files are never executable.
    assert_eq!(mode(&t.path("docs/notes.md")) & 0o111, 0);
    assert_eq!(mode(&t.path("docs/notes.md")) & 0o7000, 0);
    // The returned revision is usable at once.
    server
        .ok(
            "edit_text_file",
            edit_args(
                "docs/notes.md",
                rev,
                json!([{"old_text": "hello", "new_text": "bye"}]),
            ),
        )
        .await;
    assert_eq!(std::fs::read(t.path("docs/notes.md")).unwrap(), b"bye\n");
    assert_no_debris(&t);
}

#[tokio::test]
async fn create_text_file_writes_bytes_exactly() {
    let t = TempWorkdir::new();
    let server = rw_server(&t, &[]).await;
    let contents = [
        "",
        "no trailing newline",
        "crlf\r\nline two\r\n",
        "lone\rcarriage return\r",
        "\u{feff}bom given by the caller\n",
        "ünïcødé ✓ 𝄞 — \u{200b}zero width\n",
        "\t  spaces  \n\n\n",
        "\u{7f}\u{1b}[31mcontrol characters are text\n",
    ];
    for (i, content) in contents.iter().enumerate() {
        let path = format!("f{i}.txt");
        let r = server
            .ok(
                "create_text_file",
                json!({"workdir": W, "path": path, "content": content}),
            )
            .await;
        assert_eq!(r["bytes_written"], content.len(), "{content:?}");
        assert_eq!(std::fs::read(t.path(&path)).unwrap(), content.as_bytes());
        assert_eq!(r["revision"], revision(&server, &path).await);
        assert_eq!(mode(&t.path(&path)) & 0o111, 0);
    }
    assert_no_debris(&t);
}

#[tokio::test]
async fn create_text_file_refusals() {
    let t = TempWorkdir::new();
    t.file("exists.txt", "old\n")
        .file("plain", "file\n")
        .file("real/inner.txt", "inner\n")
        .dir("dir")
        .symlink("dangling", "nowhere.txt")
        .symlink("to-file", "exists.txt")
        .symlink("linkdir", "real")
        .symlink("outdir", t.outside());
    t.fifo("pipe");
    let _socket = t.socket("sock");
    let server = rw_server(&t, &[("SERVERFS_MAX_WRITE_BYTES", "64")]).await;
    let before = snapshot(&t.root());
    let create =
        |path: &str, content: &str| json!({"workdir": W, "path": path, "content": content});
    let cases = [
        ("exists.txt", "x", "PATH_ALREADY_EXISTS"),
        ("dir", "x", "PATH_ALREADY_EXISTS"),
        ("dangling", "x", "PATH_ALREADY_EXISTS"),
        ("to-file", "x", "PATH_ALREADY_EXISTS"),
        ("linkdir", "x", "PATH_ALREADY_EXISTS"),
        ("pipe", "x", "PATH_ALREADY_EXISTS"),
        ("sock", "x", "PATH_ALREADY_EXISTS"),
        ("missing/new.txt", "x", "PARENT_NOT_FOUND"),
        ("missing/deeper/new.txt", "x", "PARENT_NOT_FOUND"),
        ("plain/new.txt", "x", "NOT_A_DIRECTORY"),
        ("linkdir/new.txt", "x", "SYMLINK_NOT_ALLOWED"),
        ("outdir/new.txt", "x", "SYMLINK_NOT_ALLOWED"),
        ("nul.txt", "a\0b", "BINARY_CONTENT_NOT_ALLOWED"),
        ("big.txt", &"x".repeat(65), "WRITE_TOO_LARGE"),
        // Size is counted in UTF-8 bytes: 33 × 'é' is 66 bytes.
        ("wide.txt", &"é".repeat(33), "WRITE_TOO_LARGE"),
        // Content checks come before the filesystem is consulted.
        ("exists.txt", "\0", "BINARY_CONTENT_NOT_ALLOWED"),
        ("missing/new.txt", "\0", "BINARY_CONTENT_NOT_ALLOWED"),
        ("exists.txt", &"x".repeat(65), "WRITE_TOO_LARGE"),
    ];
    for (path, content, code) in cases {
        assert_eq!(
            server.err("create_text_file", create(path, content)).await,
            code,
            "{path}"
        );
    }
    assert_eq!(
        snapshot(&t.root()),
        before,
        "a refused create changes nothing"
    );
    assert!(!t.outside().join("new.txt").exists());
    assert!(!t.path("real/new.txt").exists());
    assert_eq!(
        std::fs::read_link(t.path("to-file")).unwrap(),
        Path::new("exists.txt")
    );
    assert_eq!(std::fs::read(t.path("exists.txt")).unwrap(), b"old\n");

    // Exactly at the limit is fine, in ASCII and in multi-byte text.
    let r = server
        .ok("create_text_file", create("limit.txt", &"x".repeat(64)))
        .await;
    assert_eq!(r["bytes_written"], 64);
    let r = server
        .ok(
            "create_text_file",
            create("limit-wide.txt", &"é".repeat(32)),
        )
        .await;
    assert_eq!(r["bytes_written"], 64);
    assert_eq!(std::fs::read(t.path("limit-wide.txt")).unwrap().len(), 64);
    assert_no_debris(&t);
}

// ---------------------------------------------------------------------------
// edit_text_file

#[tokio::test]
async fn edit_text_file_result_and_chained_edits() {
    let t = TempWorkdir::new();
    t.file("f.txt", "one\ntwo\nthree\n");
    let server = rw_server(&t, &[]).await;
    let rev0 = revision(&server, "f.txt").await;
    let r = server
        .ok(
            "edit_text_file",
            edit_args(
                "./sub/../f.txt",
                &rev0,
                json!([{"old_text": "two", "new_text": "TWO"}]),
            ),
        )
        .await;
    let rev1 = revision(&server, "f.txt").await;
    assert_ne!(rev1, rev0);
    assert_eq!(
        r,
        json!({
            "workdir": W, "path": "f.txt", "edited": true, "dry_run": false,
            "edits_applied": 1, "bytes_before": 14, "bytes_after": 14,
            "revision_before": rev0, "revision": rev1,
            "diff": "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
            "diff_truncated": false,
        })
    );
    assert_eq!(
        std::fs::read(t.path("f.txt")).unwrap(),
        b"one\nTWO\nthree\n"
    );

    // Chain: each edit uses the revision the previous one returned, and a
    // spent token stays spent.
    let mut rev = rev1;
    for i in 0..6 {
        let (old, new) = if i % 2 == 0 {
            ("three".to_owned(), format!("three{i}"))
        } else {
            (format!("three{}", i - 1), "three".to_owned())
        };
        let r = server
            .ok(
                "edit_text_file",
                edit_args("f.txt", &rev, json!([{"old_text": old, "new_text": new}])),
            )
            .await;
        assert_eq!(r["revision_before"], rev.as_str());
        rev = r["revision"].as_str().unwrap().to_owned();
        assert_eq!(rev, revision(&server, "f.txt").await);
        let code = server
            .err(
                "edit_text_file",
                edit_args(
                    "f.txt",
                    &rev0,
                    json!([{"old_text": "one", "new_text": "1"}]),
                ),
            )
            .await;
        assert_eq!(code, "REVISION_CONFLICT");
    }
    assert_eq!(
        std::fs::read(t.path("f.txt")).unwrap(),
        b"one\nTWO\nthree\n"
    );
    assert_no_debris(&t);
}

#[tokio::test]
async fn edit_text_file_applies_edits_in_order_and_replaces_all() {
    let t = TempWorkdir::new();
    t.file("f.txt", "x-x-x\nkeep\n");
    let server = rw_server(&t, &[]).await;
    let rev = revision(&server, "f.txt").await;
    let r = server
        .ok(
            "edit_text_file",
            edit_args(
                "f.txt",
                &rev,
                json!([
                    {"old_text": "x", "new_text": "yy", "expected_count": 3},
                    // Sees the first edit's result.
                    {"old_text": "yy-yy", "new_text": "z"},
                    {"old_text": "keep\n", "new_text": ""},
                ]),
            ),
        )
        .await;
    assert_eq!(r["edits_applied"], 3);
    assert_eq!(r["bytes_before"], 11);
    assert_eq!(r["bytes_after"], 5);
    assert_eq!(std::fs::read(t.path("f.txt")).unwrap(), b"z-yy\n");
    // Empty old_text fills an empty file.
    t.file("empty.txt", "");
    let rev = revision(&server, "empty.txt").await;
    let r = server
        .ok(
            "edit_text_file",
            edit_args(
                "empty.txt",
                &rev,
                json!([{"old_text": "", "new_text": "filled\n"}]),
            ),
        )
        .await;
    assert_eq!(
        (r["bytes_before"].clone(), r["bytes_after"].clone()),
        (json!(0), json!(7))
    );
    assert_eq!(std::fs::read(t.path("empty.txt")).unwrap(), b"filled\n");
    assert_no_debris(&t);
}

#[tokio::test]
async fn edit_text_file_keeps_bytes_exact() {
    let t = TempWorkdir::new();
    t.file("crlf.txt", "alpha\r\nbeta\r\ngamma\r\n")
        .file("bom.txt", "\u{feff}first\nsecond\n")
        .file("bom-only.txt", "\u{feff}")
        .file("nonl.txt", "no newline at end")
        .file("uni.txt", "héllo wörld ✓\r\n𝄞\n");
    let server = rw_server(&t, &[]).await;
    let cases: [(&str, Value, &[u8], u64, u64); 5] = [
        (
            "crlf.txt",
            json!([{"old_text": "beta", "new_text": "BETA\r\ninserted"}]),
            b"alpha\r\nBETA\r\ninserted\r\ngamma\r\n",
            20,
            30,
        ),
        (
            "bom.txt",
            json!([{"old_text": "first", "new_text": "1st"}]),
            b"\xEF\xBB\xBF1st\nsecond\n",
            16,
            14,
        ),
        (
            "bom-only.txt",
            json!([{"old_text": "", "new_text": "now text"}]),
            b"\xEF\xBB\xBFnow text",
            3,
            11,
        ),
        (
            "nonl.txt",
            json!([{"old_text": "end", "new_text": "the end"}]),
            b"no newline at the end",
            17,
            21,
        ),
        (
            "uni.txt",
            json!([{"old_text": "wörld", "new_text": "мир"}]),
            "héllo мир ✓\r\n𝄞\n".as_bytes(),
            24,
            24,
        ),
    ];
    for (path, edits, expected, before, after) in cases {
        let rev = revision(&server, path).await;
        let r = server
            .ok("edit_text_file", edit_args(path, &rev, edits))
            .await;
        assert_eq!(std::fs::read(t.path(path)).unwrap(), expected, "{path}");
        assert_eq!(r["bytes_before"], before, "{path}");
        assert_eq!(r["bytes_after"], after, "{path}");
        assert_eq!(r["bytes_after"], expected.len(), "{path}");
    }
    // The BOM is kept but is not part of the text edits see.
    let rev = revision(&server, "bom.txt").await;
    let code = server
        .err(
            "edit_text_file",
            edit_args(
                "bom.txt",
                &rev,
                json!([{"old_text": "\u{feff}1st", "new_text": "x"}]),
            ),
        )
        .await;
    assert_eq!(code, "EDIT_CONFLICT");
    assert_no_debris(&t);
}

#[tokio::test]
async fn edit_text_file_dry_run_changes_nothing_and_matches_the_real_edit() {
    let t = TempWorkdir::new();
    let original = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    t.file("f.txt", original);
    let server = rw_server(&t, &[]).await;
    let rev = revision(&server, "f.txt").await;
    let edits =
        json!([{"old_text": "b\n", "new_text": "B\nB2\n"}, {"old_text": "i", "new_text": "I"}]);
    let mut args = edit_args("f.txt", &rev, edits);
    args["dry_run"] = json!(true);
    let dry = server.ok("edit_text_file", args.clone()).await;
    assert_eq!(std::fs::read(t.path("f.txt")).unwrap(), original.as_bytes());
    assert_eq!(revision(&server, "f.txt").await, rev);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["edited"], false);
    assert_eq!(dry["revision"], rev.as_str());
    assert_eq!(dry["revision_before"], rev.as_str());
    // A dry run can be repeated: it spent nothing.
    assert_eq!(server.ok("edit_text_file", args.clone()).await, dry);

    args["dry_run"] = json!(false);
    let real = server.ok("edit_text_file", args).await;
    assert_eq!(real["diff"], dry["diff"]);
    assert_eq!(real["diff_truncated"], dry["diff_truncated"]);
    assert_eq!(real["bytes_after"], dry["bytes_after"]);
    assert_eq!(real["bytes_before"], dry["bytes_before"]);
    assert_eq!(real["edits_applied"], dry["edits_applied"]);
    assert_eq!(real["revision_before"], rev.as_str());
    assert_eq!(real["edited"], true);
    assert_eq!(real["revision"], revision(&server, "f.txt").await.as_str());
    assert_eq!(
        std::fs::read(t.path("f.txt")).unwrap(),
        b"a\nB\nB2\nc\nd\ne\nf\ng\nh\nI\nj\n"
    );
    assert!(dry["diff"].as_str().unwrap().contains("-b\n+B\n+B2\n"));
    // A dry run is checked like a real edit: a spent token, a missing match.
    let mut args = edit_args("f.txt", &rev, json!([{"old_text": "a", "new_text": "y"}]));
    args["dry_run"] = json!(true);
    assert_eq!(
        server.err("edit_text_file", args).await,
        "REVISION_CONFLICT"
    );
    let current = revision(&server, "f.txt").await;
    let mut args = edit_args(
        "f.txt",
        &current,
        json!([{"old_text": "zzz", "new_text": "y"}]),
    );
    args["dry_run"] = json!(true);
    assert_eq!(server.err("edit_text_file", args).await, "EDIT_CONFLICT");
    assert_no_debris(&t);
}

#[tokio::test]
async fn edit_text_file_refusals() {
    let t = TempWorkdir::new();
    t.file("f.txt", "a a a\n")
        .file("plain", "p\n")
        .file("real/inner.txt", "inner\n")
        .file("bin.txt", b"text\0more\n")
        .file("latin1.txt", b"caf\xe9\n")
        .file("h1.txt", "linked\n")
        .dir("dir")
        .symlink("link.txt", "f.txt")
        .symlink("out.txt", t.outside().join("secret.txt"))
        .symlink("linkdir", "real")
        .hardlink("h1.txt", "h2.txt");
    t.fifo("pipe");
    let server = rw_server(&t, &[("SERVERFS_MAX_EDITS_PER_CALL", "3")]).await;
    let before = snapshot(&t.root());
    let secret = std::fs::read(t.outside().join("secret.txt")).unwrap();
    let rev = revision(&server, "f.txt").await;
    let one = json!([{"old_text": "a", "new_text": "b", "expected_count": 3}]);
    let mut cases: Vec<(String, String, Value, &str)> = Vec::new();
    let mut case = |path: &str, revision: &str, edits: &Value, code| {
        cases.push((path.to_owned(), revision.to_owned(), edits.clone(), code));
    };
    case("missing.txt", STALE, &one, "PATH_NOT_FOUND");
    case("missing/f.txt", STALE, &one, "PATH_NOT_FOUND");
    case("plain/f.txt", STALE, &one, "NOT_A_DIRECTORY");
    case("linkdir/inner.txt", STALE, &one, "SYMLINK_NOT_ALLOWED");
    // Type before revision: a stale token does not mask the type code.
    case("dir", STALE, &one, "NOT_A_FILE");
    case("link.txt", STALE, &one, "SYMLINK_NOT_ALLOWED");
    case("out.txt", STALE, &one, "SYMLINK_NOT_ALLOWED");
    case("pipe", STALE, &one, "UNSUPPORTED_FILE_TYPE");
    case("f.txt", STALE, &one, "REVISION_CONFLICT");
    case("f.txt", "v1:x", &one, "REVISION_CONFLICT");
    case("f.txt", "", &one, "REVISION_CONFLICT");
    // Revision before link count.
    case("h1.txt", STALE, &one, "REVISION_CONFLICT");
    case(
        "f.txt",
        &rev,
        &json!([{"old_text": "a", "new_text": "b", "expected_count": 2}]),
        "EDIT_CONFLICT",
    );
    case(
        "f.txt",
        &rev,
        &json!([{"old_text": "zzz", "new_text": "b"}]),
        "EDIT_CONFLICT",
    );
    case(
        "f.txt",
        &rev,
        &json!([{"old_text": "", "new_text": "b"}]),
        "EDIT_CONFLICT",
    );
    // All or nothing: the first edit matches, the second does not.
    case(
        "f.txt",
        &rev,
        &json!([{"old_text": "a a a", "new_text": "done"}, {"old_text": "a", "new_text": "b"}]),
        "EDIT_CONFLICT",
    );
    case(
        "f.txt",
        &rev,
        &json!([{"old_text": "a\0", "new_text": "b", "expected_count": 1}]),
        "BINARY_CONTENT_NOT_ALLOWED",
    );
    case(
        "f.txt",
        &rev,
        &json!([{"old_text": "a", "new_text": "\0", "expected_count": 3}]),
        "BINARY_CONTENT_NOT_ALLOWED",
    );
    let four = json!([
        {"old_text": "a", "new_text": "b"}, {"old_text": "a", "new_text": "b"},
        {"old_text": "a", "new_text": "b"}, {"old_text": "a", "new_text": "b"},
    ]);
    case("f.txt", &rev, &four, "TOO_MANY_EDITS");
    // Edit-list checks come before the filesystem is touched.
    case("missing.txt", STALE, &four, "TOO_MANY_EDITS");
    case(
        "dir",
        STALE,
        &json!([{"old_text": "\0", "new_text": ""}]),
        "BINARY_CONTENT_NOT_ALLOWED",
    );
    for (path, revision, edits, code) in cases {
        assert_eq!(
            server
                .err("edit_text_file", edit_args(&path, &revision, edits.clone()))
                .await,
            code,
            "{path} {revision} {edits}"
        );
    }
    // Object constraints, each with the correct revision.
    for (path, code) in [
        ("h1.txt", "MULTIPLE_HARDLINKS_NOT_SUPPORTED"),
        ("h2.txt", "MULTIPLE_HARDLINKS_NOT_SUPPORTED"),
        ("bin.txt", "BINARY_FILE"),
        ("latin1.txt", "UNSUPPORTED_TEXT_ENCODING"),
    ] {
        let rev = revision(&server, path).await;
        let edits = json!([{"old_text": "e", "new_text": "E", "expected_count": 1}]);
        assert_eq!(
            server
                .err("edit_text_file", edit_args(path, &rev, edits))
                .await,
            code,
            "{path}"
        );
    }
    assert_eq!(
        snapshot(&t.root()),
        before,
        "a refused edit changes nothing"
    );
    assert_eq!(revision(&server, "f.txt").await, rev);
    assert_eq!(
        std::fs::read_link(t.path("link.txt")).unwrap(),
        Path::new("f.txt")
    );
    assert_eq!(
        std::fs::read(t.outside().join("secret.txt")).unwrap(),
        secret
    );
    // Three edits are within the limit.
    let three = json!([
        {"old_text": "a a a", "new_text": "b a a"}, {"old_text": "b a", "new_text": "b b"},
        {"old_text": "b b a", "new_text": "b b b"},
    ]);
    server
        .ok("edit_text_file", edit_args("f.txt", &rev, three))
        .await;
    assert_eq!(std::fs::read(t.path("f.txt")).unwrap(), b"b b b\n");
    assert_no_debris(&t);
}

#[tokio::test]
async fn edit_text_file_size_limits() {
    let t = TempWorkdir::new();
    let sixty = format!("{}\n", "a".repeat(59));
    t.file("f.txt", &sixty).file("big.txt", "b".repeat(100));
    let server = rw_server(&t, &[("SERVERFS_MAX_WRITE_BYTES", "64")]).await;
    let before = snapshot(&t.root());
    let rev = revision(&server, "f.txt").await;
    // The result would be 70 bytes.
    let grow = json!([{"old_text": "\n", "new_text": "0123456789\n"}]);
    assert_eq!(
        server
            .err("edit_text_file", edit_args("f.txt", &rev, grow))
            .await,
        "WRITE_TOO_LARGE"
    );
    // The edit texts alone exceed the limit.
    let texts = json!([{"old_text": "a", "new_text": "c".repeat(64), "expected_count": 59}]);
    assert_eq!(
        server
            .err("edit_text_file", edit_args("f.txt", &rev, texts))
            .await,
        "WRITE_TOO_LARGE"
    );
    // The source file exceeds the limit.
    let big_rev = revision(&server, "big.txt").await;
    let small = json!([{"old_text": "bbbb", "new_text": "", "expected_count": 25}]);
    assert_eq!(
        server
            .err("edit_text_file", edit_args("big.txt", &big_rev, small))
            .await,
        "WRITE_TOO_LARGE"
    );
    assert_eq!(snapshot(&t.root()), before);
    // Growing to exactly the limit is fine.
    let to_limit = json!([{"old_text": "\n", "new_text": "0123\n"}]);
    let r = server
        .ok("edit_text_file", edit_args("f.txt", &rev, to_limit))
        .await;
    assert_eq!(r["bytes_after"], 64);
    assert_eq!(std::fs::read(t.path("f.txt")).unwrap().len(), 64);
    assert_no_debris(&t);
}

#[tokio::test]
async fn edit_text_file_preserves_mode_and_xattrs() {
    let t = TempWorkdir::new();
    let modes = [0o640, 0o755, 0o600, 0o444, 0o4755];
    for m in modes {
        let path = format!("m{m:o}.txt");
        t.file(&path, "before\n");
        set_mode(&t.path(&path), m);
    }
    t.file("x.txt", "before\n");
    let xattr = set_xattr(&t.path("x.txt"), "user.serverfs_test", "kept-value");
    let server = rw_server(&t, &[]).await;
    for m in modes {
        let path = format!("m{m:o}.txt");
        let rev = revision(&server, &path).await;
        let r = server
            .ok(
                "edit_text_file",
                edit_args(
                    &path,
                    &rev,
                    json!([{"old_text": "before", "new_text": "after"}]),
                ),
            )
            .await;
        assert_eq!(std::fs::read(t.path(&path)).unwrap(), b"after\n");
        assert_eq!(mode(&t.path(&path)), m, "{path} keeps its mode");
        assert_eq!(r["revision"], revision(&server, &path).await.as_str());
    }
    match xattr {
        Ok(()) => {
            let rev = revision(&server, "x.txt").await;
            server
                .ok(
                    "edit_text_file",
                    edit_args(
                        "x.txt",
                        &rev,
                        json!([{"old_text": "before", "new_text": "after"}]),
                    ),
                )
                .await;
            assert_eq!(std::fs::read(t.path("x.txt")).unwrap(), b"after\n");
            assert_eq!(
                get_xattr(&t.path("x.txt"), "user.serverfs_test").as_deref(),
                Some("kept-value"),
                "the extended attribute survives the edit"
            );
        }
        Err(why) => eprintln!("skipping the xattr check: cannot set user xattrs here ({why})"),
    }
    assert_no_debris(&t);
}

#[tokio::test]
async fn binary_overwrite_preserves_mode_and_xattrs() {
    let t = TempWorkdir::new();
    t.file("tool.bin", b"\x00\x01old");
    set_mode(&t.path("tool.bin"), 0o750);
    let xattr = set_xattr(&t.path("tool.bin"), "user.serverfs_test", "bin-kept");
    let server = rw_server(&t, &[("SERVERFS_BINARY_TRANSFER_ENABLED", "true")]).await;
    let rev = revision(&server, "tool.bin").await;
    let r = server
        .ok(
            "upload_binary_file",
            json!({"workdir": W, "path": "tool.bin", "data_base64": BASE64.encode(b"\x7fELFnew"),
                   "overwrite": true, "expected_revision": rev}),
        )
        .await;
    assert_eq!(r["replaced"], true);
    assert_eq!(std::fs::read(t.path("tool.bin")).unwrap(), b"\x7fELFnew");
    assert_eq!(mode(&t.path("tool.bin")), 0o750);
    match xattr {
        Ok(()) => assert_eq!(
            get_xattr(&t.path("tool.bin"), "user.serverfs_test").as_deref(),
            Some("bin-kept")
        ),
        Err(why) => eprintln!("skipping the xattr check: cannot set user xattrs here ({why})"),
    }
    // A binary create is never executable either.
    server
        .ok(
            "upload_binary_file",
            json!({"workdir": W, "path": "new.bin", "data_base64": "AAEC"}),
        )
        .await;
    assert_eq!(mode(&t.path("new.bin")) & 0o111, 0);
    assert_no_debris(&t);
}

// ---------------------------------------------------------------------------
// delete_file

#[tokio::test]
async fn delete_file_result_and_refusals() {
    let t = TempWorkdir::new();
    t.file("f.txt", "twelve bytes")
        .file("bin.dat", b"\x00\xff\x00binary")
        .file("plain", "p")
        .file("real/inner.txt", "inner\n")
        .file("h1.txt", "shared\n")
        .dir("dir")
        .symlink("link.txt", "f.txt")
        .symlink("out.txt", t.outside().join("secret.txt"))
        .symlink("linkdir", "real")
        .hardlink("h1.txt", "h2.txt");
    t.fifo("pipe");
    let server = rw_server(&t, &[]).await;
    let before = snapshot(&t.root());
    let secret = std::fs::read(t.outside().join("secret.txt")).unwrap();
    let del = |path: &str, rev: &str| json!({"workdir": W, "path": path, "expected_revision": rev});
    let link_rev = revision(&server, "link.txt").await;
    let rev = revision(&server, "f.txt").await;
    let cases = [
        ("missing.txt", STALE, "PATH_NOT_FOUND"),
        ("missing/f.txt", STALE, "PATH_NOT_FOUND"),
        ("plain/x", STALE, "NOT_A_DIRECTORY"),
        ("linkdir/inner.txt", STALE, "SYMLINK_NOT_ALLOWED"),
        ("dir", STALE, "NOT_A_FILE"),
        ("link.txt", STALE, "SYMLINK_NOT_ALLOWED"),
        // Even with the symlink's own current revision.
        ("link.txt", link_rev.as_str(), "SYMLINK_NOT_ALLOWED"),
        ("out.txt", STALE, "SYMLINK_NOT_ALLOWED"),
        ("pipe", STALE, "UNSUPPORTED_FILE_TYPE"),
        ("f.txt", STALE, "REVISION_CONFLICT"),
        ("f.txt", "v1:x", "REVISION_CONFLICT"),
    ];
    for (path, revision, code) in cases {
        assert_eq!(
            server.err("delete_file", del(path, revision)).await,
            code,
            "{path}"
        );
    }
    assert_eq!(
        snapshot(&t.root()),
        before,
        "a refused delete changes nothing"
    );
    assert_eq!(
        std::fs::read(t.outside().join("secret.txt")).unwrap(),
        secret
    );

    let r = server.ok("delete_file", del("./f.txt", &rev)).await;
    assert_eq!(
        r,
        json!({"workdir": W, "path": "f.txt", "deleted": true, "bytes_deleted": 12,
               "revision_deleted": rev})
    );
    assert!(!t.path("f.txt").exists());
    assert_eq!(
        std::fs::read_link(t.path("link.txt")).unwrap(),
        Path::new("f.txt"),
        "the dangling link is still there"
    );
    assert_eq!(
        server.err("delete_file", del("f.txt", &rev)).await,
        "PATH_NOT_FOUND"
    );
    // Binary files are deletable.
    let bin_rev = revision(&server, "bin.dat").await;
    let r = server.ok("delete_file", del("bin.dat", &bin_rev)).await;
    assert_eq!(r["bytes_deleted"], 9);
    // One name of a hard-linked file may be deleted; the other keeps the bytes.
    let h2 = revision(&server, "h2.txt").await;
    let h1_before = revision(&server, "h1.txt").await;
    server.ok("delete_file", del("h2.txt", &h2)).await;
    assert!(!t.path("h2.txt").exists());
    assert_eq!(std::fs::read(t.path("h1.txt")).unwrap(), b"shared\n");
    assert_eq!(std::fs::metadata(t.path("h1.txt")).unwrap().nlink(), 1);
    // The survivor's revision changed (link count), and it is now editable.
    let h1 = revision(&server, "h1.txt").await;
    assert_ne!(h1, h1_before);
    server
        .ok(
            "edit_text_file",
            edit_args(
                "h1.txt",
                &h1,
                json!([{"old_text": "shared", "new_text": "alone"}]),
            ),
        )
        .await;
    assert_no_debris(&t);
}

// ---------------------------------------------------------------------------
// create_directory

#[tokio::test]
async fn create_directory_result_and_refusals() {
    let t = TempWorkdir::new();
    t.file("plain", "p")
        .file("real/inner.txt", "inner\n")
        .dir("dir")
        .symlink("dangling", "nowhere")
        .symlink("linkdir", "real")
        .symlink("outdir", t.outside());
    t.fifo("pipe");
    let server = rw_server(&t, &[]).await;
    let before = snapshot(&t.root());
    let mk = |path: &str| json!({"workdir": W, "path": path});
    for (path, code) in [
        ("dir", "PATH_ALREADY_EXISTS"),
        ("plain", "PATH_ALREADY_EXISTS"),
        ("dangling", "PATH_ALREADY_EXISTS"),
        ("linkdir", "PATH_ALREADY_EXISTS"),
        ("pipe", "PATH_ALREADY_EXISTS"),
        ("missing/sub", "PARENT_NOT_FOUND"),
        ("plain/sub", "NOT_A_DIRECTORY"),
        ("linkdir/sub", "SYMLINK_NOT_ALLOWED"),
        ("outdir/sub", "SYMLINK_NOT_ALLOWED"),
    ] {
        assert_eq!(
            server.err("create_directory", mk(path)).await,
            code,
            "{path}"
        );
    }
    assert_eq!(snapshot(&t.root()), before);
    assert!(!t.outside().join("sub").exists());

    let r = server.ok("create_directory", mk("dir/./new/")).await;
    let rev = revision(&server, "dir/new").await;
    assert_eq!(
        r,
        json!({"workdir": W, "path": "dir/new", "created": true, "revision": rev})
    );
    assert!(t.path("dir/new").is_dir());
    assert_eq!(mode(&t.path("dir/new")) & 0o7000, 0);
    // Not recursive, and creating it again is refused.
    assert_eq!(
        server.err("create_directory", mk("dir/new")).await,
        "PATH_ALREADY_EXISTS"
    );
    assert_eq!(
        server.err("create_directory", mk("a/b/c")).await,
        "PARENT_NOT_FOUND"
    );
    // The returned revision is the directory's; usable to delete it at once.
    server
        .ok(
            "delete_directory",
            json!({"workdir": W, "path": "dir/new", "expected_revision": rev}),
        )
        .await;
    assert!(!t.path("dir/new").exists());
    assert_no_debris(&t);
}

// ---------------------------------------------------------------------------
// delete_directory

#[tokio::test]
async fn delete_directory_result_and_refusals() {
    let t = TempWorkdir::new();
    t.file("plain", "p")
        .file("full/visible.txt", "v")
        .file("hidden-only/.secret", "s")
        .file("denied-only/k.pem", "k")
        .file("temp-only/.serverfs-tmp-planted", "t")
        .dir("empty")
        .dir("real")
        .symlink("linkdir", "real")
        .symlink("outdir", t.outside());
    t.dir("nested/child");
    // A live writer's temporary file (it holds the lock), which start-up
    // cleanup must leave alone.
    let _writer = hold_temp(&t.path("temp-only/.serverfs-tmp-planted"));
    let server = rw_server(&t, &[]).await;
    let before = snapshot(&t.root());
    let rmdir =
        |path: &str, rev: &str| json!({"workdir": W, "path": path, "expected_revision": rev});
    let mut cases = vec![
        ("missing".to_owned(), STALE.to_owned(), "PATH_NOT_FOUND"),
        ("missing/sub".to_owned(), STALE.to_owned(), "PATH_NOT_FOUND"),
        ("plain/sub".to_owned(), STALE.to_owned(), "NOT_A_DIRECTORY"),
        // Type before revision.
        ("plain".to_owned(), STALE.to_owned(), "NOT_A_DIRECTORY"),
        (
            "linkdir".to_owned(),
            STALE.to_owned(),
            "SYMLINK_NOT_ALLOWED",
        ),
        ("outdir".to_owned(), STALE.to_owned(), "SYMLINK_NOT_ALLOWED"),
        ("empty".to_owned(), STALE.to_owned(), "REVISION_CONFLICT"),
    ];
    for path in ["full", "hidden-only", "denied-only", "temp-only", "nested"] {
        cases.push((
            path.to_owned(),
            revision(&server, path).await,
            "DIRECTORY_NOT_EMPTY",
        ));
    }
    cases.push((
        "linkdir".to_owned(),
        revision(&server, "linkdir").await,
        "SYMLINK_NOT_ALLOWED",
    ));
    for (path, revision, code) in cases {
        let (got, message) = failure(&server, "delete_directory", rmdir(&path, &revision)).await;
        assert_eq!(got, code, "{path}");
        for child in ["visible", "secret", "k.pem", "serverfs-tmp", "child"] {
            assert!(
                !message.contains(child),
                "the error names no child: {message}"
            );
        }
    }
    assert_eq!(
        snapshot(&t.root()),
        before,
        "a refused delete changes nothing"
    );
    assert!(t.outside().join("secret.txt").exists());

    // Adding then removing a child changes the directory's revision.
    let rev = revision(&server, "empty").await;
    let created = server
        .ok(
            "create_text_file",
            json!({"workdir": W, "path": "empty/tmp.txt", "content": ""}),
        )
        .await;
    server
        .ok(
            "delete_file",
            json!({"workdir": W, "path": "empty/tmp.txt", "expected_revision": created["revision"]}),
        )
        .await;
    assert_eq!(
        server.err("delete_directory", rmdir("empty", &rev)).await,
        "REVISION_CONFLICT"
    );
    let rev = revision(&server, "empty").await;
    let r = server.ok("delete_directory", rmdir("./empty/", &rev)).await;
    assert_eq!(
        r,
        json!({"workdir": W, "path": "empty", "deleted": true, "revision_deleted": rev})
    );
    assert!(!t.path("empty").exists());
    assert_eq!(
        server.err("delete_directory", rmdir("empty", &rev)).await,
        "PATH_NOT_FOUND"
    );
    // A directory emptied through the tools can then go.
    let child = revision(&server, "nested/child").await;
    server
        .ok("delete_directory", rmdir("nested/child", &child))
        .await;
    let nested = revision(&server, "nested").await;
    server
        .ok("delete_directory", rmdir("nested", &nested))
        .await;
    assert!(!t.path("nested").exists());
}

// ---------------------------------------------------------------------------
// Temporary names

/// Holds the lock a live ServerFS writer keeps on its temporary file.
fn hold_temp(path: &std::path::Path) -> std::fs::File {
    let file = std::fs::File::open(path).unwrap();
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    file
}

/// Temporary files of a live writer (locked) are never shown or touched;
/// the abandoned ones that start-up cleanup removes are covered by the
/// crash test.
#[tokio::test]
async fn planted_temp_names_are_never_shown_or_touched() {
    let t = TempWorkdir::new();
    t.file(".serverfs-tmp-planted", "planted\n")
        .file("d/.serverfs-tmp-also", "planted\n")
        .file(".visible", "hidden but allowed\n")
        .file("d/f.txt", "f\n");
    let _writers = [
        hold_temp(&t.path(".serverfs-tmp-planted")),
        hold_temp(&t.path("d/.serverfs-tmp-also")),
    ];
    let spec = format!("{W}={}:rw", t.root().display());
    let server = Server::start(&["--workdir", &spec], &[("SERVERFS_ALLOW_HIDDEN", "true")]).await;
    let names = |listing: &Value| -> Vec<String> {
        listing["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let root = server
        .ok("list_directory", json!({"workdir": W, "path": ""}))
        .await;
    assert_eq!(names(&root), [".visible", "d"]);
    let d = server
        .ok("list_directory", json!({"workdir": W, "path": "d"}))
        .await;
    assert_eq!(names(&d), ["f.txt"]);
    for path in [".serverfs-tmp-planted", "d/.serverfs-tmp-also"] {
        for (tool, args) in [
            ("stat_file", json!({"workdir": W, "path": path})),
            ("read_text_file", json!({"workdir": W, "path": path})),
        ] {
            assert_eq!(
                server.err(tool, args).await,
                "RESERVED_PATH",
                "{tool} {path}"
            );
        }
        for tool in TOOLS {
            assert_eq!(
                server.err(tool, args_for(tool, W, path)).await,
                "RESERVED_PATH",
                "{tool} {path}"
            );
        }
    }
    // Mutations beside the planted files neither show nor remove them.
    let rev = revision(&server, "d/f.txt").await;
    server
        .ok(
            "edit_text_file",
            edit_args("d/f.txt", &rev, json!([{"old_text": "f", "new_text": "g"}])),
        )
        .await;
    server
        .ok(
            "create_text_file",
            json!({"workdir": W, "path": "d/new.txt", "content": "n"}),
        )
        .await;
    let mut debris = temp_debris(&t.root());
    debris.sort();
    assert_eq!(debris, [".serverfs-tmp-planted", "d/.serverfs-tmp-also"]);
    assert_eq!(
        std::fs::read(t.path(".serverfs-tmp-planted")).unwrap(),
        b"planted\n"
    );
}

#[tokio::test]
async fn no_temp_debris_after_any_outcome() {
    let t = TempWorkdir::new();
    t.file("f.txt", "one\n").dir("d");
    let server = rw_server(
        &t,
        &[
            ("SERVERFS_MAX_WRITE_BYTES", "32"),
            ("SERVERFS_BINARY_TRANSFER_ENABLED", "true"),
            ("SERVERFS_MAX_BINARY_TRANSFER_BYTES", "16"),
        ],
    )
    .await;
    let rev = revision(&server, "f.txt").await;
    let calls = [
        (
            "create_text_file",
            json!({"workdir": W, "path": "n.txt", "content": "new\n"}),
        ),
        (
            "create_text_file",
            json!({"workdir": W, "path": "n.txt", "content": "again\n"}),
        ),
        (
            "create_text_file",
            json!({"workdir": W, "path": "d/x.txt", "content": "x".repeat(33)}),
        ),
        (
            "edit_text_file",
            edit_args("f.txt", &rev, json!([{"old_text": "zzz", "new_text": "y"}])),
        ),
        (
            "edit_text_file",
            edit_args(
                "f.txt",
                &rev,
                json!([{"old_text": "one", "new_text": "y".repeat(40)}]),
            ),
        ),
        (
            "edit_text_file",
            edit_args(
                "f.txt",
                STALE,
                json!([{"old_text": "one", "new_text": "two"}]),
            ),
        ),
        (
            "edit_text_file",
            edit_args(
                "f.txt",
                &rev,
                json!([{"old_text": "one", "new_text": "two"}]),
            ),
        ),
        (
            "upload_binary_file",
            json!({"workdir": W, "path": "d/b.bin", "data_base64": "AAEC"}),
        ),
        (
            "upload_binary_file",
            json!({"workdir": W, "path": "d/b.bin", "data_base64": "AAEC"}),
        ),
        (
            "upload_binary_file",
            json!({"workdir": W, "path": "d/b.bin", "data_base64": "AAEC",
                                      "overwrite": true, "expected_revision": STALE}),
        ),
        ("create_directory", json!({"workdir": W, "path": "d/sub"})),
    ];
    for (tool, args) in calls {
        let _ = server.call(tool, args).await;
        assert_no_debris(&t);
    }
    let listing = |dir: PathBuf| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listing(t.root()), ["d", "f.txt", "n.txt"]);
    assert_eq!(listing(t.path("d")), ["b.bin", "sub"]);
    assert_eq!(std::fs::read(t.path("f.txt")).unwrap(), b"two\n");
    assert_eq!(std::fs::read(t.path("n.txt")).unwrap(), b"new\n");
}
