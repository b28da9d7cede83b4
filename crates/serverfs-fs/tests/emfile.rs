//! Descriptor pressure: `find_files` and `search_text` over a tree with far
//! more directories (and a deeper chain of them) than the process may hold
//! descriptors, under a lowered `RLIMIT_NOFILE`.
//!
//! A test binary of its own because the limit is process-wide: lowering it
//! inside the shared `all` binary would starve unrelated tests running in
//! parallel. The limit is lowered in-process with `setrlimit` (rustix is a
//! regular dependency of this crate, so its integration tests can use it);
//! no shell or `ulimit` wrapper is needed, and the soft limit is restored
//! when the test ends, even by a panic.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(unused_macros)]
mod harness;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use rustix::fs::{FileType, Mode, mknodat};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use serverfs_fs::{
    Control, FindLimits, NamePattern, PathPolicy, SearchLimits, SearchQuery, Workdir,
};
use serverfs_protocol::ErrorCode;
use serverfs_testkit::TempWorkdir;

/// The soft descriptor limit of the main part of the test.
const NOFILE: u64 = 256;
/// Top directories × sub-directories each × files each = 100,000 files in
/// 500 leaf directories, twice as many directories as descriptors allowed.
const TOPS: usize = 10;
const SUBS: usize = 50;
const FILES: usize = 200;
/// Files holding the needle, scattered among the others.
const TARGETS: usize = 37;
/// A chain of nested directories deeper than the descriptor limit.
const DEPTH: usize = 300;

/// Restores the soft descriptor limit when dropped.
struct LimitGuard(Rlimit);

impl LimitGuard {
    fn lower_to(soft: u64) -> LimitGuard {
        let original = getrlimit(Resource::Nofile);
        set_soft(&original, soft);
        LimitGuard(original)
    }
}

impl Drop for LimitGuard {
    fn drop(&mut self) {
        let _ = setrlimit(Resource::Nofile, self.0);
    }
}

fn set_soft(original: &Rlimit, soft: u64) {
    let soft = original.maximum.map_or(soft, |max| soft.min(max));
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(soft),
            maximum: original.maximum,
        },
    )
    .unwrap();
}

/// Open descriptor numbers of this process.
fn open_fds() -> BTreeSet<u64> {
    let listed: BTreeSet<u64> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    // Drop the descriptor `read_dir` itself used (now closed).
    listed
        .into_iter()
        .filter(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok())
        .collect()
}

/// The soft limit under which exactly `spare` descriptor numbers are free
/// (descriptors are allocated lowest-free-first, so the holes between the
/// open ones count).
fn limit_leaving(open: &BTreeSet<u64>, spare: usize) -> u64 {
    (0..).filter(|n| !open.contains(n)).nth(spare).unwrap()
}

/// A scratch directory for the big tree: on tmpfs (`/dev/shm`) when there
/// is one, because creating and deleting 100,000 files on a busy journaled
/// disk can take longer than everything else in this test together;
/// descriptor accounting is the same on any filesystem.
fn scratch() -> tempfile::TempDir {
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix("serverfs-emfile-");
        b
    };
    builder
        .tempdir_in("/dev/shm")
        .or_else(|_| builder.tempdir())
        .unwrap()
}

