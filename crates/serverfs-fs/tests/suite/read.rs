//! `Workdir::read_text`: paging, cursors, text rules.

use std::io::Write;

use serverfs_fs::{FsError, LinePosition, PageLimits, PageStart, RelPath, TextPage, Workdir};
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
        assert_eq!(p.start_line, Some(line));
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
        ("aaaa\nbbbb\n", Some(2), true)
    );
    let err = page(&w, "t.txt", PageStart::Line(3), 100, 10).unwrap_err();
    assert_eq!(
        err,
        FsError::LineTooLarge {
            line: LinePosition::Number(3),
            limit: 10
        }
    );
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
    assert_eq!(
        (p.content.as_str(), p.end_line, p.has_more),
        ("", Some(0), false)
    );
    let p = page(&w, "two", PageStart::Line(3), 10, 100).unwrap();
    assert_eq!(
        (p.content.as_str(), p.start_line, p.end_line, p.has_more),
        ("", Some(3), Some(2), false)
    );
    let p = page(&w, "two", PageStart::Line(9), 10, 100).unwrap();
    assert_eq!((p.end_line, p.next_start_line), (Some(8), None));
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
    use base64::Engine;
    let b64 = |text: String| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
    let rev = first.revision.as_str();
    for bad in [
        String::new(),
        "!!!".to_owned(),
        "YWJj".to_owned(),
        // The earlier cursor format, and broken fields of the current one.
        b64(format!("c1:{rev}:4:2")),
        b64(format!("c2:{rev}:x:4:n2")),
        b64(format!("c2:{rev}:f:4:q2")),
        b64(format!("c2:{rev}:f:4:n")),
        b64(format!("c2:{rev}:f:4:n0")),
        b64(format!("c2:{rev}:f:4:n6")),
        b64(format!("c2:{rev}:f:-4:n2")),
        b64(format!("c2:{rev}:f:4:e{}", u64::MAX)),
        b64(format!("c2:{rev}:f:4:n2:extra")),
    ] {
        let err = page(&w, "t.txt", PageStart::Cursor(bad.clone()), 1, 100).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{bad:?}");
    }
    // A forged offset that is not at a line start, either way.
    for direction in ["f", "b"] {
        let forged = b64(format!("c2:{rev}:{direction}:2:n2"));
        let err = page(&w, "t.txt", PageStart::Cursor(forged), 1, 100).unwrap_err();
        assert_eq!(err.code(), ErrorCode::CursorStale, "{direction}");
    }
    // Counts a genuine cursor cannot carry: more lines after the offset
    // than a forward page finds, fewer before it than a backward page
    // finds.
    let forged = b64(format!("c2:{rev}:f:4:e1"));
    let err = page(&w, "t.txt", PageStart::Cursor(forged), 5, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    let forged = b64(format!("c2:{rev}:b:8:n1"));
    let err = page(&w, "t.txt", PageStart::Cursor(forged), 1, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
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
        "c2:{}:f:4:n{}",
        first.revision,
        u64::MAX
    ));
    let err = page(&w, "t.txt", PageStart::Cursor(forged), 1, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
});

/// The text's lines as a reader sees them (BOM removed, endings kept).
fn reference_lines(text: &[u8]) -> Vec<String> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    String::from_utf8(text.to_vec())
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_owned)
        .collect()
}

