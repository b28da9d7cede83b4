//! How `read_text` uses the line index: checkpoints are reused, and a
//! checkpoint that is not at a line start is never trusted.

use rustix::fs::{AtFlags, statat};

use crate::line_index::{Checkpoint, FileKey};
use crate::{PageLimits, PageStart, PathPolicy, RelPath, Resolver, Revision, Workdir};

const LIMITS: PageLimits = PageLimits {
    max_lines: 2,
    max_bytes: 1 << 20,
};

/// A workdir holding `big.log`: `lines` lines of `line {n:010}\n` (16 bytes).
fn big_log(lines: u64) -> (tempfile::TempDir, Workdir, RelPath) {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=lines).map(|n| format!("line {n:010}\n")).collect();
    std::fs::write(dir.path().join("big.log"), text).unwrap();
    let policy = PathPolicy::new(false, true, &[]).unwrap();
    let workdir = Workdir::open(dir.path(), policy, Resolver::Auto).unwrap();
    (dir, workdir, RelPath::parse("big.log").unwrap())
}

fn identity(workdir: &Workdir) -> (FileKey, Revision) {
    let stat = statat(workdir.root_fd(), "big.log", AtFlags::SYMLINK_NOFOLLOW).unwrap();
    (FileKey::of(&stat), Revision::from_stat(&stat))
}

fn line_at(workdir: &Workdir, path: &RelPath, line: u64) -> String {
    workdir
        .read_text(path, &PageStart::Line(line), LIMITS)
        .unwrap()
        .content
}

#[test]
fn a_second_read_starts_at_a_checkpoint_near_its_line() {
    let (_dir, workdir, path) = big_log(300_000);
    let (key, revision) = identity(&workdir);
    assert_eq!(
        workdir.lines.nearest(key, &revision, 250_000),
        Checkpoint::TOP
    );
    assert_eq!(
        line_at(&workdir, &path, 250_000),
        "line 0000250000\nline 0000250001\n"
    );
    // 64 KiB between checkpoints is 4,096 lines of 16 bytes.
    for line in [250_000u64, 120_001, 7] {
        let from = workdir.lines.nearest(key, &revision, line);
        assert!(line - from.line < 4_096, "line {line}: {from:?}");
        assert_eq!(from.offset, (from.line - 1) * 16, "a line start");
        assert_eq!(
            line_at(&workdir, &path, line),
            format!("line {line:010}\nline {:010}\n", line + 1)
        );
    }
}

#[test]
fn a_checkpoint_off_a_line_start_is_forgotten() {
    let (_dir, workdir, path) = big_log(100_000);
    let (key, revision) = identity(&workdir);
    // What a same-revision rewrite with other line lengths would leave.
    let bogus = Checkpoint {
        line: 50_000,
        offset: 49_999 * 16 + 5,
    };
    let size = 100_000 * 16;
    let mut recorder = workdir.lines.recorder(size, 0).unwrap();
    recorder.line_start(bogus.line, bogus.offset);
    workdir
        .lines
        .learn(key, &revision, size, Some(recorder), None);
    assert_eq!(workdir.lines.nearest(key, &revision, 50_001), bogus);
    assert_eq!(
        line_at(&workdir, &path, 50_001),
        "line 0000050001\nline 0000050002\n"
    );
    let rebuilt = workdir.lines.nearest(key, &revision, 50_001);
    assert_ne!(rebuilt, bogus);
    assert_eq!(rebuilt.offset, (rebuilt.line - 1) * 16);
}

mod cursor_properties {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;

    use super::super::{Cursor, Direction, MAX_CURSOR_VALUE};
    use crate::LinePosition;

    fn position() -> impl Strategy<Value = LinePosition> {
        prop_oneof![
            (1..=MAX_CURSOR_VALUE).prop_map(LinePosition::Number),
            (0..=MAX_CURSOR_VALUE).prop_map(LinePosition::FromEnd),
        ]
    }

    proptest! {
        /// A cursor the server made decodes to itself.
        #[test]
        fn property_cursors_round_trip(
            hex in "[0-9a-f]{16}",
            forward in any::<bool>(),
            offset in 0..=MAX_CURSOR_VALUE,
            position in position(),
        ) {
            // Genuine cursors have a line number at most offset + 1.
            let position = match position {
                LinePosition::Number(n) => LinePosition::Number(n.min(offset.saturating_add(1))),
                other => other,
            };
            let direction = if forward { Direction::Forward } else { Direction::Backward };
            let cursor = Cursor { revision: format!("v1:{hex}"), direction, offset, position };
            let decoded = Cursor::decode(&cursor.encode()).unwrap();
            prop_assert_eq!(decoded.revision, cursor.revision);
            prop_assert!(decoded.direction == direction);
            prop_assert_eq!((decoded.offset, decoded.position), (offset, position));
        }

        /// Any token is decoded or refused as malformed, and what decodes
        /// stays within the bounds the arithmetic relies on.
        #[test]
        fn property_forged_cursors_stay_in_bounds(
            text in prop_oneof![
                "\\PC{0,60}",
                "c2:v1:[0-9a-f]{0,20}:[fbx]:[0-9]{0,22}:[nex][0-9]{0,22}",
            ],
            raw in any::<bool>(),
        ) {
            let token = if raw { text.clone() } else { URL_SAFE_NO_PAD.encode(&text) };
            if let Ok(cursor) = Cursor::decode(&token) {
                prop_assert!(cursor.offset <= MAX_CURSOR_VALUE);
                match cursor.position {
                    LinePosition::Number(n) => {
                        prop_assert!(n >= 1 && n - 1 <= cursor.offset);
                    }
                    LinePosition::FromEnd(n) => prop_assert!(n <= MAX_CURSOR_VALUE),
                }
                prop_assert!(cursor.revision.starts_with("v1:"));
            }
        }
    }
}
