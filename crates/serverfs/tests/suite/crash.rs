//! Crash safety (ARCHITECTURE invariant 8, spec §6.3): a server killed with
//! SIGKILL at any moment of a binary overwrite leaves exactly the old or the
//! new file, never a mix or a prefix; the temporary file a kill abandons is
//! never listed, and the next start removes it (`temp_cleanup` event).
//!
//! Every version of the file is self-validating: version `v` is the stream
//! of 64-bit words `splitmix64(v << 32 | i)`, so any content is either
//! "complete version v" or provably corrupt (wrong size, unknown first
//! word, or a word of another version / of nothing at some offset).
//!
//! Each iteration starts a server (which must first clean up after the
//! previous kill), lets one task replace the file back to back with
//! revision-guarded `upload_binary_file` overwrites, and SIGKILLs the child
//! at a point chosen by a PRNG seeded per iteration. Most kills come after a
//! random delay; every third one is *targeted*: the test watches the
//! directory and kills as soon as a temporary file appears (plus a few
//! random milliseconds), which makes sure the run really exercises a kill
//! between temporary-file creation and the rename, whatever the machine's
//! speed.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{Peer, RunningService};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::common::{Server, TIMEOUT, binary};

/// Size of every version of the file (4 MiB: 5.6 MB of base64 per upload).
const SIZE: usize = 4 << 20;
/// Distinct payloads, precomputed and cycled: sequence number `n` is
/// written as version `n % VERSIONS`, enough to tell "old" (`n`) from
/// "new" (`n + 1`) and both from anything else.
const VERSIONS: u64 = 8;
/// Iterations always run.
const MIN_ITERATIONS: u64 = 20;
/// Extra iterations allowed while no kill has yet hit the write window.
const MAX_ITERATIONS: u64 = 40;
/// Iterations stop being added after this much time.
const TIME_BUDGET: Duration = Duration::from_secs(40);
/// How long the next server may take to remove the debris.
const CLEANUP_WAIT: Duration = Duration::from_secs(5);
/// The file under test.
const FILE: &str = "big.bin";
/// Reserved prefix of ServerFS temporary files.
const TEMP_PREFIX: &str = ".serverfs-tmp-";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_binary_overwrite_leaves_old_or_new_and_start_up_removes_debris() {
    let t = TempWorkdir::new();
    let root = t.root();
    // A visible dotfile: list_directory shows hidden names here, so hiding
    // the temporary files is the reserved-name rule, not the hidden rule.
    t.file(".marker", "m");
    std::fs::write(t.path(FILE), content(0)).unwrap();
    let payloads: Arc<Vec<String>> =
        Arc::new((0..VERSIONS).map(|v| STANDARD.encode(content(v))).collect());

    // Sequence number of the version known to be on disk.
    let mut on_disk: u64 = 0;
    let mut server = KillableServer::start(&root).await;
    server.await_cleanup(&root, 0).await;

    // Warm-up: one acknowledged replacement, timed to scale the delays.
    let revision = server.stat_revision().await;
    let started = Instant::now();
    let result = server.upload(&payloads, 1, &revision).await;
    let upload_time = started.elapsed();
    assert_eq!(result["replaced"], true, "{result}");
    on_disk += 1;
    assert_eq!(classify(&std::fs::read(t.path(FILE)).unwrap()), Ok(1));
    // Random kills spread over 0 … window: at least ~150 ms, and at least
    // two uploads long so that some land after a completed replacement (in
    // a debug build an upload takes ~0.5 s, nearly all of it JSON and
    // base64 work before the temporary file exists; that file lives only
    // ~1–3 ms, which is why the targeted kills exist).
    // Capped at 2 s so that a loaded machine does not blow the time budget.
    let window = Duration::from_millis(150)
        .max(upload_time * 2)
        .min(Duration::from_secs(2));
    eprintln!("crash: one {SIZE}-byte upload takes {upload_time:?}; kill window {window:?}");

    let mut stats = Stats::default();
    let budget = Instant::now();
    let mut iteration = 0u64;
    while iteration < MIN_ITERATIONS
        || (iteration < MAX_ITERATIONS && stats.mid_write == 0 && budget.elapsed() < TIME_BUDGET)
    {
        let mut rng = splitmix64(0x5eed_c0de ^ iteration);
        let mut random = || {
            rng = splitmix64(rng);
            rng
        };
        let revision = server.stat_revision().await;
        let state = Arc::new(Mutex::new(WriterState {
            acknowledged: on_disk,
            completed: 0,
            tool_error: None,
        }));
        let writer = tokio::spawn(write_loop(
            server.peer(),
            state.clone(),
            payloads.clone(),
            revision,
        ));
        let targeted = iteration % 3 == 2;
        let kill_point = if targeted {
            // Wait for a temporary file to appear, then a little more (up
            // to 2 ms; the file lives only a few ms): the kill lands inside
            // the write, the fsync, the metadata copy or just after the
            // rename.
            let appeared = wait_for(Duration::from_secs(10), Duration::from_micros(200), || {
                !temp_files(&root).is_empty()
            })
            .await;
            assert!(appeared, "no temporary file appeared within 10 s");
            let extra = Duration::from_micros(random() % 2_000);
            tokio::time::sleep(extra).await;
            format!("temp seen + {extra:?}")
        } else {
            let delay = Duration::from_micros(random() % window.as_micros() as u64);
            tokio::time::sleep(delay).await;
            format!("{delay:?}")
        };
        let pid = server.kill().await;
        writer.abort();
        let _ = writer.await;
        let writer_state = state.lock().unwrap().clone();
        assert_eq!(
            writer_state.tool_error, None,
            "an overwrite failed before the kill"
        );
        stats.completed += writer_state.completed;
        let acknowledged = writer_state.acknowledged;

        // Right after the kill: exactly one complete version, old or new.
        let debris = temp_files(&root);
        for name in &debris {
            assert!(
                name.starts_with(&format!("{TEMP_PREFIX}{pid}-")),
                "debris {name} was not created by the killed pid {pid}"
            );
        }
        let bytes = std::fs::read(t.path(FILE)).unwrap();
        let found = classify(&bytes).unwrap_or_else(|why| {
            panic!(
                "iteration {iteration}: after SIGKILL ({kill_point}) {FILE} is corrupt: {why} \
                 (acknowledged sequence {acknowledged}, debris {debris:?})"
            )
        });
        let old = acknowledged % VERSIONS;
        let new = (acknowledged + 1) % VERSIONS;
        let outcome = if found == new {
            // Renamed but the reply never arrived (or was not processed).
            on_disk = acknowledged + 1;
            stats.after_rename += 1;
            "published, unacknowledged"
        } else {
            assert_eq!(
                found, old,
                "iteration {iteration}: {FILE} holds version {found}, neither the old \
                 ({old}) nor the new ({new})"
            );
            on_disk = acknowledged;
            if debris.is_empty() {
                stats.before_temp += 1;
                "old, no temp yet"
            } else {
                stats.mid_write += 1;
                "old, killed mid-write"
            }
        };
        // One writer, one upload in flight: at most one temporary file,
        // and a temporary file means the rename had not happened.
        assert!(debris.len() <= 1, "several temporary files: {debris:?}");
        assert!(
            debris.is_empty() || found == old,
            "a temporary file survived its own rename: {debris:?}"
        );
        if !debris.is_empty() {
            stats.debris_iterations += 1;
            stats.debris_files += debris.len() as u64;
        }
        let debris_sizes: Vec<u64> = debris
            .iter()
            .map(|n| std::fs::metadata(root.join(n)).map_or(0, |m| m.len()))
            .collect();
        eprintln!(
            "crash: iteration {iteration:2} kill at {kill_point:>24}: {outcome}; \
             {} completed; debris sizes {debris_sizes:?}",
            writer_state.completed,
        );

        // The next server hides the debris and removes it at start-up.
        server = KillableServer::start(&root).await;
        server.assert_listing_clean().await;
        server.await_cleanup(&root, debris.len() as u64).await;
        server.assert_listing_clean().await;
        let stat = server
            .ok("stat_file", json!({"workdir": "w", "path": FILE}))
            .await;
        assert_eq!(stat["size"], SIZE as u64);
        iteration += 1;
    }
    server.shutdown().await;

    eprintln!(
        "crash: {iteration} iterations in {:?}: {} replacements completed during the \
         kill loops; kills mid-write (debris) {}, after the rename {}, before any temp \
         file {}; {} debris file(s) in {} iteration(s), all removed at the next start",
        budget.elapsed(),
        stats.completed,
        stats.mid_write,
        stats.after_rename,
        stats.before_temp,
        stats.debris_files,
        stats.debris_iterations,
    );
    assert!(
        stats.completed > 0,
        "no replacement completed inside the kill loops: the test did no real work"
    );
    assert!(
        stats.mid_write > 0,
        "no kill landed between temporary-file creation and the rename"
    );
}

