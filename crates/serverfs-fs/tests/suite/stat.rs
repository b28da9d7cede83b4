//! `Workdir::stat`.

use serverfs_fs::{EntryKind, RelPath};
use serverfs_protocol::ErrorCode;

use serverfs_testkit::TempWorkdir;

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

fs_test!(
    root_location_names_the_open_root_where_it_is_now,
    |t, resolver| {
        t.dir("inner");
        let w = open(t, resolver);
        let here = w.root_location().expect("a location on Linux");
        assert!(here.is_absolute(), "{here:?}");
        // `<temp dir>/root`, whatever links lead to the temp dir.
        let temp_dir = t.root().parent().unwrap().file_name().unwrap().to_owned();
        assert!(
            here.ends_with(std::path::Path::new(&temp_dir).join("root")),
            "{here:?}"
        );

        // The descriptor follows the directory: after a rename, so does the
        // location (the mount table is matched against where it is now).
        let moved = t.outside().join("moved-root");
        std::fs::rename(t.root(), &moved).unwrap();
        assert!(w.root_location().unwrap().ends_with("moved-root"));
        std::fs::rename(&moved, t.root()).unwrap();

        // A deleted root has no location.
        let doomed = TempWorkdir::new();
        let gone = open(&doomed, resolver);
        std::fs::remove_dir_all(doomed.root()).unwrap();
        assert_eq!(gone.root_location(), None);
    }
);
