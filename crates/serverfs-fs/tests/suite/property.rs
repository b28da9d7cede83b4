//! Property: whatever path a caller sends, anything it reaches is an
//! object inside the root.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

use proptest::prelude::*;
use serverfs_fs::{EntryDetail, PageLimits, PageStart, RelPath, Resolver};
use serverfs_testkit::TempWorkdir;

use crate::harness::{open, resolvers};

/// (device, inode) of every object beneath `root`, found without following
/// symlinks — the only objects a confined request may ever touch.
fn inside_objects(root: &std::path::Path) -> HashSet<(u64, u64)> {
    let mut seen = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let meta = std::fs::symlink_metadata(&dir).unwrap();
        seen.insert((meta.dev(), meta.ino()));
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            seen.insert((meta.dev(), meta.ino()));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    seen
}

fn tree() -> TempWorkdir {
    let t = TempWorkdir::new();
    t.file("a/b/file.txt", "in\n")
        .file("a/note.txt", "note\n")
        .symlink("a/up", "..")
        .symlink("a/out", t.outside())
        .symlink("a/b/abs", "/")
        .symlink("root-link", ".");
    t
}

/// Path segments a hostile caller strings together.
fn hostile_segments() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::collection::vec(
        prop_oneof![
            Just(".."),
            Just("."),
            Just(""),
            Just("a"),
            Just("b"),
            Just("up"),
            Just("out"),
            Just("abs"),
            Just("root-link"),
            Just("file.txt"),
            Just("note.txt"),
            Just("secret.txt"),
            Just("outside"),
            Just("etc"),
        ],
        0..8,
    )
}

/// Nothing a case does changes the tree, so one tree serves every case:
/// the long profile's 100,000 cases would otherwise spend their time
/// creating and removing it.
#[test]
fn property_nothing_reached_lies_outside_the_root() {
    let t = tree();
    let allowed = inside_objects(&t.root());
    let config = ProptestConfig {
        // PROPTEST_CASES (the soak's long profile) raises it.
        cases: ProptestConfig::default().cases.max(400),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let outcome = runner.run(&hostile_segments(), |segments| {
        let input = segments.join("/");
        for resolver in resolvers() {
            check(&t, resolver, &input, &allowed)?;
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

fn check(
    t: &TempWorkdir,
    resolver: Resolver,
    input: &str,
    allowed: &HashSet<(u64, u64)>,
) -> Result<(), TestCaseError> {
    let w = open(t, resolver);
    let Ok(path) = RelPath::parse(input) else {
        return Ok(());
    };
    if let Ok(meta) = w.stat(&path) {
        // Identify the object the kernel described by re-deriving it from
        // the normalized path on the host side, without following links.
        let host = t.root().join(path.components().join("/"));
        let host_meta = std::fs::symlink_metadata(&host).unwrap();
        prop_assert!(
            allowed.contains(&(host_meta.dev(), host_meta.ino())),
            "{input:?} -> {host:?}"
        );
        prop_assert_eq!(meta.size.is_some(), host_meta.is_file());
    }
    let limits = PageLimits {
        max_lines: 10,
        max_bytes: 4096,
    };
    if let Ok(page) = w.read_text(&path, &PageStart::Line(1), limits) {
        prop_assert!(
            page.content == "in\n" || page.content == "note\n",
            "{input:?} read {:?}",
            page.content
        );
    }
    if let Ok(page) = w.list_directory(&path, 0, 100, EntryDetail::Metadata) {
        // Kinds read from the directory agree with the stat'ed ones.
        let kinds = w.list_directory(&path, 0, 100, EntryDetail::Kinds);
        let kinds: Vec<_> = kinds
            .unwrap()
            .entries
            .into_iter()
            .map(|e| (e.path, e.kind))
            .collect();
        let from_stat: Vec<_> = page
            .entries
            .iter()
            .map(|e| (e.path.clone(), e.kind))
            .collect();
        prop_assert_eq!(kinds, from_stat, "{:?}", input);
        for entry in page.entries {
            let host = t.root().join(&entry.path);
            let m = std::fs::symlink_metadata(&host).unwrap();
            prop_assert!(
                allowed.contains(&(m.dev(), m.ino())),
                "{input:?} listed {host:?}"
            );
        }
    }
    Ok(())
}
