//! Hostile paths through every path-taking tool and the resource, under
//! both resolvers.
//!
//! The workdir sits beside `outside/`, whose files carry a marker; the
//! workdir holds symlinks out (relative, absolute, looping), a hard link to
//! the outside secret, a FIFO, hidden and credential files. A corpus of
//! fixed hostile paths plus generated joins of hostile fragments goes
//! through all eleven path-taking tools (writes included: the workdir is
//! read-write) and `resources/read`, once with `openat2` and once with the
//! `O_NOFOLLOW` walker. An **escape** is an answer carrying the marker, or
//! any change below `outside/` or beside the workdir; a **leak** is an
//! answer or log line carrying the temporary directory's host path.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use super::{Outcome, Rng, Setup, text, toml_string};
use crate::stdio::StdioServer;

/// What every outside file contains: seeing it in an answer is an escape.
const MARKER: &str = "SOAK-OUTSIDE-5b1e07";

/// Paths every run tries.
const FIXED: &[&str] = &[
    "..",
    "../outside/secret.txt",
    "../../../../../../etc/passwd",
    "/etc/passwd",
    "/",
    "~",
    "~root/.ssh",
    "link_out/secret.txt",
    "link_out",
    "link_secret",
    "link_abs/passwd",
    "link_loop/x",
    "dir/../../outside/secret.txt",
    "./../outside",
    "%2e%2e/outside/secret.txt",
    "..%2foutside",
    "..\\outside\\secret.txt",
    "dir\\..\\..\\outside",
    "a.txt\u{0}/../../outside/secret.txt",
    "\u{2025}/outside/secret.txt",
    "..\u{2215}outside",
    "hard",
    "fifo",
    ".env",
    ".ssh/id_rsa",
    "dir/.git/config",
    ".serverfs-tmp-1-x",
    "/proc/self/root/etc/passwd",
    "/proc/self/cwd",
    "dir/./.././../outside",
    "dir//..//..//outside",
];

/// Fragments the generated paths are joined from.
const FRAGMENTS: &[&str] = &[
    "..",
    ".",
    "",
    "~",
    "outside",
    "secret.txt",
    "link_out",
    "link_secret",
    "link_abs",
    "link_loop",
    "hard",
    "fifo",
    ".env",
    ".ssh",
    "dir",
    "a.txt",
    "%2e%2e",
    "..\\..",
    "\u{2025}",
    "ｏｕｔｓｉｄｅ",
    "proc",
    "self",
    "root",
    "etc",
    "passwd",
    "...",
    ". .",
    "\n",
];

/// Runs the corpus under both resolvers.
pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let corpus = corpus(setup.profile.pick(400, 4_000));
    let mut outcomes = Vec::new();
    for resolver in ["auto", "walk"] {
        outcomes.push(run_resolver(setup, &corpus, resolver)?);
    }
    Ok(outcomes)
}

/// The fixed paths plus `generated` joins of 1-5 fragments.
fn corpus(generated: usize) -> Vec<String> {
    let mut rng = Rng::new(0x5eed_0001);
    let mut paths: Vec<String> = FIXED.iter().map(|p| (*p).to_owned()).collect();
    for _ in 0..generated {
        let parts = 1 + rng.below(5);
        let joined: Vec<&str> = (0..parts)
            .map(|_| FRAGMENTS[rng.below(FRAGMENTS.len() as u64) as usize])
            .collect();
        let mut path = joined.join("/");
        match rng.below(4) {
            0 => path.insert(0, '/'),
            1 => path.insert_str(0, "./"),
            _ => {}
        }
        paths.push(path);
    }
    paths
}

/// The layout: `<tmp>/root` (the workdir), `<tmp>/outside`.
fn layout(tmp: &Path) -> Result<(), String> {
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let root = tmp.join("root");
    let outside = tmp.join("outside");
    for dir in [
        &root,
        &root.join("dir/.git"),
        &root.join(".ssh"),
        &outside.join("dir"),
    ] {
        std::fs::create_dir_all(dir).map_err(|e| io("mkdir", e))?;
    }
    let files = [
        (outside.join("secret.txt"), MARKER),
        (outside.join("dir/other.txt"), MARKER),
        (root.join("a.txt"), "fine\n"),
        (root.join("dir/b.txt"), "fine too\n"),
        (root.join("dir/.git/config"), MARKER),
        (root.join(".env"), MARKER),
        (root.join(".ssh/id_rsa"), MARKER),
    ];
    for (path, content) in files {
        std::fs::write(&path, content).map_err(|e| io("write", e))?;
    }
    let links = [
        ("../outside", "link_out"),
        ("../outside/secret.txt", "link_secret"),
        ("/etc", "link_abs"),
        ("link_loop", "link_loop"),
    ];
    for (target, name) in links {
        std::os::unix::fs::symlink(target, root.join(name)).map_err(|e| io("symlink", e))?;
    }
    std::fs::hard_link(outside.join("secret.txt"), root.join("hard")).map_err(|e| io("link", e))?;
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(|e| format!("mkfifo: {e}"))?;
    Ok(())
}

