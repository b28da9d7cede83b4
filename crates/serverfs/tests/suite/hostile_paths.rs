//! Hostile paths: a table of paths a malicious or confused client may send,
//! each with the code it must get, run through `read_text_file`, `stat_file`
//! and `list_directory` over one real server — once with the default
//! resolver (`openat2` where the kernel has it) and once with the
//! `O_NOFOLLOW` walker forced by `SERVERFS_FS_RESOLVER=walk`, so both
//! resolvers answer the same table (STYLE.md item 11).
//!
//! Every answer, success or error, text or structured, is also searched for
//! what must never leave the server (ARCHITECTURE.md §1, invariants 3 and
//! 4): the outside secret, content of refused files, and the host paths of
//! the workdir roots, of the directories beside them and of the server's
//! working directory.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::model::CallToolResult;
use serde_json::json;
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};

use crate::common::Server;

const READ: &str = "read_text_file";
const STAT: &str = "stat_file";
const LIST: &str = "list_directory";

const OUTSIDE: &str = "PATH_OUTSIDE_WORKDIR";
const BACKSLASH: &str = "INVALID_NAME";
const NUL: &str = "ACCESS_DENIED";
const TOO_LONG: &str = "PATH_TOO_LONG";
const RESERVED: &str = "RESERVED_PATH";
const HIDDEN: &str = "HIDDEN_PATH_NOT_ALLOWED";
const DENIED: &str = "DENIED_PATH";
const SYMLINK: &str = "SYMLINK_NOT_ALLOWED";
const SPECIAL: &str = "UNSUPPORTED_FILE_TYPE";
const NOT_FILE: &str = "NOT_A_FILE";
const NOT_DIR: &str = "NOT_A_DIRECTORY";
const MISSING: &str = "PATH_NOT_FOUND";

/// Content of every file a client must never read (hidden, denied or
/// reserved names): seeing it in an answer is a policy bypass.
const REFUSED_CONTENT: &str = "REFUSED-CONTENT-41c2e8";
/// Content of the ordinary files with odd but valid names.
const FINE: &str = "fine\n";

/// The quick-start-like workdir: hidden names refused, default deny rules on.
const W: &str = "w";
/// A workdir that allows hidden names and adds deny globs `*.log` and
/// `private`.
const H: &str = "h";