fs_test!(tail_pages_are_the_last_lines, |t, resolver| {
    let text: String = (1..=25).map(|i| format!("line {i}\n")).collect();
    t.file("t.txt", &text)
        .file("open-end.txt", "a\nb\nc")
        .file("bom.txt", b"\xEF\xBB\xBFone\ntwo\n")
        .file("empty", "");
    let w = open(t, resolver);
    let p = page(&w, "t.txt", PageStart::Tail, 7, 1 << 20).unwrap();
    assert_eq!(p.content, reference_lines(text.as_bytes())[18..].concat());
    // A small file is counted, so its numbers are known.
    assert_eq!(
        (p.start_line, p.end_line, p.lines_returned, p.from_end),
        (Some(19), Some(25), 7, Some(0))
    );
    assert_eq!((p.has_more, p.next_cursor.is_none()), (false, true));
    assert!(p.prev_cursor.is_some());

    // The byte budget cuts from the top of the page: whole lines only.
    let p = page(&w, "t.txt", PageStart::Tail, 100, 20).unwrap();
    assert_eq!(p.content, "line 24\nline 25\n");

    let p = page(&w, "open-end.txt", PageStart::Tail, 2, 100).unwrap();
    assert_eq!((p.content.as_str(), p.start_line), ("b\nc", Some(2)));
    // Reaching the top: the BOM stays hidden, and no page precedes it.
    let p = page(&w, "bom.txt", PageStart::Tail, 10, 100).unwrap();
    assert_eq!(
        (p.content.as_str(), p.start_line, p.prev_cursor),
        ("one\ntwo\n", Some(1), None)
    );
    let p = page(&w, "empty", PageStart::Tail, 10, 100).unwrap();
    assert_eq!(
        (p.content.as_str(), p.start_line, p.end_line, p.from_end),
        ("", Some(1), Some(0), Some(0))
    );
});

fs_test!(
    a_last_line_over_the_budget_is_line_too_large,
    |t, resolver| {
        t.file("t.txt", format!("short\n{}\n", "x".repeat(100)));
        let w = open(t, resolver);
        let err = page(&w, "t.txt", PageStart::Tail, 10, 50).unwrap_err();
        assert_eq!(
            err,
            FsError::LineTooLarge {
                line: LinePosition::FromEnd(1),
                limit: 50
            }
        );
        assert_eq!(err.to_string(), "line 1 from the end exceeds 50 bytes");
        assert_eq!(err.code(), ErrorCode::LineTooLarge);
    }
);

fs_test!(prev_cursors_page_backwards_to_the_top, |t, resolver| {
    let text = b"\xEF\xBB\xBFfirst\n\nthird line\r\nfour\n\n\nseven\nlast";
    t.file("t.txt", text);
    let w = open(t, resolver);
    let lines = reference_lines(text);
    for max_lines in 1..=4 {
        let mut pages = Vec::new();
        let mut start = PageStart::Tail;
        loop {
            let p = page(&w, "t.txt", start, max_lines, 1 << 20).unwrap();
            let first = p.start_line.unwrap() as usize;
            let end = p.end_line.unwrap() as usize;
            assert_eq!(p.content, lines[first - 1..end].concat());
            // Known for the tail, and for pages that reach the end; the
            // pages before it are counted from the top.
            if p.from_end.is_some() || end == lines.len() {
                assert_eq!(p.from_end, Some((lines.len() - end) as u64));
            }
            pages.push(p.content.clone());
            match p.prev_cursor {
                Some(c) => start = PageStart::Cursor(c),
                None => break,
            }
        }
        pages.reverse();
        assert_eq!(pages.concat(), lines.concat(), "max_lines {max_lines}");
    }
});

fs_test!(cursors_turn_either_way, |t, resolver| {
    let text: String = (1..=30).map(|i| format!("{i}\n")).collect();
    t.file("t.txt", &text);
    let w = open(t, resolver);
    // Forward from line 11, then back twice, then forward again.
    let p = page(&w, "t.txt", PageStart::Line(11), 5, 1 << 20).unwrap();
    assert_eq!(p.content, "11\n12\n13\n14\n15\n");
    let back = page(
        &w,
        "t.txt",
        PageStart::Cursor(p.prev_cursor.unwrap()),
        5,
        1 << 20,
    )
    .unwrap();
    assert_eq!(
        (back.content.as_str(), back.start_line),
        ("6\n7\n8\n9\n10\n", Some(6))
    );
    let back = page(
        &w,
        "t.txt",
        PageStart::Cursor(back.prev_cursor.unwrap()),
        8,
        1 << 20,
    )
    .unwrap();
    assert_eq!(
        (back.content.as_str(), back.start_line),
        ("1\n2\n3\n4\n5\n", Some(1))
    );
    assert_eq!(back.prev_cursor, None);
    let again = page(
        &w,
        "t.txt",
        PageStart::Cursor(back.next_cursor.unwrap()),
        3,
        1 << 20,
    )
    .unwrap();
    assert_eq!(
        (again.content.as_str(), again.start_line),
        ("6\n7\n8\n", Some(6))
    );
});

