//! Hostile paths and races against the kernel directly.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serverfs_fs::{
    ByteRange, Control, PageLimits, PageStart, RelPath, SearchLimits, SearchQuery, Workdir,
};
use serverfs_protocol::ErrorCode;
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};

use crate::harness::open;

const LIMITS: PageLimits = PageLimits {
    max_lines: 100,
    max_bytes: 64 * 1024,
};

/// The server's production search caps, with a timeout no test reaches.
const SEARCH: SearchLimits = SearchLimits {
    limit: 100,
    max_line_bytes: 2048,
    max_response_bytes: 1 << 20,
    max_file_bytes: 50 << 20,
    max_entries: 200_000,
    timeout: std::time::Duration::from_secs(300),
    threads: 3,
    regex_size_limit: 1 << 20,
};

fn read(workdir: &Workdir, input: &str) -> Result<String, ErrorCode> {
    let path = workdir.parse_path(input).map_err(|e| e.code())?;
    workdir
        .read_text(&path, &PageStart::Line(1), LIMITS)
        .map(|page| page.content)
        .map_err(|e| e.code())
}

fn hostile_tree(t: &TempWorkdir) {
    t.file("ok.txt", "fine\n")
        .file("dir/inner.txt", "inner\n")
        .symlink("link-out", t.outside().join("secret.txt"))
        .symlink("link-dir-out", t.outside())
        .symlink("link-in", "ok.txt")
        .symlink("link-dir-in", "dir")
        .symlink("dangling", "nope")
        .symlink("loop-a", "loop-b")
        .symlink("loop-b", "loop-a")
        .symlink("proc-root", "/proc/self/root")
        .symlink("proc-cwd", "/proc/self/cwd")
        .symlink("dir/up", "..")
        .symlink("dir/up2", "../../outside")
        .fifo("fifo");
}

fs_test!(hostile_paths_get_their_codes, |t, resolver| {
    hostile_tree(t);
    let _socket = t.socket("sock");
    let w = open(t, resolver);
    let cases: &[(&str, ErrorCode)] = &[
        ("link-out", ErrorCode::SymlinkNotAllowed),
        ("link-dir-out/secret.txt", ErrorCode::SymlinkNotAllowed),
        ("link-in", ErrorCode::SymlinkNotAllowed),
        ("link-dir-in/inner.txt", ErrorCode::SymlinkNotAllowed),
        ("dangling", ErrorCode::SymlinkNotAllowed),
        ("loop-a", ErrorCode::SymlinkNotAllowed),
        ("loop-a/x", ErrorCode::SymlinkNotAllowed),
        ("proc-root/etc/passwd", ErrorCode::SymlinkNotAllowed),
        ("proc-cwd/ok.txt", ErrorCode::SymlinkNotAllowed),
        ("dir/up/ok.txt", ErrorCode::SymlinkNotAllowed),
        ("dir/up2/secret.txt", ErrorCode::SymlinkNotAllowed),
        ("fifo", ErrorCode::UnsupportedFileType),
        ("sock", ErrorCode::UnsupportedFileType),
        ("dir", ErrorCode::NotAFile),
        ("", ErrorCode::NotAFile),
        ("ok.txt/x", ErrorCode::NotADirectory),
        ("missing", ErrorCode::PathNotFound),
        ("missing/x", ErrorCode::PathNotFound),
        ("../outside/secret.txt", ErrorCode::PathOutsideWorkdir),
        (
            "dir/../../outside/secret.txt",
            ErrorCode::PathOutsideWorkdir,
        ),
    ];
    for (input, want) in cases {
        assert_eq!(read(&w, input), Err(*want), "{input:?} with {resolver:?}");
    }
    assert_eq!(read(&w, "dir/../ok.txt").unwrap(), "fine\n");
});

fs_test!(fifo_never_blocks_and_device_is_not_opened, |t, resolver| {
    t.fifo("fifo");
    let w = open(t, resolver);
    // A blocking open of a FIFO with no writer would hang this test.
    assert_eq!(read(&w, "fifo"), Err(ErrorCode::UnsupportedFileType));
    // A device reached through a symlink is refused as a symlink, and a
    // device node itself is never opened (type checked first).
    t.symlink("null", "/dev/null");
    assert_eq!(read(&w, "null"), Err(ErrorCode::SymlinkNotAllowed));
});