/// Builds the big tree under `root`; returns every file path and the
/// needle files, sorted.
fn build(root: &Path) -> (Vec<String>, Vec<String>) {
    let write = |rel: &str, content: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    let mut all = Vec::new();
    for top in 0..TOPS {
        for sub in 0..SUBS {
            let dir = format!("t{top}/s{sub:02}");
            std::fs::create_dir_all(root.join(&dir)).unwrap();
            // `mknodat` relative to the directory: one syscall per empty
            // file instead of open + close by full path.
            let dir_fd = std::fs::File::open(root.join(&dir)).unwrap();
            for f in 0..FILES {
                let name = format!("f{f:03}");
                mknodat(
                    &dir_fd,
                    name.as_str(),
                    FileType::RegularFile,
                    Mode::from_raw_mode(0o644),
                    0,
                )
                .unwrap();
                all.push(format!("{dir}/{name}"));
            }
        }
    }
    let mut targets = Vec::new();
    for i in 0..TARGETS {
        let path = format!("t{}/s{:02}/target-{i:02}.txt", i % TOPS, (i * 7) % SUBS);
        write(&path, &format!("needle {i}\n"));
        targets.push(path);
    }
    let deep = format!("deep/{}target-deep.txt", "d/".repeat(DEPTH));
    write(&deep, "needle deep\n");
    targets.push(deep);
    all.extend(targets.iter().cloned());
    all.sort();
    targets.sort();
    (all, targets)
}

/// A small tree for the starvation sweep: 20 directories of 5 needle files
/// plus one ignored needle file each (ignored by the root `.ignore`).
fn build_small(t: &TempWorkdir) -> (Vec<String>, Vec<String>) {
    let mut searched = Vec::new();
    let mut ignored = Vec::new();
    t.file("small/.ignore", "ignored.txt\n");
    for k in 0..20 {
        for n in 0..5 {
            let path = format!("small/k{k:02}/n{n}.txt");
            t.file(&path, "needle\n");
            searched.push(path);
        }
        let path = format!("small/k{k:02}/ignored.txt");
        t.file(&path, "needle\n");
        ignored.push(path);
    }
    searched.sort();
    let mut found = searched.clone();
    found.extend(ignored);
    found.sort();
    (searched, found)
}

fn needle() -> SearchQuery {
    SearchQuery {
        query: "needle".to_owned(),
        regex: false,
        case_sensitive: true,
        glob: None,
        context_lines: 0,
        include_ignored: false,
    }
}

fn search_limits(threads: usize) -> SearchLimits {
    SearchLimits {
        limit: 1000,
        max_line_bytes: 2048,
        max_response_bytes: 1 << 20,
        max_file_bytes: 50 << 20,
        max_entries: 1_000_000,
        timeout: Duration::from_secs(600),
        threads,
        regex_size_limit: 1 << 20,
    }
}

fn find_limits(limit: usize, threads: usize) -> FindLimits {
    FindLimits {
        limit,
        max_entries: 1_000_000,
        threads,
    }
}