/// Debris is the server's own, so a workdir configured read-only (as after
/// a crash of a read-write one, when the operator then restarts it
/// read-only) loses it at the next start too; clients still cannot change
/// anything, and nothing else is touched: not a live writer's temporary
/// file, not a directory, symlink or FIFO with the reserved prefix, not a
/// directory's content behind that prefix, not what a symlink points to.
#[tokio::test]
async fn start_up_removes_debris_from_a_read_only_workdir_and_nothing_else() {
    let t = TempWorkdir::new();
    t.file("a.txt", "a\n")
        .file("sub/b.txt", "b\n")
        .file("sub/deeper/c.bin", [0u8, 1, 2])
        .file(".hidden/d.txt", "d\n");
    // Abandoned, as a SIGKILL between creation and rename leaves them: the
    // writer is gone, so nobody holds the lock.
    let debris = [
        ".serverfs-tmp-4194305-a1",
        "sub/.serverfs-tmp-4194305-b2",
        "sub/deeper/.serverfs-tmp-4194306-c3",
        ".hidden/.serverfs-tmp-4194307-d4",
    ];
    for name in debris {
        t.file(name, "half-written");
    }
    let live = "sub/.serverfs-tmp-4194308-live";
    t.file(live, "in flight")
        .file(".serverfs-tmp-dir/inside.txt", "kept\n")
        .symlink(".serverfs-tmp-link", t.outside().join("secret.txt"))
        .fifo("sub/.serverfs-tmp-fifo")
        .file("serverfs-tmp-1", "no dot")
        .file(".serverfs-tmpx", "no dash");
    let writer = std::fs::File::open(t.path(live)).unwrap();
    rustix::fs::flock(
        &writer,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .unwrap();
    let mut expected = tree_snapshot(&t.root());
    for name in debris {
        assert!(expected.remove(name).is_some(), "{name}");
    }
    let outside = tree_snapshot(&t.outside());

    let server = Server::with_workdir("w", &t.root()).await;
    let event = || {
        server
            .stderr()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "temp_cleanup" && e["workdir"] == "w")
    };
    assert!(
        wait_for(CLEANUP_WAIT, Duration::from_millis(10), || event()
            .is_some())
        .await,
        "no temp_cleanup event for the read-only workdir: {:#?}",
        server.stderr()
    );
    let event = event().unwrap();
    assert_eq!(
        (
            &event["removed"],
            &event["truncated"],
            &event["read_only_filesystem"]
        ),
        (&json!(debris.len()), &json!(false), &json!(false)),
        "{event}"
    );
    assert_eq!(tree_snapshot(&t.root()), expected);
    assert_eq!(tree_snapshot(&t.outside()), outside);
    let refused = server
        .err(
            "create_text_file",
            json!({"workdir": "w", "path": "new.txt", "content": "x"}),
        )
        .await;
    assert_eq!(refused, "WORKDIR_READ_ONLY");
    drop(writer);
}

