//! Mutations at the kernel level: publication, guards, metadata.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use serverfs_fs::{ByteRange, Control, EditLimits, FsError, RelPath, TextEdit};
use serverfs_protocol::ErrorCode;
use sha2::Digest;

use crate::harness::open;

const LIMITS: EditLimits = EditLimits {
    max_write_bytes: 1 << 20,
    max_edits: 50,
};

fn p(s: &str) -> RelPath {
    RelPath::parse(s).unwrap()
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fs_test!(
    create_never_overwrites_and_leaves_no_debris,
    |t, resolver| {
        t.dir("d")
            .file("d/existing", "old")
            .symlink("d/dangling", "nowhere")
            .fifo("d/fifo");
        let w = open(t, resolver);
        let rev = w.create_file(&p("d/new.txt"), b"hello\r\n").unwrap();
        assert_eq!(std::fs::read(t.path("d/new.txt")).unwrap(), b"hello\r\n");
        assert_eq!(
            w.stat(&p("d/new.txt")).unwrap().revision,
            rev,
            "returned revision is current"
        );
        let mode = std::fs::metadata(t.path("d/new.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0, "never executable");
        for existing in ["d/existing", "d/dangling", "d/fifo"] {
            assert_eq!(
                w.create_file(&p(existing), b"x").unwrap_err(),
                FsError::AlreadyExists,
                "{existing}"
            );
        }
        assert_eq!(std::fs::read(t.path("d/existing")).unwrap(), b"old");
        assert_eq!(
            w.create_file(&p("missing/x"), b"x").unwrap_err(),
            FsError::ParentNotFound
        );
        assert_eq!(
            w.create_file(&p("d/existing/x"), b"x").unwrap_err().code(),
            ErrorCode::NotADirectory
        );
        assert_eq!(
            names(&t.path("d")),
            ["dangling", "existing", "fifo", "new.txt"]
        );
    }
);

fs_test!(
    create_through_a_symlinked_parent_is_refused,
    |t, resolver| {
        t.symlink("out", t.outside());
        let w = open(t, resolver);
        assert_eq!(
            w.create_file(&p("out/x"), b"x").unwrap_err(),
            FsError::Symlink
        );
        assert_eq!(
            w.create_directory(&p("out/x")).unwrap_err(),
            FsError::Symlink
        );
        assert!(!t.outside().join("x").exists());
    }
);

fs_test!(
    replace_checks_type_before_revision_and_preserves_metadata,
    |t, resolver| {
        t.file("a.txt", "one\n")
            .dir("dir")
            .symlink("link", "a.txt")
            .fifo("fifo");
        std::fs::set_permissions(t.path("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
        let xattr_ok = std::process::Command::new("setfattr")
            .args(["-n", "user.serverfs", "-v", "kept"])
            .arg(t.path("a.txt"))
            .status()
            .is_ok_and(|s| s.success());
        let w = open(t, resolver);
        let stale = "v1:0000000000000000";
        assert_eq!(
            w.replace_file(&p("dir"), stale, b"x").unwrap_err(),
            FsError::NotAFile
        );
        assert_eq!(
            w.replace_file(&p("link"), stale, b"x").unwrap_err(),
            FsError::Symlink
        );
        assert_eq!(
            w.replace_file(&p("fifo"), stale, b"x").unwrap_err(),
            FsError::UnsupportedFileType
        );
        assert_eq!(
            w.replace_file(&p("nope"), stale, b"x").unwrap_err(),
            FsError::NotFound
        );
        assert_eq!(
            w.replace_file(&p("a.txt"), stale, b"x").unwrap_err(),
            FsError::RevisionConflict
        );
        let before = w.stat(&p("a.txt")).unwrap().revision;
        let replaced = w
            .replace_file(&p("a.txt"), before.as_str(), b"two\n")
            .unwrap();
        assert_eq!(replaced.revision_before, before);
        assert_eq!(w.stat(&p("a.txt")).unwrap().revision, replaced.revision);
        assert_eq!(std::fs::read(t.path("a.txt")).unwrap(), b"two\n");
        let meta = std::fs::metadata(t.path("a.txt")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
        if xattr_ok {
            let out = std::process::Command::new("getfattr")
                .args(["--only-values", "-n", "user.serverfs"])
                .arg(t.path("a.txt"))
                .output()
                .unwrap();
            assert_eq!(out.stdout, b"kept");
        } else {
            eprintln!(
                "setfattr unavailable or filesystem without user xattrs: xattr copy not checked here"
            );
        }
        assert_eq!(
            names(&t.root()),
            ["a.txt", "dir", "fifo", "link"],
            "no temp debris"
        );
    }
);

fs_test!(hard_linked_files_are_not_replaced, |t, resolver| {
    t.file("a", "x").hardlink("a", "b");
    let w = open(t, resolver);
    let rev = w.stat(&p("a")).unwrap().revision;
    assert_eq!(
        w.replace_file(&p("a"), rev.as_str(), b"y").unwrap_err(),
        FsError::MultipleHardlinks
    );
    // Deleting one name of a hard-linked file is fine.
    let deleted = w.delete_file(&p("a"), rev.as_str()).unwrap();
    assert_eq!(deleted.bytes, 1);
    assert_eq!(std::fs::read(t.path("b")).unwrap(), b"x");
});

fs_test!(
    edit_keeps_bom_and_line_endings_and_dry_run_is_pure,
    |t, resolver| {
        t.file("e.txt", b"\xEF\xBB\xBFalpha\r\nbeta\r\ngamma");
        let w = open(t, resolver);
        let rev = w.stat(&p("e.txt")).unwrap().revision;
        let edits = [TextEdit {
            old_text: "beta".into(),
            new_text: "BETA".into(),
            expected_count: 1,
        }];
        let dry = w
            .edit_text(&p("e.txt"), rev.as_str(), &edits, LIMITS, true)
            .unwrap();
        assert_eq!(dry.revision, rev);
        assert_eq!(
            w.stat(&p("e.txt")).unwrap().revision,
            rev,
            "dry run leaves the revision"
        );
        let real = w
            .edit_text(&p("e.txt"), rev.as_str(), &edits, LIMITS, false)
            .unwrap();
        assert_eq!(real.diff, dry.diff, "dry run shows the same diff");
        assert!(real.diff.contains("-beta\r\n+BETA\r\n"), "{}", real.diff);
        assert_eq!(
            std::fs::read(t.path("e.txt")).unwrap(),
            b"\xEF\xBB\xBFalpha\r\nBETA\r\ngamma"
        );
        assert_eq!((real.bytes_before, real.bytes_after), (21, 21));
        assert_eq!(w.stat(&p("e.txt")).unwrap().revision, real.revision);
        // All or nothing.
        let bad = [
            TextEdit {
                old_text: "alpha".into(),
                new_text: "A".into(),
                expected_count: 1,
            },
            TextEdit {
                old_text: "missing".into(),
                new_text: "M".into(),
                expected_count: 1,
            },
        ];
        let err = w
            .edit_text(&p("e.txt"), real.revision.as_str(), &bad, LIMITS, false)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::EditConflict);
        assert_eq!(
            std::fs::read(t.path("e.txt")).unwrap(),
            b"\xEF\xBB\xBFalpha\r\nBETA\r\ngamma"
        );
    }
);

fs_test!(delete_directory_rules, |t, resolver| {
    t.dir("empty").file("full/.hidden", "").file("f", "");
    let w = open(t, resolver);
    let rev = |s: &str| w.stat(&p(s)).unwrap().revision;
    assert_eq!(
        w.delete_directory(&p("f"), rev("f").as_str()).unwrap_err(),
        FsError::NotADirectory
    );
    assert_eq!(
        w.delete_directory(&p("full"), rev("full").as_str())
            .unwrap_err(),
        FsError::DirectoryNotEmpty
    );
    let stale = rev("empty");
    t.file("empty/x", "");
    std::fs::remove_file(t.path("empty/x")).unwrap();
    assert_eq!(
        w.delete_directory(&p("empty"), stale.as_str()).unwrap_err(),
        FsError::RevisionConflict
    );
    w.delete_directory(&p("empty"), rev("empty").as_str())
        .unwrap();
    assert!(!t.path("empty").exists());
    assert_eq!(
        w.create_directory(&p("full")).unwrap_err(),
        FsError::AlreadyExists
    );
    let created = w.create_directory(&p("new")).unwrap();
    assert_eq!(rev("new"), created);
});

fs_test!(
    a_range_over_several_chunks_is_hashed_and_counted_whole,
    |t, resolver| {
        // Two and a half read chunks, starting off a chunk boundary.
        let chunk = serverfs_fs::READ_CHUNK_BYTES;
        let bytes: Vec<u8> = (0..=250u8).cycle().take(chunk * 3).collect();
        t.file("blob.bin", &bytes);
        let w = open(t, resolver);
        let range = ByteRange {
            offset: 7,
            max_bytes: Some((chunk * 5 / 2) as u64),
            limit: u64::MAX,
        };
        let control = Control::new();
        let read = w.read_bytes(&p("blob.bin"), range, None, &control).unwrap();
        let want = &bytes[7..7 + chunk * 5 / 2];
        assert_eq!(read.data, want);
        let digest: String = sha2::Sha256::digest(want)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(read.sha256, digest);
        assert_eq!(control.done(), want.len() as u64);
        // A cancelled control reads (and hashes) nothing.
        let cancelled = Control::new();
        cancelled.cancel();
        assert_eq!(
            w.read_bytes(&p("blob.bin"), range, None, &cancelled)
                .unwrap_err(),
            FsError::Cancelled
        );
        assert_eq!(cancelled.done(), 0);
    }
);

fs_test!(ranged_reads_and_stale_temp_cleanup, |t, resolver| {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    t.file("blob.bin", &bytes);
    // Two abandoned temp files — one even named with this very process's
    // id, as after a restart in a container where the pid is reused — and
    // one whose writer still holds its lock.
    let prefix = serverfs_fs::RESERVED_TEMP_PREFIX;
    let dead = format!("{prefix}{}-abc", (1 << 22) + 1);
    let reused_pid = format!("{prefix}{}-def", std::process::id());
    let live = format!("{prefix}{}-abc", std::process::id());
    t.file(&format!("sub/{dead}"), "debris")
        .file(&format!("sub/{reused_pid}"), "debris")
        .file(&format!("sub/{live}"), "in flight");
    let writer = std::fs::File::open(t.path(&format!("sub/{live}"))).unwrap();
    rustix::fs::flock(
        &writer,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .unwrap();
    let w = open(t, resolver);
    let mut got = Vec::new();
    let mut offset = 0u64;
    let mut revision = None::<String>;
    loop {
        let range = ByteRange {
            offset,
            max_bytes: Some(3000),
            limit: 4096,
        };
        let piece = w
            .read_bytes(&p("blob.bin"), range, revision.as_deref(), &Control::new())
            .unwrap();
        got.extend_from_slice(&piece.data);
        offset += piece.data.len() as u64;
        revision = Some(piece.revision.as_str().to_owned());
        if !piece.has_more {
            break;
        }
    }
    assert_eq!(got, bytes);
    let whole = ByteRange {
        offset: 0,
        max_bytes: None,
        limit: 4096,
    };
    assert_eq!(
        w.read_bytes(&p("blob.bin"), whole, None, &Control::new())
            .unwrap_err()
            .code(),
        ErrorCode::BinaryFileTooLarge
    );
    let report = w.remove_stale_temp_files(1000);
    assert_eq!(report.removed, 2);
    assert_eq!(names(&t.path("sub")), std::slice::from_ref(&live));
    drop(writer);
    assert_eq!(
        w.remove_stale_temp_files(1000).removed,
        1,
        "released: now abandoned"
    );
    let _ = std::fs::metadata(t.path("blob.bin")).unwrap().ino();
});

fs_test!(replace_preserves_a_foreign_owner, |t, resolver| {
    t.file("theirs.txt", "old\n");
    // Only root can give a file away; elsewhere the check cannot be staged.
    if std::os::unix::fs::chown(t.path("theirs.txt"), Some(4321), Some(4322)).is_err() {
        eprintln!("not root: foreign-owner preservation not checked here");
        return;
    }
    std::fs::set_permissions(
        t.path("theirs.txt"),
        std::fs::Permissions::from_mode(0o2640),
    )
    .unwrap();
    let w = open(t, resolver);
    let rev = w.stat(&p("theirs.txt")).unwrap().revision;
    w.replace_file(&p("theirs.txt"), rev.as_str(), b"new\n")
        .unwrap();
    let meta = std::fs::metadata(t.path("theirs.txt")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
    assert_eq!(
        meta.permissions().mode() & 0o7777,
        0o2640,
        "setgid survives the chown"
    );
    assert_eq!(std::fs::read(t.path("theirs.txt")).unwrap(), b"new\n");
});
