//! `Workdir::list_directory`.

use serverfs_fs::{EntryDetail, EntryKind, PathPolicy, RelPath};
use serverfs_protocol::ErrorCode;

use crate::harness::{open, open_with};

fs_test!(lists_sorted_and_filtered, |t, resolver| {
    t.file("b.txt", "bb")
        .file("a.txt", "a")
        .file(".hidden", "h")
        .file("id_rsa", "k")
        .file(".serverfs-tmp-123", "tmp")
        .dir("C")
        .symlink("z-link", "a.txt")
        .fifo("f");
    let policy = PathPolicy::new(false, true, &[]).unwrap();
    let w = open_with(t, resolver, policy);
    let page = w
        .list_directory(&RelPath::root(), 0, 100, EntryDetail::Metadata)
        .unwrap();
    let names: Vec<(&str, EntryKind, Option<u64>)> = page
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.kind, e.size))
        .collect();
    assert_eq!(
        names,
        [
            ("C", EntryKind::Directory, None),
            ("a.txt", EntryKind::File, Some(1)),
            ("b.txt", EntryKind::File, Some(2)),
            ("f", EntryKind::Other, None),
            ("z-link", EntryKind::Symlink, None),
        ]
    );
    assert_eq!((page.total, page.has_more), (5, false));
    assert!(page.entries.iter().all(|e| {
        e.modified_at
            .as_ref()
            .is_some_and(|t| t.len() == 20 && t.ends_with('Z'))
    }));

    // Kinds only: the same entries and kinds, read from the directory,
    // with no size or time.
    let kinds = w
        .list_directory(&RelPath::root(), 0, 100, EntryDetail::Kinds)
        .unwrap();
    let listed: Vec<(&str, EntryKind)> = kinds
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.kind))
        .collect();
    let expected: Vec<(&str, EntryKind)> = names.iter().map(|(n, k, _)| (*n, *k)).collect();
    assert_eq!(listed, expected);
    assert!(
        kinds
            .entries
            .iter()
            .all(|e| e.size.is_none() && e.modified_at.is_none())
    );
    assert_eq!((kinds.total, kinds.has_more), (5, false));
});

fs_test!(pages_with_offset_and_limit, |t, resolver| {
    for i in 0..7 {
        t.file(&format!("sub/f{i}"), "");
    }
    let w = open(t, resolver);
    let sub = RelPath::parse("sub").unwrap();
    let page = w.list_directory(&sub, 2, 3, EntryDetail::Metadata).unwrap();
    let paths: Vec<&str> = page.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["sub/f2", "sub/f3", "sub/f4"]);
    assert!(page.has_more);
    let tail = w.list_directory(&sub, 5, 3, EntryDetail::Metadata).unwrap();
    assert_eq!(tail.entries.len(), 2);
    assert!(!tail.has_more);
    let past = w
        .list_directory(&sub, 50, 3, EntryDetail::Metadata)
        .unwrap();
    assert!(past.entries.is_empty() && !past.has_more);
});

fs_test!(list_errors, |t, resolver| {
    t.file("file", "x").dir("d").symlink("ld", "d").fifo("fifo");
    let w = open(t, resolver);
    let list = |p: &str| {
        w.list_directory(&RelPath::parse(p).unwrap(), 0, 10, EntryDetail::Kinds)
            .map(|_| ())
    };
    assert_eq!(list("file").unwrap_err().code(), ErrorCode::NotADirectory);
    assert_eq!(list("fifo").unwrap_err().code(), ErrorCode::NotADirectory);
    assert_eq!(list("ld").unwrap_err().code(), ErrorCode::SymlinkNotAllowed);
    assert_eq!(
        list("ld/x").unwrap_err().code(),
        ErrorCode::SymlinkNotAllowed
    );
    assert_eq!(list("nope").unwrap_err().code(), ErrorCode::PathNotFound);
    assert!(list("d").is_ok());
});

fs_test!(deny_globs_filter_listing_by_full_path, |t, resolver| {
    t.file("docs/private/a.md", "")
        .file("docs/public/b.md", "")
        .file("docs/x.log", "");
    let extra = vec!["docs/private".to_owned(), "*.log".to_owned()];
    let w = open_with(t, resolver, PathPolicy::new(false, true, &extra).unwrap());
    let page = w
        .list_directory(&RelPath::parse("docs").unwrap(), 0, 10, EntryDetail::Kinds)
        .unwrap();
    let names: Vec<&str> = page.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["public"]);
});

fs_test!(list_within_gives_up_past_its_name_budget, |t, resolver| {
    for name in ["a", "b", "c", "d", "e"] {
        t.file(&format!("d/{name}.txt"), name);
    }
    // Hidden names are not listed, so not counted either.
    t.file("d/.hidden", "not counted");
    let w = open_with(t, resolver, PathPolicy::new(false, true, &[]).unwrap());
    let d = RelPath::parse("d").unwrap();
    let whole = w.list_directory(&d, 1, 2, EntryDetail::Metadata).unwrap();
    // Five visible names fit a budget of five, with the same page.
    assert_eq!(
        w.list_directory_within(&d, 1, 2, EntryDetail::Metadata, 5)
            .unwrap(),
        Some(whole)
    );
    assert_eq!(
        w.list_directory_within(&d, 1, 2, EntryDetail::Metadata, 4)
            .unwrap(),
        None
    );
    // A budget of none lists an empty directory and nothing else.
    t.dir("empty");
    let empty = w
        .list_directory_within(
            &RelPath::parse("empty").unwrap(),
            0,
            2,
            EntryDetail::Metadata,
            0,
        )
        .unwrap()
        .expect("an empty directory fits any budget");
    assert_eq!((empty.entries.len(), empty.total), (0, 0));
    assert_eq!(
        w.list_directory_within(&d, 0, 2, EntryDetail::Metadata, 0)
            .unwrap(),
        None
    );
    assert_eq!(
        w.list_directory_within(
            &RelPath::parse("nope").unwrap(),
            0,
            2,
            EntryDetail::Metadata,
            4
        )
        .unwrap_err()
        .code(),
        ErrorCode::PathNotFound
    );
});
