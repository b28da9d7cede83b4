//! `Workdir::stat`.

use serverfs_fs::{EntryKind, RelPath};
use serverfs_protocol::ErrorCode;

use crate::harness::open;

fs_test!(describes_each_kind_without_following, |t, resolver| {
    t.file("a.json", "{\"k\": 1}\n")
        .dir("d")
        .symlink("l", "a.json")
        .fifo("f");
    let w = open(t, resolver);
    let stat = |p: &str| w.stat(&RelPath::parse(p).unwrap());

    let file = stat("a.json").unwrap();
    assert_eq!(file.kind, EntryKind::File);
    assert_eq!(file.size, Some(9));
    assert_eq!(file.mime_type.as_deref(), Some("application/json"));
    assert_eq!(file.modified_at.len(), 20);

    let link = stat("l").unwrap();
    assert_eq!(
        (link.kind, link.size, link.mime_type),
        (EntryKind::Symlink, None, None)
    );
    assert_ne!(link.revision, file.revision);

    assert_eq!(stat("d").unwrap().kind, EntryKind::Directory);
    assert_eq!(stat("f").unwrap().kind, EntryKind::Other);
    assert_eq!(stat("").unwrap().kind, EntryKind::Directory);
    assert_eq!(
        stat("l/x").unwrap_err().code(),
        ErrorCode::SymlinkNotAllowed
    );
    assert_eq!(
        stat("a.json/x").unwrap_err().code(),
        ErrorCode::NotADirectory
    );
    assert_eq!(stat("nope").unwrap_err().code(), ErrorCode::PathNotFound);
});

fs_test!(revision_tracks_changes, |t, resolver| {
    t.file("a.txt", "same\n").file("b.txt", "same\n").dir("d");
    let w = open(t, resolver);
    let rev = |p: &str| w.stat(&RelPath::parse(p).unwrap()).unwrap().revision;
    let a = rev("a.txt");
    assert_eq!(a, rev("a.txt"), "stable when unchanged");
    assert_ne!(a, rev("b.txt"), "identity is part of the token");
    std::fs::set_permissions(
        t.path("a.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    assert_ne!(a, rev("a.txt"), "chmod changes it");
    let d = rev("d");
    t.file("d/new", "x");
    assert_ne!(d, rev("d"), "adding an entry changes the directory's token");
});