#[test]
fn walks_more_directories_than_descriptors() {
    let big = scratch();
    let (all, targets) = build(big.path());
    assert_eq!(all.len(), TOPS * SUBS * FILES + TARGETS + 1);
    // The starvation sweep gets a workdir of its own.
    let s = TempWorkdir::new();
    let (small_searched, small_found) = build_small(&s);
    // Probe openat2 before the limit is lowered (the probe opens files).
    let resolvers = harness::resolvers();
    let root = serverfs_fs::RelPath::root();
    let small = serverfs_fs::RelPath::parse("small").unwrap();
    let target_pattern = NamePattern::new("target-*.txt").unwrap();
    let some = NamePattern::new("f00?").unwrap();
    let txt = NamePattern::new("*.txt").unwrap();
    // `f00?` names ten files in each of the 500 leaf directories.
    let some_files: Vec<String> = all
        .iter()
        .filter(|p| p.rsplit('/').next().is_some_and(|n| n.starts_with("f00")))
        .cloned()
        .collect();
    assert_eq!(some_files.len(), TOPS * SUBS * 10);

    let before = open_fds();
    let guard = LimitGuard::lower_to(NOFILE);
    for resolver in resolvers.iter().copied() {
        let w = Workdir::open(
            big.path(),
            PathPolicy::new(true, true, &[]).unwrap(),
            resolver,
        )
        .unwrap();
        // A pattern matching exactly the needle files: complete and exact,
        // with one walker and with several.
        for threads in [1, 4] {
            let found = w
                .find_files(
                    &root,
                    &target_pattern,
                    find_limits(100, threads),
                    &Control::new(),
                )
                .unwrap_or_else(|e| panic!("{resolver:?}, {threads} thread(s): find: {e}"));
            let paths: Vec<String> = found.matches.iter().map(|p| p.as_string()).collect();
            assert_eq!(paths, targets, "{resolver:?}, {threads} thread(s)");
            assert_eq!((found.truncated, found.truncated_reason), (false, None));
        }
        // 5,000 matches: the first 100 in path order, truncated by the limit.
        let found = w
            .find_files(&root, &some, find_limits(100, 4), &Control::new())
            .unwrap_or_else(|e| panic!("{resolver:?}: find f00?: {e}"));
        let paths: Vec<String> = found.matches.iter().map(|p| p.as_string()).collect();
        assert_eq!(paths, some_files[..100], "{resolver:?}");
        assert_eq!(
            (found.truncated, found.truncated_reason),
            (true, Some("limit"))
        );
        // Every file opened and searched, the needle found in each target.
        let result = w
            .search_text(&root, &needle(), search_limits(4), &Control::new())
            .unwrap_or_else(|e| panic!("{resolver:?}: search: {e}"));
        let hit: Vec<String> = result.matches.iter().map(|m| m.path.as_string()).collect();
        assert_eq!(hit, targets, "{resolver:?}");
        assert_eq!((result.truncated, result.truncated_reason), (false, None));
        assert_eq!(
            (result.files_searched, result.files_skipped),
            (all.len() as u64, 0),
            "{resolver:?}"
        );
        drop(w);
    }
    assert_eq!(open_fds(), before, "descriptors leaked");

    // Starvation sweep: with only a handful of descriptors to spare, a walk
    // may fail with RESOURCE_EXHAUSTED, but it must never return an answer
    // that silently lacks files (or silently ignores an ignore file) while
    // claiming to be complete.
    let original = guard.0;
    let mut failures = Vec::new();
    for resolver in resolvers.iter().copied() {
        let w: Workdir = harness::open(&s, resolver);
        let open = open_fds();
        for threads in [1, 2, 4] {
            for headroom in 0..=8usize {
                set_soft(&original, limit_leaving(&open, headroom));
                let find = w.find_files(&small, &txt, find_limits(1000, threads), &Control::new());
                let search =
                    w.search_text(&small, &needle(), search_limits(threads), &Control::new());
                set_soft(&original, NOFILE);
                let label = format!("{resolver:?}, {threads} thread(s), {headroom} spare");
                match find {
                    Ok(found) => {
                        let paths: Vec<String> =
                            found.matches.iter().map(|p| p.as_string()).collect();
                        if paths != small_found || found.truncated {
                            failures.push(format!(
                                "{label}: find returned {} of {} files, truncated {}",
                                paths.len(),
                                small_found.len(),
                                found.truncated
                            ));
                        }
                    }
                    Err(e) if e.code() == ErrorCode::ResourceExhausted => {}
                    Err(e) => failures.push(format!("{label}: find failed with {e}")),
                }
                match search {
                    Ok(result) => {
                        let hit: Vec<String> =
                            result.matches.iter().map(|m| m.path.as_string()).collect();
                        if hit != small_searched || result.truncated {
                            failures.push(format!(
                                "{label}: search returned {} matches ({} of them ignored \
                                 files) of {}, truncated {}",
                                hit.len(),
                                hit.iter().filter(|p| p.ends_with("ignored.txt")).count(),
                                small_searched.len(),
                                result.truncated
                            ));
                        }
                    }
                    Err(e) if e.code() == ErrorCode::ResourceExhausted => {}
                    Err(e) => failures.push(format!("{label}: search failed with {e}")),
                }
            }
        }
    }
    drop(guard);
    assert!(
        failures.is_empty(),
        "{} silent partial answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