/// Every entry beneath `root` by relative path: a file's bytes and
/// modification time, a symlink's target, or the kind of anything else.
fn tree_snapshot(root: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut entries = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let kind = meta.file_type();
            let description = if kind.is_symlink() {
                format!(
                    "symlink -> {}",
                    std::fs::read_link(&path).unwrap().display()
                )
            } else if kind.is_dir() {
                pending.push(path.clone());
                "directory".to_owned()
            } else if kind.is_fifo() {
                "fifo".to_owned()
            } else {
                format!(
                    "file {:?} mtime {}.{}",
                    std::fs::read(&path).unwrap(),
                    meta.mtime(),
                    meta.mtime_nsec()
                )
            };
            entries.insert(rel, description);
        }
    }
    entries
}

#[derive(Default)]
struct Stats {
    /// Replacements acknowledged inside the kill loops.
    completed: u64,
    /// Kills that left a temporary file (between its creation and the rename).
    mid_write: u64,
    /// Kills after the rename but before the acknowledgement arrived.
    after_rename: u64,
    /// Kills before any temporary file existed (request in transit,
    /// decoding, between calls).
    before_temp: u64,
    /// Iterations that left debris, and how many files.
    debris_iterations: u64,
    debris_files: u64,
}

#[derive(Clone)]
struct WriterState {
    /// Sequence number of the last acknowledged version.
    acknowledged: u64,
    /// Replacements acknowledged by this writer.
    completed: u64,
    /// A tool-level failure (there must be none).
    tool_error: Option<String>,
}