/// What one tool must answer for one path.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// `read_text_file` succeeds with exactly this content.
    Text(&'static str),
    /// `stat_file` succeeds and reports this `type`.
    Kind(&'static str),
    /// `list_directory` succeeds.
    Listed,
    /// The call fails with this code.
    Code(&'static str),
    /// The path is not run through this tool.
    Skip,
}

/// One row of the table.
#[derive(Debug, Clone)]
struct Case {
    workdir: &'static str,
    path: String,
    /// The normalized path a successful answer must echo (default: `path`).
    normalized: Option<&'static str>,
    read: Want,
    stat: Want,
    list: Want,
}

impl Case {
    fn on(mut self, workdir: &'static str) -> Case {
        self.workdir = workdir;
        self
    }

    fn normalized(mut self, normalized: &'static str) -> Case {
        self.normalized = Some(normalized);
        self
    }
}

/// A path in workdir `w` with one expectation per tool.
fn case(path: impl Into<String>, read: Want, stat: Want, list: Want) -> Case {
    Case {
        workdir: W,
        path: path.into(),
        normalized: None,
        read,
        stat,
        list,
    }
}

/// A path every tool must refuse with `code`.
fn refused(path: impl Into<String>, code: &'static str) -> Case {
    case(path, Want::Code(code), Want::Code(code), Want::Code(code))
}

/// A final symlink: never read or listed through, described by `stat_file`.
fn final_link(path: &str) -> Case {
    case(
        path,
        Want::Code(SYMLINK),
        Want::Kind("symlink"),
        Want::Code(SYMLINK),
    )
}

/// An ordinary file with content `FINE`.
fn fine_file(path: &str) -> Case {
    case(
        path,
        Want::Text(FINE),
        Want::Kind("file"),
        Want::Code(NOT_DIR),
    )
}

/// The table. Workdir `w` unless `.on(H)`.
fn table() -> Vec<Case> {
    use Want::{Code, Kind, Listed, Text};
    let mut cases = vec![
        // Escapes by `..`, absolute paths and `~`: refused before any lookup.
        refused("..", OUTSIDE),
        refused("../x", OUTSIDE),
        refused("../outside/secret.txt", OUTSIDE),
        refused("a/../../x", OUTSIDE),
        refused("dir/../../outside/secret.txt", OUTSIDE),
        refused("dir/sub/../../../outside", OUTSIDE),
        refused("./../x", OUTSIDE),
        refused("a/b/../../..", OUTSIDE),
        refused("/etc/passwd", OUTSIDE),
        refused("//etc", OUTSIDE),
        refused("/", OUTSIDE),
        refused("/proc/self/root/etc/passwd", OUTSIDE),
        refused("~", OUTSIDE),
        refused("~/x", OUTSIDE),
        refused("~root/.ssh", OUTSIDE),
        refused("dir/../~x", OUTSIDE),
        // Backslashes are never separators, and never accepted.
        refused("a\\b", BACKSLASH),
        refused("..\\..\\etc\\passwd", BACKSLASH),
        refused("dir\\inner.txt", BACKSLASH),
        refused("dir/..\\..", BACKSLASH),
        // NUL bytes.
        refused("a\0b", NUL),
        refused("a.txt\0", NUL),
        refused("\0", NUL),
        refused("..\0/x", NUL),
        // Length limits (NAME_MAX 255, PATH_MAX 4096).
        refused("x".repeat(256), TOO_LONG),
        refused("ab/".repeat(1400), TOO_LONG),
        refused(format!("dir/{}", "y".repeat(300)), TOO_LONG),
        // Names that only look like escapes are literal, and absent.
        refused("x".repeat(255), MISSING),
        refused("%2e%2e", MISSING),
        refused("%2e%2e/%2e%2e/etc/passwd", MISSING),
        // A leading `.` makes it a hidden name in `w`; `h` allows those.
        refused("..%2f..%2fetc%2fpasswd", HIDDEN),
        refused("..%2f..%2fetc%2fpasswd", MISSING).on(H),
        refused("\u{FF0E}\u{FF0E}/outside/secret.txt", MISSING),
        refused("\u{2025}/x", MISSING),
        refused("a.txt ", MISSING),
        refused("A.TXT", MISSING),
        refused("missing.txt", MISSING),
        refused("missing/x", MISSING),
        refused("dir/missing", MISSING),
        // Object types.
        case("a.txt", Text("hello\n"), Kind("file"), Code(NOT_DIR)),
        refused("a.txt/x", NOT_DIR),
        case("dir", Code(NOT_FILE), Kind("directory"), Listed),
        case(".", Code(NOT_FILE), Kind("directory"), Listed).normalized("."),
        case("", Code(NOT_FILE), Kind("directory"), Listed).normalized("."),
        case(
            "dir/inner.txt/",
            Text("inner\n"),
            Kind("file"),
            Code(NOT_DIR),
        )
        .normalized("dir/inner.txt"),
        case(
            "dir/./sub/../inner.txt",
            Text("inner\n"),
            Kind("file"),
            Code(NOT_DIR),
        )
        .normalized("dir/inner.txt"),
        case("fifo", Code(SPECIAL), Kind("other"), Code(NOT_DIR)),
        case("sock", Code(SPECIAL), Kind("other"), Code(NOT_DIR)),
        refused("fifo/x", NOT_DIR),
        refused("sock/x", NOT_DIR),
        // `..` is resolved lexically, so the symlink is never touched.
        case(
            "link_parent/../a.txt",
            Text("hello\n"),
            Kind("file"),
            Code(NOT_DIR),
        )
        .normalized("a.txt"),
    ];
    // A symlink as the final component: in the tree, out of it, dangling,
    // looping, `..` inside the tree, magic links of /proc.
    for link in [
        "link_final",
        "link_parent",
        "link_chain",
        "out_file",
        "out_rel",
        "out_dir",
        "out_rel_dir",
        "dangling",
        "loop_a",
        "self_loop",
        "dir/up",
        "dir/up2",
        "dir/sub/deep_out",
        "proc_root",
        "proc_cwd",
        "proc_self",
        "proc_exe",
        "etc_link",
    ] {
        cases.push(final_link(link));
    }
    // A symlink as a parent component: refused by every tool.
    for path in [
        "link_parent/inner.txt",
        "link_parent/sub",
        "link_chain/inner.txt",
        "out_dir/secret.txt",
        "out_rel_dir/secret.txt",
        "dangling/x",
        "loop_a/x",
        "self_loop/x",
        "dir/up/a.txt",
        "dir/up/dir/up/a.txt",
        "dir/up2/outside/secret.txt",
        "dir/sub/deep_out/secret.txt",
        "proc_root/etc/passwd",
        "proc_cwd/Cargo.toml",
        "proc_self/root/etc/passwd",
        "proc_self/cwd",
        "etc_link/passwd",
    ] {
        cases.push(refused(path, SYMLINK));
    }
    cases.extend([
        // Hidden names (workdir `w` refuses them; hidden wins over deny).
        refused(".hidden.txt", HIDDEN),
        refused("./.hidden.txt", HIDDEN),
        refused(".git/config", HIDDEN),
        refused("dir/.secret", HIDDEN),
        refused(".env", HIDDEN),
        refused(".ssh/id_rsa", HIDDEN),
        refused("...", HIDDEN),
        // Reserved names, whatever the rest of the policy says.
        refused(".serverfs-tmp-1234", RESERVED),
        refused(".serverfs-disabled", RESERVED),
        refused("dir/.serverfs-disabled", RESERVED),
        refused("dir/.serverfs-tmp-x/y", RESERVED),
        // The default credential rules, on any component.
        refused("prod.env", DENIED),
        refused("server.pem", DENIED),
        refused("tls/server.key", DENIED),
        refused("id_rsa", DENIED),
        refused("id_dsa", DENIED),
        refused("id_ecdsa", DENIED),
        refused("keys/id_ed25519", DENIED),
        refused("backup.pem/notes.txt", DENIED),
        // Close to a rule but allowed.
        fine_file("id_rsa.pub"),
        fine_file("environment"),
        fine_file("key.txt"),
        // Unicode and odd names that are fine.
        fine_file("unicode/héllo wörld.txt"),
        fine_file("日本語.txt"),
        fine_file("emoji-🦀.txt"),
        fine_file("name with spaces .txt"),
        fine_file("semi;colon&$(x)|pipe.txt"),
        fine_file("a%2fb"),
        fine_file("-rf"),
        fine_file("\u{202E}rtl.txt"),
        fine_file("new\nline.txt"),
        fine_file("a..b"),
        fine_file("ends-with-dot."),
        fine_file("quote'\"s.txt"),
        fine_file("CON"),
        fine_file("dir/~backup"),
        case("unicode", Code(NOT_FILE), Kind("directory"), Listed),
        // Workdir `h`: hidden names allowed, so the credential rules and the
        // extra globs decide.
        refused(".ssh", DENIED).on(H),
        refused(".ssh/id_rsa", DENIED).on(H),
        refused(".aws/credentials", DENIED).on(H),
        refused(".gnupg/pubring.kbx", DENIED).on(H),
        refused(".kube/config", DENIED).on(H),
        refused(".env", DENIED).on(H),
        refused(".env.local", DENIED).on(H),
        refused("app.log", DENIED).on(H),
        refused("logs/today.log", DENIED).on(H),
        refused("private", DENIED).on(H),
        refused("private/notes.txt", DENIED).on(H),
        refused("docs/private/x", DENIED).on(H),
        refused(".serverfs-tmp-x", RESERVED).on(H),
        fine_file(".hidden.txt").on(H),
        fine_file("APP.LOG").on(H),
        fine_file("logs/readme.txt").on(H),
        case("logs", Code(NOT_FILE), Kind("directory"), Listed).on(H),
        final_link(".hidden_link").on(H),
        refused(".config/out/secret.txt", SYMLINK).on(H),
        final_link(".config/out").on(H),
    ]);
    cases
}

/// Builds workdir `w`; returns the bound socket, to keep alive.
fn build_w(w: &TempWorkdir) -> UnixListener {
    let outside = w.outside();
    w.file("a.txt", "hello\n")
        .file("dir/inner.txt", "inner\n")
        .dir("dir/sub");
    for name in [
        "id_rsa.pub",
        "environment",
        "key.txt",
        "unicode/héllo wörld.txt",
        "日本語.txt",
        "emoji-🦀.txt",
        "name with spaces .txt",
        "semi;colon&$(x)|pipe.txt",
        "a%2fb",
        "-rf",
        "\u{202E}rtl.txt",
        "new\nline.txt",
        "a..b",
        "ends-with-dot.",
        "quote'\"s.txt",
        "CON",
        "dir/~backup",
    ] {
        w.file(name, FINE);
    }
    for name in [
        ".hidden.txt",
        ".git/config",
        "dir/.secret",
        ".env",
        ".ssh/id_rsa",
        ".serverfs-tmp-1234",
        ".serverfs-disabled",
        "dir/.serverfs-disabled",
        "dir/.serverfs-tmp-x/y",
        "prod.env",
        "server.pem",
        "tls/server.key",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "keys/id_ed25519",
        "backup.pem/notes.txt",
    ] {
        w.file(name, REFUSED_CONTENT);
    }
    w.symlink("link_final", "a.txt")
        .symlink("link_parent", "dir")
        .symlink("link_chain", "link_parent")
        .symlink("out_file", outside.join("secret.txt"))
        .symlink("out_rel", "../outside/secret.txt")
        .symlink("out_dir", &outside)
        .symlink("out_rel_dir", "../outside")
        .symlink("dangling", "does-not-exist")
        .symlink("loop_a", "loop_b")
        .symlink("loop_b", "loop_a")
        .symlink("self_loop", "self_loop")
        .symlink("dir/up", "..")
        .symlink("dir/up2", "../..")
        .symlink("dir/sub/deep_out", "../../../outside")
        .symlink("proc_root", "/proc/self/root")
        .symlink("proc_cwd", "/proc/self/cwd")
        .symlink("proc_self", "/proc/self")
        .symlink("proc_exe", "/proc/self/exe")
        .symlink("etc_link", "/etc")
        .fifo("fifo");
    w.socket("sock")
}

/// Builds workdir `h`.
fn build_h(h: &TempWorkdir) {
    for name in [
        ".ssh/id_rsa",
        ".aws/credentials",
        ".gnupg/pubring.kbx",
        ".kube/config",
        ".env",
        ".env.local",
        "app.log",
        "logs/today.log",
        "private/notes.txt",
        "docs/private/x",
        ".serverfs-tmp-x",
    ] {
        h.file(name, REFUSED_CONTENT);
    }
    h.file(".hidden.txt", FINE)
        .file("APP.LOG", FINE)
        .file("logs/readme.txt", FINE)
        .dir(".config")
        .symlink(".hidden_link", "../outside/secret.txt")
        .symlink(".config/out", h.outside());
}

/// Writes the configuration of both workdirs beside `w`'s root.
fn write_config(w: &TempWorkdir, h: &TempWorkdir) -> String {
    let config = base(w).join("serverfs.toml");
    let text = format!(
        "[[workdirs]]\n\
         alias = \"{W}\"\n\
         path = {}\n\
         \n\
         [[workdirs]]\n\
         alias = \"{H}\"\n\
         path = {}\n\
         allow_hidden = true\n\
         deny = [\"*.log\", \"private\"]\n",
        toml_string(&w.root()),
        toml_string(&h.root()),
    );
    std::fs::write(&config, text).unwrap();
    config.display().to_string()
}

/// A TOML basic string holding `path`.
fn toml_string(path: &Path) -> String {
    let text = path.to_str().expect("UTF-8 temp path");
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The temporary directory holding a fixture's root and outside directory.
fn base(w: &TempWorkdir) -> std::path::PathBuf {
    w.root().parent().unwrap().to_path_buf()
}

/// Strings that must never appear in an answer, each with its meaning.
fn forbidden(w: &TempWorkdir, h: &TempWorkdir) -> Vec<(&'static str, String)> {
    let mut list = vec![
        ("the outside secret", OUTSIDE_SECRET.to_owned()),
        ("content of a refused file", REFUSED_CONTENT.to_owned()),
        ("the host path of w's root", w.root().display().to_string()),
        (
            "the host path of w's outside dir",
            w.outside().display().to_string(),
        ),
        ("the host path of h's root", h.root().display().to_string()),
        (
            "the host path of h's outside dir",
            h.outside().display().to_string(),
        ),
        (
            "the host path of the fixtures",
            base(w).display().to_string(),
        ),
        (
            "the host path of the fixtures",
            base(h).display().to_string(),
        ),
        (
            "the server's working directory",
            std::env::current_dir().unwrap().display().to_string(),
        ),
    ];
    // Only an escape through /proc/self/root or /etc could read this.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    if let Some(first) = passwd.lines().next().filter(|l| l.len() > 8) {
        list.push(("a line of /etc/passwd", first.to_owned()));
    }
    list
}

/// The first forbidden string found in `result`, if any.
fn leak(result: &CallToolResult, forbidden: &[(&'static str, String)]) -> Option<String> {
    let wire = serde_json::to_string(result).unwrap();
    forbidden
        .iter()
        .find(|(_, needle)| wire.contains(needle.as_str()))
        .map(|(what, _)| format!("LEAK of {what}: {wire}"))
}

/// Checks one answer against its expectation.
fn check(
    server: &Server,
    tool: &str,
    case: &Case,
    want: Want,
    result: &CallToolResult,
    forbidden: &[(&'static str, String)],
) -> Result<(), String> {
    if let Some(leak) = leak(result, forbidden) {
        return Err(leak);
    }
    let structured = result
        .structured_content
        .clone()
        .ok_or_else(|| format!("no structured content: {result:?}"))?;
    let failed = result.is_error == Some(true);
    let got_error = || {
        format!(
            "{}: {}",
            structured["error"]["code"].as_str().unwrap_or("?"),
            structured["error"]["message"].as_str().unwrap_or("?")
        )
    };
    if let Want::Code(code) = want {
        if !failed {
            return Err(format!("expected {code}, got success: {structured}"));
        }
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        if text != got_error() {
            return Err(format!("text block {text:?} is not `CODE: message`"));
        }
        if structured["error"]["code"] != code {
            return Err(format!("expected {code}, got {}", got_error()));
        }
        return Ok(());
    }
    if failed {
        return Err(format!("expected success ({want:?}), got {}", got_error()));
    }
    server.assert_matches_output_schema(tool, &structured);
    let normalized = case.normalized.unwrap_or(case.path.as_str());
    if structured["path"] != normalized {
        return Err(format!(
            "echoed path {} instead of {normalized:?}",
            structured["path"]
        ));
    }
    match want {
        Want::Text(content) => {
            if structured["content"] != content || structured["has_more"] != false {
                return Err(format!(
                    "expected the whole content {content:?}, got {structured}"
                ));
            }
        }
        Want::Kind(kind) => {
            if structured["type"] != kind {
                return Err(format!("expected type {kind}, got {structured}"));
            }
        }
        Want::Listed => {
            if !structured["entries"].is_array() {
                return Err(format!("no entries: {structured}"));
            }
        }
        Want::Code(_) | Want::Skip => {}
    }
    Ok(())
}

/// `(name, type)` of every entry of a listing.
async fn listing(server: &Server, workdir: &str, path: &str) -> Vec<(String, String)> {
    let result = server
        .ok(
            LIST,
            json!({"workdir": workdir, "path": path, "limit": 500}),
        )
        .await;
    assert_eq!(result["has_more"], false);
    result["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn sorted(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = entries
        .iter()
        .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
        .collect();
    entries.sort();
    entries
}

/// Runs the whole table over one server started with `env`.
async fn run_table(env: &[(&str, &str)]) {
    let w = TempWorkdir::new();
    let h = TempWorkdir::new();
    let _socket = build_w(&w);
    build_h(&h);
    let config = write_config(&w, &h);
    let server = Server::start(&["--config", &config], env).await;
    let forbidden = forbidden(&w, &h);

    let cases = table();
    assert!(
        cases.len() >= 60,
        "the table shrank to {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    let mut calls = 0;
    for case in &cases {
        for (tool, want) in [(READ, case.read), (STAT, case.stat), (LIST, case.list)] {
            if let Want::Skip = want {
                continue;
            }
            let args = json!({"workdir": case.workdir, "path": case.path});
            let result = server.call(tool, args).await;
            calls += 1;
            if let Err(why) = check(&server, tool, case, want, &result, &forbidden) {
                failures.push(format!("{tool} {}:{:?}: {why}", case.workdir, case.path));
            }
        }
    }

    // Hostile arguments beside the path: unknown or hostile aliases (the
    // alias is checked first), wrong types, unknown arguments.
    let arguments = [
        (
            READ,
            json!({"workdir": "nope", "path": "a.txt"}),
            "WORKDIR_NOT_FOUND",
        ),
        (
            READ,
            json!({"workdir": "nope", "path": ".."}),
            "WORKDIR_NOT_FOUND",
        ),
        (
            READ,
            json!({"workdir": "../w", "path": "a.txt"}),
            "WORKDIR_NOT_FOUND",
        ),
        (
            READ,
            json!({"workdir": "w\0", "path": "a.txt"}),
            "WORKDIR_NOT_FOUND",
        ),
        (
            STAT,
            json!({"workdir": "", "path": "a.txt"}),
            "WORKDIR_NOT_FOUND",
        ),
        (LIST, json!({"workdir": "nope"}), "WORKDIR_NOT_FOUND"),
        (READ, json!({"workdir": "w", "path": 5}), "INVALID_ARGUMENT"),
        (
            READ,
            json!({"workdir": "w", "path": ["a.txt"]}),
            "INVALID_ARGUMENT",
        ),
        (
            READ,
            json!({"workdir": "w", "path": null}),
            "INVALID_ARGUMENT",
        ),
        (READ, json!({"workdir": "w"}), "INVALID_ARGUMENT"),
        (
            READ,
            json!({"workdir": "w", "path": "a.txt", "follow_symlinks": true}),
            "INVALID_ARGUMENT",
        ),
        (
            READ,
            json!({"workdir": "w", "path": "a.txt", "start_line": -1}),
            "INVALID_ARGUMENT",
        ),
        (
            STAT,
            json!({"workdir": "w", "path": "link_final", "follow": true}),
            "INVALID_ARGUMENT",
        ),
        (
            LIST,
            json!({"workdir": "w", "path": {"raw": "/"}}),
            "INVALID_ARGUMENT",
        ),
    ];
    for (tool, args, code) in arguments {
        let result = server.call(tool, args.clone()).await;
        calls += 1;
        let row = Case {
            workdir: W,
            path: args.to_string(),
            normalized: None,
            read: Want::Skip,
            stat: Want::Skip,
            list: Want::Skip,
        };
        if let Err(why) = check(&server, tool, &row, Want::Code(code), &result, &forbidden) {
            failures.push(format!("{tool} {args}: {why}"));
        }
    }

    // A FIFO is never opened, so reading one cannot block: bound the call
    // well below the harness timeout and fail with a clear message.
    let fifo = tokio::time::timeout(
        Duration::from_secs(10),
        server.call(READ, json!({"workdir": W, "path": "fifo"})),
    )
    .await
    .expect("read_text_file on a FIFO blocked");
    assert_eq!(fifo.structured_content.unwrap()["error"]["code"], SPECIAL);

    eprintln!("hostile paths: {} cases, {calls} calls", cases.len());
    assert!(
        failures.is_empty(),
        "{} of {calls} calls answered wrongly:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Listings hide hidden, denied and reserved names, and show symlinks and
    // special files as such without following them.
    let mut root = vec![
        ("a.txt", "file"),
        ("dir", "directory"),
        ("unicode", "directory"),
        ("tls", "directory"),
        ("keys", "directory"),
        ("fifo", "other"),
        ("sock", "other"),
    ];
    for name in [
        "id_rsa.pub",
        "environment",
        "key.txt",
        "日本語.txt",
        "emoji-🦀.txt",
        "name with spaces .txt",
        "semi;colon&$(x)|pipe.txt",
        "a%2fb",
        "-rf",
        "\u{202E}rtl.txt",
        "new\nline.txt",
        "a..b",
        "ends-with-dot.",
        "quote'\"s.txt",
        "CON",
    ] {
        root.push((name, "file"));
    }
    for name in [
        "link_final",
        "link_parent",
        "link_chain",
        "out_file",
        "out_rel",
        "out_dir",
        "out_rel_dir",
        "dangling",
        "loop_a",
        "loop_b",
        "self_loop",
        "proc_root",
        "proc_cwd",
        "proc_self",
        "proc_exe",
        "etc_link",
    ] {
        root.push((name, "symlink"));
    }
    assert_eq!(listing(&server, W, ".").await, sorted(&root));
    assert_eq!(
        listing(&server, W, "dir").await,
        sorted(&[
            ("inner.txt", "file"),
            ("sub", "directory"),
            ("up", "symlink"),
            ("up2", "symlink"),
            ("~backup", "file"),
        ])
    );
    assert_eq!(listing(&server, W, "tls").await, sorted(&[]));
    assert_eq!(
        listing(&server, H, ".").await,
        sorted(&[
            (".config", "directory"),
            (".hidden.txt", "file"),
            (".hidden_link", "symlink"),
            ("APP.LOG", "file"),
            ("docs", "directory"),
            ("logs", "directory"),
        ])
    );
    assert_eq!(
        listing(&server, H, "logs").await,
        sorted(&[("readme.txt", "file")])
    );
    assert_eq!(listing(&server, H, "docs").await, sorted(&[]));

    // Nothing forbidden in the server's own log lines either.
    let log = server.shutdown().await.join("\n");
    for (what, needle) in &forbidden {
        // The fixtures' base holds the config file, whose path an operator
        // log may name; the roots and outside dirs beneath it may not appear.
        if what.contains("fixtures") || what.contains("working directory") {
            continue;
        }
        assert!(
            !log.contains(needle.as_str()),
            "the log contains {what}:\n{log}"
        );
    }
}

#[tokio::test]
async fn hostile_paths_with_the_default_resolver() {
    if !serverfs_fs::openat2_available() {
        eprintln!("note: openat2 is unavailable here, so the default resolver is the walker");
    }
    run_table(&[]).await;
}

#[tokio::test]
async fn hostile_paths_with_the_walk_resolver() {
    run_table(&[("SERVERFS_FS_RESOLVER", "walk")]).await;
}
