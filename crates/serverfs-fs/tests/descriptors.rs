//! Descriptor use stays bounded. A test binary of its own: the process-wide
//! descriptor count is only meaningful with no other test running.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod harness;

use serverfs_fs::{EntryDetail, PageLimits, PageStart, RelPath};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fs_test!(deep_paths_leak_no_descriptors, |t, resolver| {
    let deep: Vec<String> = (0..40).map(|i| format!("d{i}")).collect();
    let rel = deep.join("/");
    t.file(&format!("{rel}/leaf.txt"), "leaf\n");
    let w = harness::open(t, resolver);
    let dir = RelPath::parse(&rel).unwrap();
    let leaf = RelPath::parse(&format!("{rel}/leaf.txt")).unwrap();
    let limits = PageLimits {
        max_lines: 10,
        max_bytes: 1024,
    };
    let before = open_fds();
    for _ in 0..50 {
        let page = w.read_text(&leaf, &PageStart::Line(1), limits).unwrap();
        assert_eq!(page.content, "leaf\n");
        w.list_directory(&dir, 0, 10, EntryDetail::Metadata)
            .unwrap();
        w.stat(&leaf).unwrap();
        assert!(w.parse_path(&format!("{rel}/nope/x")).is_ok());
    }
    assert_eq!(open_fds(), before, "descriptors leaked");
});
