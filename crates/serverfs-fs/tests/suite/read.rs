//! `Workdir::read_text`: paging, cursors, text rules.

use std::io::Write;

use serverfs_fs::{FsError, PageLimits, PageStart, RelPath, TextPage, Workdir};
use serverfs_protocol::ErrorCode;

use crate::harness::open;

fn page(
    w: &Workdir,
    path: &str,
    start: PageStart,
    max_lines: u64,
    max_bytes: u64,
) -> Result<TextPage, FsError> {
    w.read_text(
        &RelPath::parse(path).unwrap(),
        &start,
        PageLimits {
            max_lines,
            max_bytes,
        },
    )
}

fs_test!(pages_reassemble_the_file, |t, resolver| {
    let text: String = (1..=25)
        .map(|i| format!("line {i}\r\n"))
        .collect::<String>()
        + "last";
    t.file("t.txt", &text);
    let w = open(t, resolver);
    let mut by_line = String::new();
    let mut next = Some(1u64);
    while let Some(line) = next {
        let p = page(&w, "t.txt", PageStart::Line(line), 7, 1 << 20).unwrap();
        assert_eq!(p.start_line, line);
        by_line.push_str(&p.content);
        next = p.next_start_line;
    }
    assert_eq!(by_line, text);

    let mut by_cursor = String::new();
    let mut start = PageStart::Line(1);
    loop {
        let p = page(&w, "t.txt", start, 7, 1 << 20).unwrap();
        by_cursor.push_str(&p.content);
        match p.next_cursor {
            Some(c) => start = PageStart::Cursor(c),
            None => break,
        }
    }
    assert_eq!(by_cursor, text);
});

fs_test!(byte_budget_and_long_lines, |t, resolver| {
    t.file("t.txt", "aaaa\nbbbb\ncccccccccccc\ndd\n");
    let w = open(t, resolver);
    let p = page(&w, "t.txt", PageStart::Line(1), 100, 10).unwrap();
    assert_eq!(
        (p.content.as_str(), p.end_line, p.has_more),
        ("aaaa\nbbbb\n", 2, true)
    );
    let err = page(&w, "t.txt", PageStart::Line(3), 100, 10).unwrap_err();
    assert_eq!(err, FsError::LineTooLarge { line: 3, limit: 10 });
    let p = page(&w, "t.txt", PageStart::Line(4), 100, 10).unwrap();
    assert_eq!(
        (p.content.as_str(), p.has_more, p.next_cursor),
        ("dd\n", false, None)
    );
});

fs_test!(bom_is_hidden_once, |t, resolver| {
    t.file("bom.txt", b"\xEF\xBB\xBFfirst\nsecond\n");
    let w = open(t, resolver);
    let all = page(&w, "bom.txt", PageStart::Line(1), 10, 100).unwrap();
    assert_eq!(all.content, "first\nsecond\n");
    assert_eq!(all.bytes_returned, 13);
    let second = page(&w, "bom.txt", PageStart::Line(2), 10, 100).unwrap();
    assert_eq!(second.content, "second\n");
    let first = page(&w, "bom.txt", PageStart::Line(1), 1, 100).unwrap();
    let rest = page(
        &w,
        "bom.txt",
        PageStart::Cursor(first.next_cursor.unwrap()),
        10,
        100,
    )
    .unwrap();
    assert_eq!(rest.content, "second\n");
});

fs_test!(empty_and_past_the_end, |t, resolver| {
    t.file("empty", "").file("two", "a\nb\n");
    let w = open(t, resolver);
    let p = page(&w, "empty", PageStart::Line(1), 10, 100).unwrap();
    assert_eq!((p.content.as_str(), p.end_line, p.has_more), ("", 0, false));
    let p = page(&w, "two", PageStart::Line(3), 10, 100).unwrap();
    assert_eq!(
        (p.content.as_str(), p.start_line, p.end_line, p.has_more),
        ("", 3, 2, false)
    );
    let p = page(&w, "two", PageStart::Line(9), 10, 100).unwrap();
    assert_eq!((p.end_line, p.next_start_line), (8, None));
});

fs_test!(text_rules, |t, resolver| {
    let mut late_nul = vec![b'a'; 2000];
    late_nul.push(b'\n');
    late_nul.push(0);
    late_nul.push(b'\n');
    t.file("bin", b"abc\0def")
        .file("late-nul", &late_nul)
        .file("latin1", b"caf\xe9\n")
        .file("bad-later", b"ok\n\xff\n");
    let w = open(t, resolver);
    let code = |p: &str, line: u64| {
        page(&w, p, PageStart::Line(line), 10, 4096)
            .unwrap_err()
            .code()
    };
    assert_eq!(code("bin", 1), ErrorCode::BinaryFile);
    assert_eq!(
        code("bin", 5),
        ErrorCode::BinaryFile,
        "binary whatever the page"
    );
    assert_eq!(code("latin1", 1), ErrorCode::UnsupportedTextEncoding);
    // Only the returned page's bytes are decoded.
    assert_eq!(
        page(&w, "bad-later", PageStart::Line(1), 1, 4096)
            .unwrap()
            .content,
        "ok\n"
    );
    assert_eq!(code("bad-later", 2), ErrorCode::UnsupportedTextEncoding);
    // A NUL past the first 1024 bytes is ordinary text (U+0000).
    assert_eq!(
        page(&w, "late-nul", PageStart::Line(2), 1, 4096)
            .unwrap()
            .content,
        "\0\n"
    );
});

fs_test!(stale_and_forged_cursors, |t, resolver| {
    t.file("t.txt", "one\ntwo\nthree\n");
    let w = open(t, resolver);
    let first = page(&w, "t.txt", PageStart::Line(1), 1, 100).unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    // Malformed tokens.
    for bad in ["", "!!!", "YWJj"] {
        let err = page(&w, "t.txt", PageStart::Cursor(bad.to_owned()), 1, 100).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{bad:?}");
    }
    // A forged offset that is not at a line start.
    use base64::Engine;
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("c1:{}:2:2", first.revision));
    let err = page(&w, "t.txt", PageStart::Cursor(forged), 1, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CursorStale);
    // A cursor of another file.
    t.file("u.txt", "one\ntwo\nthree\n");
    let err = page(&w, "u.txt", PageStart::Cursor(cursor.clone()), 1, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CursorStale);
    // The file changes: the cursor is stale.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(t.path("t.txt"))
        .unwrap();
    f.write_all(b"four\n").unwrap();
    let err = page(&w, "t.txt", PageStart::Cursor(cursor), 1, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CursorStale);
});

fs_test!(cursor_line_numbers_cannot_overflow, |t, resolver| {
    t.file("t.txt", "one\ntwo\n");
    let w = open(t, resolver);
    let first = page(&w, "t.txt", PageStart::Line(1), 1, 100).unwrap();
    use base64::Engine;
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
        "c1:{}:4:{}",
        first.revision,
        u64::MAX
    ));
    let err = page(&w, "t.txt", PageStart::Cursor(forged), 1, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
});
