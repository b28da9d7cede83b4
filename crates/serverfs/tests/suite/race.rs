//! The `..`/symlink swap race: while one OS thread keeps replacing the
//! directory `swap/` with a symlink to the outside directory and back,
//! thousands of concurrent `read_text_file` calls for `swap/secret.txt`
//! through the real MCP client must each see the inside file or a refusal,
//! never the outside secret. A resolver that validated a path and then
//! opened it by name would lose this race (ARCHITECTURE.md §1, invariant 3).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use serde_json::json;
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};
use tokio::task::JoinSet;

use crate::common::Server;

const INSIDE: &str = "inside\n";
const READERS: usize = 8;
const READS_PER_READER: usize = 300;

/// A thread swapping `root/swap` between the real directory and a symlink
/// to `outside`. Dropping it (also while unwinding from a failed assertion)
/// stops and joins the thread, so it never outlives the test.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Swapper {
    fn start(root: PathBuf, outside: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = std::thread::spawn({
            let (stop, swaps) = (stop.clone(), swaps.clone());
            move || {
                let swap = root.join("swap");
                let parked = root.join("parked");
                // The flag is only checked between whole cycles, so the real
                // directory is always back in place when the thread ends.
                while !stop.load(Ordering::Relaxed) {
                    std::fs::rename(&swap, &parked).expect("park swap/");
                    std::os::unix::fs::symlink(&outside, &swap).expect("link swap -> outside");
                    std::thread::yield_now();
                    std::fs::remove_file(&swap).expect("remove the swap link");
                    std::fs::rename(&parked, &swap).expect("restore swap/");
                    swaps.fetch_add(1, Ordering::Relaxed);
                    std::thread::yield_now();
                }
            }
        });
        Swapper {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Stops the thread and returns how many full swap cycles it made;
    /// re-raises its panic, if it had one.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(Err(panic)) = self.thread.take().map(JoinHandle::join) {
            std::panic::resume_unwind(panic);
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the readers saw.
#[derive(Debug, Default)]
struct Tally {
    inside: u64,
    symlink: u64,
    not_found: u64,
    wrong: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swap_race_with_the_default_resolver() {
    swap_race(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swap_race_with_the_walk_resolver() {
    swap_race(&[("SERVERFS_FS_RESOLVER", "walk")]).await;
}

/// Swaps `swap/` for a symlink to the outside directory and back while
/// reading `swap/secret.txt` concurrently through a server started with `env`.
async fn swap_race(env: &[(&str, &str)]) {
    let t = TempWorkdir::new();
    t.file("swap/secret.txt", INSIDE);
    let spec = format!("w={}", t.root().display());
    let server = Arc::new(Server::start(&["--workdir", &spec], env).await);
    let forbidden = [
        OUTSIDE_SECRET.to_owned(),
        t.outside().display().to_string(),
        t.root().display().to_string(),
    ];

    let swapper = Swapper::start(t.root(), t.outside());
    let mut readers = JoinSet::new();
    for _ in 0..READERS {
        let server = server.clone();
        let forbidden = forbidden.clone();
        readers.spawn(async move {
            let mut tally = Tally::default();
            for _ in 0..READS_PER_READER {
                let result = server
                    .call(
                        "read_text_file",
                        json!({"workdir": "w", "path": "swap/secret.txt"}),
                    )
                    .await;
                let wire = serde_json::to_string(&result).unwrap();
                if forbidden.iter().any(|f| wire.contains(f.as_str())) {
                    tally.wrong.push(format!("LEAK: {wire}"));
                    continue;
                }
                let structured = result.structured_content.unwrap_or_default();
                if result.is_error != Some(true) {
                    if structured["content"] == INSIDE {
                        tally.inside += 1;
                    } else {
                        tally
                            .wrong
                            .push(format!("unexpected content: {structured}"));
                    }
                    continue;
                }
                match structured["error"]["code"].as_str() {
                    Some("SYMLINK_NOT_ALLOWED") => tally.symlink += 1,
                    Some("PATH_NOT_FOUND") => tally.not_found += 1,
                    _ => tally.wrong.push(format!("unexpected error: {structured}")),
                }
            }
            tally
        });
    }
    let mut total = Tally::default();
    while let Some(joined) = readers.join_next().await {
        let tally = joined.expect("a reader task panicked");
        total.inside += tally.inside;
        total.symlink += tally.symlink;
        total.not_found += tally.not_found;
        total.wrong.extend(tally.wrong);
    }
    let swaps = swapper.finish();

    eprintln!(
        "race: {swaps} swaps; {} inside, {} SYMLINK_NOT_ALLOWED, {} PATH_NOT_FOUND, {} wrong",
        total.inside,
        total.symlink,
        total.not_found,
        total.wrong.len()
    );
    assert!(
        total.wrong.is_empty(),
        "{} of {} reads answered wrongly, e.g.:\n{}",
        total.wrong.len(),
        READERS * READS_PER_READER,
        total
            .wrong
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let answered = total.inside + total.symlink + total.not_found;
    assert_eq!(answered, (READERS * READS_PER_READER) as u64);
    assert!(answered >= 2_000);
    assert!(swaps > 0, "the swapper never completed a swap");
    // Both sides of the race were actually hit.
    assert!(total.inside > 0, "no read ever saw the real directory");
    assert!(
        total.symlink + total.not_found > 0,
        "no read ever saw the directory swapped out"
    );

    // The swapper left the real directory in place: reads work again.
    let after = server
        .ok(
            "read_text_file",
            json!({"workdir": "w", "path": "swap/secret.txt"}),
        )
        .await;
    assert_eq!(after["content"], INSIDE);

    // The log lines carry workdir-relative paths only.
    for line in server.stderr() {
        assert!(
            !forbidden.iter().any(|f| line.contains(f.as_str())),
            "a log line leaks the secret or a host path: {line}"
        );
    }
}