// A file too large to count cheaply: a page read from its end has no line
// numbers until something has read the file to its end.
fs_test!(
    large_files_say_when_line_numbers_are_unknown,
    |t, resolver| {
        let count = 100_000u64;
        let text: String = (1..=count).map(|i| format!("line {i:06}\n")).collect();
        assert!(text.len() > 1 << 20);
        t.file("big.log", &text);
        let w = open(t, resolver);
        let tail = page(&w, "big.log", PageStart::Tail, 3, 1 << 20).unwrap();
        assert_eq!(tail.content, "line 099998\nline 099999\nline 100000\n");
        assert_eq!(
            (
                tail.start_line,
                tail.end_line,
                tail.from_end,
                tail.lines_returned
            ),
            (None, None, Some(0), 3)
        );
        assert_eq!(tail.next_start_line, None);
        let before = page(
            &w,
            "big.log",
            PageStart::Cursor(tail.prev_cursor.unwrap()),
            2,
            1 << 20,
        )
        .unwrap();
        assert_eq!(before.content, "line 099996\nline 099997\n");
        assert_eq!((before.start_line, before.from_end), (None, Some(3)));
        // Forward again from there, still counted from the end.
        let next = page(
            &w,
            "big.log",
            PageStart::Cursor(before.next_cursor.unwrap()),
            2,
            1 << 20,
        )
        .unwrap();
        assert_eq!(
            (next.content.as_str(), next.from_end),
            ("line 099998\nline 099999\n", Some(1))
        );

        // A read past the end counts the file; from then on both are known.
        let past = page(&w, "big.log", PageStart::Line(count + 5), 2, 1 << 20).unwrap();
        assert_eq!(past.content, "");
        let tail = page(&w, "big.log", PageStart::Tail, 3, 1 << 20).unwrap();
        assert_eq!(
            (tail.start_line, tail.end_line, tail.from_end),
            (Some(count - 2), Some(count), Some(0))
        );
        assert_eq!(
            page(&w, "big.log", PageStart::Line(10), 1, 1 << 20)
                .unwrap()
                .from_end,
            Some(count - 10)
        );
        // A change forgets the count.
        std::fs::OpenOptions::new()
            .append(true)
            .open(t.path("big.log"))
            .unwrap()
            .write_all(b"one more\n")
            .unwrap();
        let tail = page(&w, "big.log", PageStart::Tail, 1, 1 << 20).unwrap();
        assert_eq!(
            (tail.content.as_str(), tail.start_line),
            ("one more\n", None)
        );
    }
);

// The line count learnt from a read past the end is right whether or not
// the last line has a newline.
fs_test!(
    the_learnt_line_count_includes_an_open_last_line,
    |t, resolver| {
        let count = 100_000u64;
        let mut text: String = (1..=count).map(|i| format!("line {i:06}\n")).collect();
        text.push_str("open end");
        t.file("big.log", &text);
        let w = open(t, resolver);
        let past = page(&w, "big.log", PageStart::Line(count + 2), 1, 1 << 20).unwrap();
        assert_eq!(past.content, "");
        let tail = page(&w, "big.log", PageStart::Tail, 2, 1 << 20).unwrap();
        assert_eq!(tail.content, "line 100000\nopen end");
        assert_eq!(
            (tail.start_line, tail.end_line, tail.from_end),
            (Some(count), Some(count + 1), Some(0))
        );
    }
);

