//! Hostile paths and races against the kernel directly.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serverfs_fs::{PageLimits, PageStart, Workdir};
use serverfs_protocol::ErrorCode;
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};

use crate::harness::open;

const LIMITS: PageLimits = PageLimits {
    max_lines: 100,
    max_bytes: 64 * 1024,
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