/// Replaces the file back to back until the transport dies (the kill).
async fn write_loop(
    peer: Peer<RoleClient>,
    state: Arc<Mutex<WriterState>>,
    payloads: Arc<Vec<String>>,
    mut revision: String,
) {
    loop {
        let next = state.lock().unwrap().acknowledged + 1;
        let request = upload_request(&payloads, next, &revision);
        let Ok(result) = peer.call_tool(request).await else {
            return; // the server is gone
        };
        if result.is_error == Some(true) {
            state.lock().unwrap().tool_error = Some(format!("{:?}", result.content));
            return;
        }
        let structured = result.structured_content.unwrap_or_default();
        revision = structured["revision"].as_str().unwrap().to_owned();
        let mut state = state.lock().unwrap();
        state.acknowledged = next;
        state.completed += 1;
    }
}

fn upload_request(payloads: &[String], sequence: u64, revision: &str) -> CallToolRequestParams {
    let args = json!({
        "workdir": "w",
        "path": FILE,
        "data_base64": payloads[(sequence % VERSIONS) as usize],
        "overwrite": true,
        "expected_revision": revision,
    });
    CallToolRequestParams::new("upload_binary_file").with_arguments(into_object(args))
}

fn into_object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// A `serverfs serve` child spawned by the test itself, so that its pid is
/// known and it can be SIGKILLed and reaped (a zombie would still count as
/// alive for the next server's cleanup). `kill_on_drop` covers panics.
struct KillableServer {
    child: Child,
    client: RunningService<RoleClient, ()>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl KillableServer {
    async fn start(root: &Path) -> KillableServer {
        let mut command = tokio::process::Command::new(binary());
        command
            .arg("serve")
            .arg("--workdir")
            .arg(format!("w={}:rw", root.display()))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SERVERFS_BINARY_TRANSFER_ENABLED", "true")
            .env(
                "SERVERFS_MAX_BINARY_TRANSFER_BYTES",
                (16u64 << 20).to_string(),
            )
            .env("SERVERFS_ALLOW_HIDDEN", "true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn serverfs");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn({
            let lines = lines.clone();
            async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if std::env::var_os("SERVERFS_TEST_SHOW_STDERR").is_some() {
                        eprintln!("[serverfs] {line}");
                    }
                    lines.lock().unwrap().push(line);
                }
            }
        });
        let client = tokio::time::timeout(TIMEOUT, ().serve((stdout, stdin)))
            .await
            .expect("initialize timed out")
            .expect("initialize failed");
        KillableServer {
            child,
            client,
            stderr: lines,
        }
    }

    fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(into_object(args));
        let result = tokio::time::timeout(TIMEOUT, self.client.call_tool(request))
            .await
            .unwrap_or_else(|_| panic!("{tool} timed out"))
            .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"));
        assert_ne!(
            result.is_error,
            Some(true),
            "{tool} failed: {:?}",
            result.content
        );
        result.structured_content.expect("structured content")
    }

    async fn stat_revision(&self) -> String {
        let stat = self
            .ok("stat_file", json!({"workdir": "w", "path": FILE}))
            .await;
        stat["revision"].as_str().unwrap().to_owned()
    }

    async fn upload(&self, payloads: &[String], sequence: u64, revision: &str) -> Value {
        let request = upload_request(payloads, sequence, revision);
        let result = tokio::time::timeout(TIMEOUT, self.client.call_tool(request))
            .await
            .expect("upload timed out")
            .expect("upload failed at the protocol level");
        assert_ne!(result.is_error, Some(true), "{:?}", result.content);
        result.structured_content.expect("structured content")
    }

    /// list_directory never shows a temporary file (hidden names are
    /// allowed, so `.marker` must be there).
    async fn assert_listing_clean(&self) {
        let listing = self
            .ok(
                "list_directory",
                json!({"workdir": "w", "path": ".", "limit": 100}),
            )
            .await;
        let names: Vec<&str> = listing["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, [".marker", FILE], "{listing}");
    }

    /// Waits (bounded) for the start-up `temp_cleanup` event of workdir `w`
    /// and for the directory to hold no temporary file; checks the count.
    async fn await_cleanup(&self, root: &Path, expected_removed: u64) {
        let event = || {
            self.stderr
                .lock()
                .unwrap()
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|e| e["event"] == "temp_cleanup" && e["workdir"] == "w")
        };
        let done = wait_for(CLEANUP_WAIT, Duration::from_millis(10), || {
            event().is_some() && temp_files(root).is_empty()
        })
        .await;
        let remaining = temp_files(root);
        assert!(
            done,
            "within {CLEANUP_WAIT:?}: cleanup event {:?}, temporary files left {remaining:?}; \
             stderr {:#?}",
            event(),
            self.stderr.lock().unwrap()
        );
        let event = event().unwrap();
        assert_eq!(event["removed"], expected_removed, "{event}");
        assert_eq!(event["truncated"], false, "{event}");
    }

    /// SIGKILLs the child and reaps it; returns its pid.
    async fn kill(mut self) -> u32 {
        let pid = self.child.id().expect("child still running");
        self.child.start_kill().expect("SIGKILL");
        let status = tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .expect("reaping timed out")
            .expect("wait");
        assert_eq!(
            status.signal(),
            Some(9),
            "the server exited on its own before the kill: {status:?}; stderr {:#?}",
            self.stderr.lock().unwrap()
        );
        pid
    }

    /// Closes the connection and waits for a clean exit.
    async fn shutdown(mut self) {
        let _ = tokio::time::timeout(TIMEOUT, self.client.cancel()).await;
        let status = tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .expect("exit timed out")
            .expect("wait");
        assert!(status.success(), "{status:?}");
    }
}