/// Every file and directory below `dir` with its content (directories: a
/// marker), for telling whether anything changed.
pub(super) fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut seen = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => {
                    seen.insert(name, b"<dir>".to_vec());
                    pending.push(path);
                }
                _ => {
                    seen.insert(name, std::fs::read(&path).unwrap_or_default());
                }
            }
        }
    }
    seen
}

/// What must stay as it is: `outside/` and the temporary directory's own
/// entries apart from the workdir.
fn untouchable(tmp: &Path) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let mut beside: Vec<String> = std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    beside.sort();
    (snapshot(&tmp.join("outside")), beside)
}

/// The calls made for one path.
fn calls(path: &str) -> Vec<(&'static str, Value)> {
    let bogus = "v1:0000000000000000";
    let w = |extra: Value| {
        let mut args = json!({"workdir": "w", "path": path});
        if let (Some(args), Value::Object(extra)) = (args.as_object_mut(), extra) {
            args.extend(extra);
        }
        args
    };
    vec![
        ("list_directory", w(json!({}))),
        ("stat_file", w(json!({}))),
        ("read_text_file", w(json!({}))),
        ("find_files", w(json!({"pattern": "*"}))),
        ("search_text", w(json!({"query": "SOAK-OUTSIDE"}))),
        ("download_binary_file", w(json!({}))),
        ("create_text_file", w(json!({"content": "created"}))),
        ("create_directory", w(json!({}))),
        (
            "upload_binary_file",
            w(json!({"data_base64": "dXBsb2FkZWQ="})),
        ),
        (
            "edit_text_file",
            w(json!({"expected_revision": bogus,
                     "edits": [{"old_text": "fine", "new_text": "FINE"}]})),
        ),
        ("delete_file", w(json!({"expected_revision": bogus}))),
        ("delete_directory", w(json!({"expected_revision": bogus}))),
    ]
}

fn run_resolver(setup: &Setup, corpus: &[String], resolver: &str) -> Result<Outcome, String> {
    let tmp = tempfile::Builder::new()
        .prefix("serverfs-soak-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    layout(tmp.path())?;
    let config = tmp.path().join("serverfs.toml");
    std::fs::write(
        &config,
        format!(
            "[[workdirs]]\nalias = \"w\"\npath = {}\nread_only = false\n\
             binary_transfer = true\nread_hardlinked_files = false\n",
            toml_string(&tmp.path().join("root"))?
        ),
    )
    .map_err(|e| format!("config: {e}"))?;
    let log = tmp.path().join("server.log");
    let log_file = std::fs::File::create(&log).map_err(|e| format!("log: {e}"))?;
    let before = untouchable(tmp.path());
    let mut server = StdioServer::spawn_with_stderr(
        text(&setup.serverfs)?,
        &[
            "serve".to_owned(),
            "--config".to_owned(),
            text(&config)?.to_owned(),
        ],
        &[("SERVERFS_FS_RESOLVER", resolver)],
        Stdio::from(log_file),
    )?;
    let host = text(tmp.path())?.to_owned();
    let (mut attempts, mut escapes, mut leaks, mut refused) = (0u64, 0u64, 0u64, 0u64);
    let mut judge = |answer: &Value| {
        let shown = answer.to_string();
        attempts += 1;
        escapes += u64::from(shown.contains(MARKER));
        leaks += u64::from(shown.contains(&host));
        refused += u64::from(answer["isError"] == json!(true) || answer.get("code").is_some());
    };
    for path in corpus {
        for (tool, arguments) in calls(path) {
            judge(&server.call_any(tool, arguments)?);
        }
        let uri = format!("serverfs://w/{}", percent_encode(path));
        judge(&server.request_any("resources/read", json!({"uri": uri}))?);
    }
    drop(server);
    let after = untouchable(tmp.path());
    let changed = u64::from(before != after);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let log_leaks = log_text.lines().filter(|line| line.contains(&host)).count() as u64;
    Ok(Outcome {
        check: if resolver == "auto" {
            "hostile paths (openat2)"
        } else {
            "hostile paths (walker)"
        },
        attempts,
        failures: vec![
            ("escapes", escapes + changed),
            ("host-path leaks", leaks + log_leaks),
        ],
        figures: format!(
            "{} paths × 13 calls; {refused} refused with a code",
            corpus.len()
        ),
    })
}

/// Percent-encodes every byte outside RFC 3986's unreserved set and `/`.
fn percent_encode(path: &str) -> String {
    path.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