// Pages by line number of a file large enough to be indexed are the same
// lines, in any order of reads, before and after the file changes.
fs_test!(indexed_line_reads_match_the_file, |t, resolver| {
    let count = 120_000u64;
    let text: String = (1..=count)
        .map(|i| format!("{i} {}\n", "x".repeat((i % 17) as usize)))
        .collect();
    t.file("big.log", &text);
    let w = open(t, resolver);
    let lines = reference_lines(text.as_bytes());
    for line in [100_000u64, 3, 99_999, 50_001, 119_999, 1, 100_001, 70_000] {
        let p = page(&w, "big.log", PageStart::Line(line), 3, 1 << 20).unwrap();
        let want = lines[line as usize - 1..(line as usize + 2).min(lines.len())].concat();
        assert_eq!(p.content, want, "line {line}");
        assert_eq!(p.start_line, Some(line));
    }
    // Rewritten with other line lengths: the old checkpoints must not be
    // used.
    let text: String = (1..=count).map(|i| format!("{i}\n")).collect();
    std::fs::write(t.path("big.log"), &text).unwrap();
    let lines = reference_lines(text.as_bytes());
    for line in [99_999u64, 50_001] {
        let p = page(&w, "big.log", PageStart::Line(line), 2, 1 << 20).unwrap();
        assert_eq!(
            p.content,
            lines[line as usize - 1..line as usize + 1].concat()
        );
    }
});

mod properties {
    use proptest::prelude::*;
    use serverfs_fs::{PageStart, Resolver};
    use serverfs_testkit::TempWorkdir;

    use super::{page, reference_lines};
    use crate::harness::open;

    fn text() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            Just(String::new()),
            "[a-c]{1,6}",
            "[a-c ]{0,30}",
            Just("é€".to_owned()),
        ];
        (
            any::<bool>(),
            proptest::collection::vec((line, any::<bool>()), 0..40),
            any::<bool>(),
        )
            .prop_map(|(bom, lines, open_end)| {
                let mut out = if bom {
                    b"\xEF\xBB\xBF".to_vec()
                } else {
                    Vec::new()
                };
                let n = lines.len();
                for (i, (text, crlf)) in lines.into_iter().enumerate() {
                    out.extend_from_slice(text.as_bytes());
                    if !(open_end && i + 1 == n) {
                        out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                    }
                }
                out
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            // PROPTEST_CASES (the soak's long profile) raises it.
            cases: ProptestConfig::default().cases.max(200),
            ..ProptestConfig::default()
        })]

        /// Forwards by cursor, backwards from the tail by cursor, and by
        /// line number: every way of paging sees exactly the file's lines,
        /// with consistent numbers, whatever the page limits.
        #[test]
        fn property_every_way_of_paging_sees_the_same_lines(
            text in text(),
            max_lines in 1u64..6,
            max_bytes in 40u64..120,
        ) {
            let t = TempWorkdir::new();
            t.file("t.txt", &text);
            let w = open(&t, Resolver::Auto);
            let lines = reference_lines(&text);
            let total = lines.len() as u64;

            let mut forward = Vec::new();
            let mut start = PageStart::Line(1);
            loop {
                let p = page(&w, "t.txt", start, max_lines, max_bytes).unwrap();
                let first = p.start_line.unwrap();
                prop_assert_eq!(p.lines_returned, p.end_line.unwrap() + 1 - first);
                let by_line = page(&w, "t.txt", PageStart::Line(first), max_lines, max_bytes).unwrap();
                prop_assert_eq!(&by_line.content, &p.content);
                forward.push(p.content);
                match p.next_cursor {
                    Some(c) => start = PageStart::Cursor(c),
                    None => break,
                }
            }
            prop_assert_eq!(forward.concat(), lines.concat());

            let mut backward = Vec::new();
            let mut start = PageStart::Tail;
            loop {
                let p = page(&w, "t.txt", start, max_lines, max_bytes).unwrap();
                let (first, end) = (p.start_line.unwrap(), p.end_line.unwrap());
                prop_assert_eq!(&p.content, &lines[first as usize - 1..end as usize].concat());
                if p.from_end.is_some() || end == total {
                    prop_assert_eq!(p.from_end, Some(total - end));
                }
                backward.push(p.content);
                match p.prev_cursor {
                    Some(c) => start = PageStart::Cursor(c),
                    None => break,
                }
            }
            backward.reverse();
            prop_assert_eq!(backward.concat(), lines.concat());
        }
    }
}