/// Polls `done` every `every` until it holds or `limit` passes.
async fn wait_for(limit: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(every).await;
    }
}

/// Names of ServerFS temporary files in `dir`.
fn temp_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(TEMP_PREFIX))
        .collect();
    names.sort();
    names
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Word `index` of version `version`.
fn word(version: u64, index: u64) -> u64 {
    splitmix64((version << 32) | index)
}

/// The full content of version `version`.
fn content(version: u64) -> Vec<u8> {
    (0..(SIZE / 8) as u64)
        .flat_map(|i| word(version, i).to_le_bytes())
        .collect()
}

/// `Ok(v)` when `bytes` is exactly version `v`; otherwise why not.
fn classify(bytes: &[u8]) -> Result<u64, String> {
    if bytes.len() != SIZE {
        return Err(format!("size {} instead of {SIZE}", bytes.len()));
    }
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let version = (0..VERSIONS)
        .find(|v| word(*v, 0) == words[0])
        .ok_or("the first word belongs to no version")?;
    match (0..words.len() as u64).find(|i| words[*i as usize] != word(version, *i)) {
        None => Ok(version),
        Some(i) => {
            let other = (0..VERSIONS).find(|v| word(*v, i) == words[i as usize]);
            Err(format!(
                "starts as version {version} but word {i} (byte {}) is {}",
                i * 8,
                match other {
                    Some(v) => format!("from version {v}"),
                    None => "from no version".to_owned(),
                }
            ))
        }
    }
}