fs_test!(symlinked_root_is_refused, |t, resolver| {
    let link = t.outside().join("root-link");
    std::os::unix::fs::symlink(t.root(), &link).unwrap();
    let policy = serverfs_fs::PathPolicy::new(false, true, &[]).unwrap();
    let err = Workdir::open(&link, policy, resolver).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SymlinkNotAllowed);
});

// While one thread keeps swapping a directory for a symlink to the outside
// and back, reads through it must only ever see the inside file or a coded
// refusal, never the outside secret.
fs_test!(swap_race_never_escapes, |t, resolver| {
    t.file("swap/secret.txt", "inside\n");
    std::fs::create_dir(t.path("parked")).unwrap();
    let w = Arc::new(open(t, resolver));
    let stop = Arc::new(AtomicBool::new(false));
    let (swap, parked, outside) = (t.path("swap"), t.path("parked/swap"), t.outside());
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&swap, &parked).unwrap();
                std::os::unix::fs::symlink(&outside, &swap).unwrap();
                std::fs::remove_file(&swap).unwrap();
                std::fs::rename(&parked, &swap).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (mut inside, mut refused) = (0u32, 0u32);
    for _ in 0..5_000 {
        match read(&w, "swap/secret.txt") {
            Ok(text) => {
                assert_ne!(text, OUTSIDE_SECRET, "sandbox escape");
                assert_eq!(text, "inside\n");
                inside += 1;
            }
            Err(ErrorCode::SymlinkNotAllowed | ErrorCode::PathNotFound) => refused += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0, "the swapper never ran");
    eprintln!("{resolver:?}: {inside} inside reads, {refused} refused, {swaps} swaps");
});

/// What each content read of a file gives.
#[derive(Debug, PartialEq)]
struct ContentReads {
    /// `read_text` of the first page.
    text: Result<String, ErrorCode>,
    /// `read_bytes` of the whole file.
    bytes: Result<Vec<u8>, ErrorCode>,
    /// The files `search_text` finds the file's text in, from the root.
    found_in: Vec<String>,
    /// That search's `files_skipped`.
    skipped: u64,
}

fn content_reads(w: &Workdir, name: &str, text: &str) -> ContentReads {
    let path = w.parse_path(name).unwrap();
    let whole = ByteRange {
        offset: 0,
        max_bytes: None,
        limit: 1 << 20,
    };
    let query = SearchQuery {
        query: text.to_owned(),
        regex: false,
        case_sensitive: true,
        glob: None,
        context_lines: 0,
        include_ignored: true,
    };
    let found = w
        .search_text(&RelPath::root(), &query, SEARCH, &Control::new())
        .unwrap();
    ContentReads {
        text: read(w, name),
        bytes: w
            .read_bytes(&path, whole, None, &Control::new())
            .map(|b| b.data)
            .map_err(|e| e.code()),
        found_in: found.matches.iter().map(|m| m.path.as_string()).collect(),
        skipped: found.files_skipped,
    }
}

// A hard link planted in the workdir names the outside file itself, which
// no path rule can see. By default no content read takes it: read and
// download refuse with a code, search skips and counts it, while a file
// with one name beside it reads as usual. A workdir that reads hard-linked
// files gives the outside content (the documented limit).
fs_test!(
    hardlinks_to_outside_files_are_read_only_when_allowed,
    |t, resolver| {
        let outside = t.outside().join("secret.txt");
        std::fs::hard_link(&outside, t.path("planted.txt")).unwrap();
        t.file("own.txt", OUTSIDE_SECRET);
        let mut w = open(t, resolver);
        assert_eq!(
            content_reads(&w, "planted.txt", OUTSIDE_SECRET),
            ContentReads {
                text: Err(ErrorCode::MultipleHardlinksNotAllowed),
                bytes: Err(ErrorCode::MultipleHardlinksNotAllowed),
                found_in: vec!["own.txt".to_owned()],
                skipped: 1,
            }
        );
        assert_eq!(read(&w, "own.txt").unwrap(), OUTSIDE_SECRET);
        // Metadata is not content: stat still describes the name.
        assert!(w.stat(&w.parse_path("planted.txt").unwrap()).is_ok());

        w.set_read_hardlinked_files(true);
        assert_eq!(
            content_reads(&w, "planted.txt", OUTSIDE_SECRET),
            ContentReads {
                text: Ok(OUTSIDE_SECRET.to_owned()),
                bytes: Ok(OUTSIDE_SECRET.as_bytes().to_vec()),
                found_in: vec!["own.txt".to_owned(), "planted.txt".to_owned()],
                skipped: 0,
            }
        );
    }
);
