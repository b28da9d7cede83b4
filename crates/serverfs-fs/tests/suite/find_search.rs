//! `Workdir::find_files` and `Workdir::search_text`, every test once per
//! resolver: glob semantics of both tools, ignore files, hidden / deny /
//! reserved filtering, symlinks and special files, binary and oversized
//! files, line handling, regex mode, context lines, every cap, and the
//! directory-for-symlink swap race.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serverfs_fs::{
    Control, FindLimits, FindResult, NamePattern, PathPolicy, SearchLimits, SearchQuery,
    SearchResult, Workdir,
};
use serverfs_protocol::ErrorCode;
use serverfs_testkit::{OUTSIDE_SECRET, TempWorkdir};

use crate::harness::{open, open_with};

/// Generous find limits: nothing in these trees comes near them.
const FIND: FindLimits = FindLimits {
    limit: 100,
    max_entries: 200_000,
    threads: 3,
};

/// The server's production caps, with a timeout no test tree reaches.
const LIMITS: SearchLimits = SearchLimits {
    limit: 100,
    max_line_bytes: 2048,
    max_response_bytes: 1 << 20,
    max_file_bytes: 50 << 20,
    max_entries: 200_000,
    timeout: Duration::from_secs(300),
    threads: 3,
    regex_size_limit: 1 << 20,
};

/// Hidden names refused, default credential rules on: the server default.
fn strict(t: &TempWorkdir, resolver: serverfs_fs::Resolver) -> Workdir {
    open_with(t, resolver, PathPolicy::new(false, true, &[]).unwrap())
}

fn find_in(
    w: &Workdir,
    path: &str,
    pattern: &str,
    limits: FindLimits,
) -> Result<FindResult, ErrorCode> {
    let pattern = NamePattern::new(pattern).map_err(|e| e.code())?;
    let path = w.parse_path(path).map_err(|e| e.code())?;
    w.find_files(&path, &pattern, limits, &Control::new())
        .map_err(|e| e.code())
}

fn paths(result: &FindResult) -> Vec<String> {
    result.matches.iter().map(|p| p.as_string()).collect()
}

/// The paths found, asserting the find was complete.
fn found(w: &Workdir, path: &str, pattern: &str) -> Vec<String> {
    let result = find_in(w, path, pattern, FIND)
        .unwrap_or_else(|code| panic!("find {pattern:?} under {path:?}: {code:?}"));
    assert_eq!(
        (result.truncated, result.truncated_reason),
        (false, None),
        "find {pattern:?} under {path:?}"
    );
    paths(&result)
}

/// A literal, case-sensitive query with no glob, context or ignore override.
fn q(query: &str) -> SearchQuery {
    SearchQuery {
        query: query.to_owned(),
        regex: false,
        case_sensitive: true,
        glob: None,
        context_lines: 0,
        include_ignored: false,
    }
}

fn with_glob(query: &str, glob: &str) -> SearchQuery {
    SearchQuery {
        glob: Some(glob.to_owned()),
        ..q(query)
    }
}

fn search_in(
    w: &Workdir,
    path: &str,
    query: &SearchQuery,
    limits: SearchLimits,
) -> Result<SearchResult, ErrorCode> {
    let path = w.parse_path(path).map_err(|e| e.code())?;
    w.search_text(&path, query, limits, &Control::new())
        .map_err(|e| e.code())
}

/// A search that must succeed and cover everything.
fn searched(w: &Workdir, path: &str, query: &SearchQuery) -> SearchResult {
    let result = search_in(w, path, query, LIMITS)
        .unwrap_or_else(|code| panic!("search {query:?} under {path:?}: {code:?}"));
    assert_eq!(
        (result.truncated, result.truncated_reason),
        (false, None),
        "search {query:?} under {path:?}"
    );
    result
}

/// `(path, line, text)` of every match.
fn hits(result: &SearchResult) -> Vec<(String, u64, String)> {
    result
        .matches
        .iter()
        .map(|m| (m.path.as_string(), m.line, m.text.clone()))
        .collect()
}

/// The distinct files with a match, sorted.
fn hit_files(result: &SearchResult) -> Vec<String> {
    let set: BTreeSet<String> = result.matches.iter().map(|m| m.path.as_string()).collect();
    set.into_iter().collect()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

// ---------------------------------------------------------------------------
// Glob semantics
// ---------------------------------------------------------------------------

/// Sixteen files, each holding `needle`, in byte order of their paths.
const GLOB_TREE: &[&str] = &[
    "Makefile",
    "README.md",
    "a.b.c",
    "build.rs",
    "docs/a.md",
    "docs/b.MD",
    "docs/sub/c.md",
    "notes.txt",
    "pkg/test_3.py",
    "src/lib.rs",
    "src/main.rs",
    "src/util/deep/x.rs",
    "src/util/helpers.rs",
    "src/util/mod.rs",
    "test_1.py",
    "test_22.py",
];

fn glob_tree(t: &TempWorkdir) {
    for path in GLOB_TREE {
        t.file(path, format!("needle in {path}\n"));
    }
}

fn all_but(excluded: &[&str]) -> Vec<String> {
    GLOB_TREE
        .iter()
        .filter(|p| !excluded.contains(p))
        .map(|p| (*p).to_owned())
        .collect()
}

fs_test!(find_glob_semantics_table, |t, resolver| {
    glob_tree(t);
    let w = strict(t, resolver);
    let all_rs: &[&str] = &[
        "build.rs",
        "src/lib.rs",
        "src/main.rs",
        "src/util/deep/x.rs",
        "src/util/helpers.rs",
        "src/util/mod.rs",
    ];
    let src: &[&str] = &all_rs[1..];
    // (scope, pattern, exact sorted result)
    let table: &[(&str, &str, &[&str])] = &[
        // A pattern without `/` matches names at any depth.
        ("", "*.rs", all_rs),
        ("", "*.md", &["README.md", "docs/a.md", "docs/sub/c.md"]),
        ("", "*.txt", &["notes.txt"]),
        ("", "*.c", &["a.b.c"]),
        ("", "README.md", &["README.md"]),
        ("", "Makefile", &["Makefile"]),
        // Case-sensitive.
        ("", "readme.md", &[]),
        ("", "*.MD", &["docs/b.MD"]),
        ("", "*.RS", &[]),
        // `?`, classes, negated classes, ranges, POSIX classes.
        ("", "test_?.py", &["pkg/test_3.py", "test_1.py"]),
        (
            "",
            "test_*.py",
            &["pkg/test_3.py", "test_1.py", "test_22.py"],
        ),
        ("", "test_[12].py", &["test_1.py"]),
        ("", "test_[!1].py", &["pkg/test_3.py"]),
        ("", "test_[0-9][0-9].py", &["test_22.py"]),
        ("", "[A-Z]*", &["Makefile", "README.md"]),
        ("", "[[:upper:]]*", &["Makefile", "README.md"]),
        ("", "?????.rs", &["build.rs"]),
        // Braces.
        (
            "",
            "*.{md,MD}",
            &["README.md", "docs/a.md", "docs/b.MD", "docs/sub/c.md"],
        ),
        ("", "{Makefile,build.rs}", &["Makefile", "build.rs"]),
        // Directories are never results, whatever their name.
        ("", "src", &[]),
        ("", "util", &[]),
        ("", "sub", &[]),
        // With `/` the whole workdir-relative path is matched.
        ("", "src/*.rs", &["src/lib.rs", "src/main.rs"]),
        ("", "*/*.md", &["docs/a.md"]),
        ("", "*/*/*.md", &["docs/sub/c.md"]),
        ("", "docs/*", &["docs/a.md", "docs/b.MD"]),
        (
            "",
            "src/util/*",
            &["src/util/helpers.rs", "src/util/mod.rs"],
        ),
        // `**` spans directories, `**/` also zero of them.
        ("", "src/**", src),
        ("", "src/**/*.rs", src),
        ("", "**/*.rs", all_rs),
        ("", "**/mod.rs", &["src/util/mod.rs"]),
        ("", "**/sub/*", &["docs/sub/c.md"]),
        ("", "docs/**/*.md", &["docs/a.md", "docs/sub/c.md"]),
        ("", "src/**/deep/*.rs", &["src/util/deep/x.rs"]),
        ("", "docs/**/*.MD", &["docs/b.MD"]),
        // `path` scopes the walk; path patterns stay workdir-relative.
        ("pkg", "*.py", &["pkg/test_3.py"]),
        ("docs", "*.md", &["docs/a.md", "docs/sub/c.md"]),
        (
            "src/util",
            "*",
            &[
                "src/util/deep/x.rs",
                "src/util/helpers.rs",
                "src/util/mod.rs",
            ],
        ),
        ("src", "src/*.rs", &["src/lib.rs", "src/main.rs"]),
        ("src", "util/*.rs", &[]),
        ("src", "*.md", &[]),
        ("./docs/../src/", "**/x.rs", &["src/util/deep/x.rs"]),
    ];
    assert!(table.len() >= 20);
    let mut failures = Vec::new();
    for (scope, pattern, want) in table {
        let got = found(&w, scope, pattern);
        if got != strings(want) {
            failures.push(format!(
                "{pattern:?} under {scope:?}: want {want:?}, got {got:?}"
            ));
        }
    }
    // Everything, two ways.
    assert_eq!(found(&w, "", "*"), strings(GLOB_TREE));
    assert_eq!(found(&w, ".", "**"), strings(GLOB_TREE));
    assert!(
        failures.is_empty(),
        "{resolver:?}:\n{}",
        failures.join("\n")
    );

    for bad in ["[abc", "{a,b", "", "src/[", "a{b,{c}"] {
        assert_eq!(
            find_in(&w, "", bad, FIND).map(|r| paths(&r)),
            Err(ErrorCode::InvalidPattern),
            "{bad:?}"
        );
    }
    assert_eq!(
        find_in(&w, "notes.txt", "*", FIND).map(|r| paths(&r)),
        Err(ErrorCode::NotADirectory)
    );
    assert_eq!(
        find_in(&w, "missing", "*", FIND).map(|r| paths(&r)),
        Err(ErrorCode::PathNotFound)
    );
    assert_eq!(
        find_in(&w, "../outside", "*", FIND).map(|r| paths(&r)),
        Err(ErrorCode::PathOutsideWorkdir)
    );
});

fs_test!(search_glob_filter_table, |t, resolver| {
    glob_tree(t);
    let w = strict(t, resolver);
    // (search root, glob, files with a match)
    let table: Vec<(&str, &str, Vec<String>)> = vec![
        // Without `/`: the file name, at any depth.
        (
            "",
            "*.md",
            strings(&["README.md", "docs/a.md", "docs/sub/c.md"]),
        ),
        ("", "*.MD", strings(&["docs/b.MD"])),
        (
            "",
            "*.{md,MD}",
            strings(&["README.md", "docs/a.md", "docs/b.MD", "docs/sub/c.md"]),
        ),
        ("", "test_[!1].py", strings(&["pkg/test_3.py"])),
        (
            "",
            "{Makefile,notes.txt}",
            strings(&["Makefile", "notes.txt"]),
        ),
        ("", "nothing-*", vec![]),
        // With `/`: the path relative to the search root, components aligned.
        ("", "docs/*.md", strings(&["docs/a.md"])),
        (
            "",
            "docs/**",
            strings(&["docs/a.md", "docs/b.MD", "docs/sub/c.md"]),
        ),
        (
            "",
            "**/*.py",
            strings(&["pkg/test_3.py", "test_1.py", "test_22.py"]),
        ),
        ("", "*/*.py", strings(&["pkg/test_3.py"])),
        ("docs", "*.md", strings(&["docs/a.md", "docs/sub/c.md"])),
        ("docs", "docs/*.md", vec![]),
        ("docs", "sub/*.md", strings(&["docs/sub/c.md"])),
        ("docs", "*.MD", strings(&["docs/b.MD"])),
        (
            "src",
            "util/*",
            strings(&["src/util/helpers.rs", "src/util/mod.rs"]),
        ),
        ("src", "*/*/*.rs", strings(&["src/util/deep/x.rs"])),
        ("src", "src/*.rs", vec![]),
        // A leading `!` excludes.
        (
            "",
            "!*.rs",
            all_but(&[
                "build.rs",
                "src/lib.rs",
                "src/main.rs",
                "src/util/deep/x.rs",
                "src/util/helpers.rs",
                "src/util/mod.rs",
            ]),
        ),
        (
            "",
            "!src/**",
            all_but(&[
                "src/lib.rs",
                "src/main.rs",
                "src/util/deep/x.rs",
                "src/util/helpers.rs",
                "src/util/mod.rs",
            ]),
        ),
        (
            "",
            "!**/*.md",
            all_but(&["README.md", "docs/a.md", "docs/sub/c.md"]),
        ),
        ("src", "!util/**", strings(&["src/lib.rs", "src/main.rs"])),
        ("docs", "!*.md", strings(&["docs/b.MD"])),
    ];
    let mut failures = Vec::new();
    for (root, glob, want) in &table {
        let got = hit_files(&searched(&w, root, &with_glob("needle", glob)));
        if &got != want {
            failures.push(format!(
                "{glob:?} under {root:?}: want {want:?}, got {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{resolver:?}:\n{}",
        failures.join("\n")
    );
    // No glob: everything.
    assert_eq!(
        hit_files(&searched(&w, "", &q("needle"))),
        strings(GLOB_TREE)
    );
    for bad in ["[", "!{a", "src/[x"] {
        assert_eq!(
            search_in(&w, "", &with_glob("needle", bad), LIMITS).map(|r| hits(&r)),
            Err(ErrorCode::InvalidPattern),
            "{bad:?}"
        );
    }
});

// ---------------------------------------------------------------------------
// Ignore files and VCS directories
// ---------------------------------------------------------------------------

fn ignore_tree(t: &TempWorkdir) {
    let needle = |path: &str| format!("needle in {path}\n");
    t.file(".ignore", "*.log\n!keep.log\nignored_dir/\n");
    for path in [
        "a.log",
        "keep.log",
        "ignored_dir/x.txt",
        "top.txt",
        "plain/y.txt",
        "nested/b.log",
        "nested/c.log",
        "repo/a.tmp",
        "repo/keep.tmp",
        "repo/rootonly.txt",
        "repo/build/out.txt",
        "repo/x.log",
        "repo/src/rootonly.txt",
        "repo/src/special.tmp",
        "repo/src/other.tmp",
        "repo/src/x.gen",
        "repo/src/main.txt",
        "repo/.git/config",
        "repo/.git/HEAD",
        "vcs/.hg/store.txt",
        "vcs/.svn/entries",
        "vcs/sub/.git/objects/obj",
        "vcs/ok.txt",
    ] {
        t.file(path, needle(path));
    }
    // Not inside a git repository: inert.
    t.file("plain/.gitignore", "*.txt\n");
    // Deeper rules win over the root's.
    t.file("nested/.ignore", "!b.log\n");
    // Inside a repository (`repo/.git` exists): honoured, anchored patterns
    // included; `.ignore` beats `.gitignore` in the same directory.
    t.file("repo/.gitignore", "*.tmp\nbuild/\n/rootonly.txt\n");
    t.file("repo/.ignore", "!keep.tmp\n");
    t.file("repo/src/.gitignore", "!special.tmp\n*.gen\n");
}

/// What a default search sees in [`ignore_tree`].
const NOT_IGNORED: &[&str] = &[
    "keep.log",
    "nested/b.log",
    "plain/y.txt",
    "repo/keep.tmp",
    "repo/src/main.txt",
    "repo/src/rootonly.txt",
    "repo/src/special.tmp",
    "top.txt",
    "vcs/ok.txt",
];

/// Everything outside VCS directories.
const ALL_BUT_VCS: &[&str] = &[
    "a.log",
    "ignored_dir/x.txt",
    "keep.log",
    "nested/b.log",
    "nested/c.log",
    "plain/y.txt",
    "repo/a.tmp",
    "repo/build/out.txt",
    "repo/keep.tmp",
    "repo/rootonly.txt",
    "repo/src/main.txt",
    "repo/src/other.tmp",
    "repo/src/rootonly.txt",
    "repo/src/special.tmp",
    "repo/src/x.gen",
    "repo/x.log",
    "top.txt",
    "vcs/ok.txt",
];

fs_test!(ignore_files_and_vcs_directories, |t, resolver| {
    ignore_tree(t);
    // Hidden names allowed, so only the VCS rule keeps `.git` out.
    let w = open(t, resolver);
    let result = searched(&w, "", &q("needle"));
    assert_eq!(hit_files(&result), strings(NOT_IGNORED));
    // Ignored files are not opened at all, so not counted; the ignore files
    // themselves are searched (hidden names are allowed here).
    assert_eq!(result.files_skipped, 0);

    let everything = SearchQuery {
        include_ignored: true,
        ..q("needle")
    };
    let result = searched(&w, "", &everything);
    assert_eq!(hit_files(&result), strings(ALL_BUT_VCS));

    // The ignore files are data like any other (and hidden names are
    // allowed): they can be searched, they just hold no needle.
    assert_eq!(
        hit_files(&searched(&w, "", &q("!keep.tmp"))),
        strings(&["repo/.ignore"])
    );

    // VCS directories are never searched, even named explicitly by a glob.
    for glob in ["config", "**/.git/**", "HEAD", "*"] {
        let query = SearchQuery {
            include_ignored: true,
            glob: Some(glob.to_owned()),
            ..q("needle")
        };
        let got = hit_files(&searched(&w, "", &query));
        assert!(
            got.iter()
                .all(|p| !p.contains(".git/") && !p.contains(".hg/") && !p.contains(".svn/")),
            "{glob:?}: {got:?}"
        );
    }

    // find_files has no ignore handling and no VCS exclusion.
    assert_eq!(
        found(&w, "", "*.log"),
        strings(&[
            "a.log",
            "keep.log",
            "nested/b.log",
            "nested/c.log",
            "repo/x.log"
        ])
    );
    assert_eq!(
        found(&w, "", "**/.git/*"),
        strings(&["repo/.git/HEAD", "repo/.git/config"])
    );
    assert_eq!(
        found(&w, "vcs", "*"),
        strings(&[
            "vcs/.hg/store.txt",
            "vcs/.svn/entries",
            "vcs/ok.txt",
            "vcs/sub/.git/objects/obj"
        ])
    );

    // With hidden names refused, `.ignore` files still apply (they are
    // read by the walker, not shown to the client).
    let w = strict(t, resolver);
    assert_eq!(
        hit_files(&searched(&w, "", &q("needle"))),
        strings(NOT_IGNORED)
    );
});

// A search scoped to a sub-directory applies the same ignore rules as a
// search of the whole workdir: whether a file is searched must not depend
// on where the walk started. `repo/src` lies inside a repository (`repo/.git`)
// whichever directory the search starts at, so `repo/src/.gitignore` and
// `repo/.gitignore` apply; the root `.ignore` applies "everywhere", so also
// to a search of `repo` or `nested` (ripgrep reads the ignore files of the
// search root's ancestors too). Directories that are themselves ignored are
// not used as roots here: naming one explicitly is a request to search it.
fs_test!(scoped_search_keeps_ignore_rules, |t, resolver| {
    ignore_tree(t);
    let w = open(t, resolver);
    let whole = searched(&w, "", &q("needle"));
    let mut failures = Vec::new();
    for scope in ["repo", "repo/src", "nested", "vcs"] {
        let prefix = format!("{scope}/");
        let want: Vec<String> = hit_files(&whole)
            .into_iter()
            .filter(|p| p.starts_with(&prefix))
            .collect();
        let got = hit_files(&searched(&w, scope, &q("needle")));
        if got != want {
            failures.push(format!("scoped to {scope:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{resolver:?}:\n{}",
        failures.join("\n")
    );
});

// `.git`, `.hg` and `.svn` are never searched, not even when the caller
// names one (or a directory inside one) as the search root.
fs_test!(
    vcs_directory_as_search_root_is_not_searched,
    |t, resolver| {
        ignore_tree(t);
        let w = open(t, resolver);
        let everything = SearchQuery {
            include_ignored: true,
            ..q("needle")
        };
        let mut failures = Vec::new();
        for root in ["repo/.git", "vcs/.hg", "vcs/.svn", "vcs/sub/.git/objects"] {
            // Refusing the root would do as well as searching nothing.
            if let Ok(result) = search_in(&w, root, &everything, LIMITS)
                && !result.matches.is_empty()
            {
                failures.push(format!("{root}: {:?}", hit_files(&result)));
            }
        }
        assert!(
            failures.is_empty(),
            "{resolver:?}:\n{}",
            failures.join("\n")
        );
    }
);

// ---------------------------------------------------------------------------
// Hidden, denied and reserved names
// ---------------------------------------------------------------------------

fn policy_tree(t: &TempWorkdir) {
    for path in [
        "visible.txt",
        ".hidden.txt",
        ".hdir/inner.txt",
        "dir/.dot/x.txt",
        "dir/ok.txt",
        "id_rsa",
        "keys/server.pem",
        "app.log",
        "logs/today.log",
        "private/notes.txt",
        "docs/secret/s.txt",
        "docs/ok.txt",
        ".serverfs-tmp-abc",
        "dir/.serverfs-tmp-1/x.txt",
        "dir/.serverfs-tmp-2",
        ".serverfs-disabled",
        "dir/.serverfs-disabled",
    ] {
        t.file(path, format!("needle in {path}\n"));
    }
}

fs_test!(
    hidden_denied_and_reserved_never_found_or_searched,
    |t, resolver| {
        policy_tree(t);
        let everything = SearchQuery {
            include_ignored: true,
            ..q("needle")
        };

        // Default policy: hidden refused, credential rules on.
        let w = strict(t, resolver);
        let want = strings(&[
            "app.log",
            "dir/ok.txt",
            "docs/ok.txt",
            "docs/secret/s.txt",
            "logs/today.log",
            "private/notes.txt",
            "visible.txt",
        ]);
        assert_eq!(found(&w, "", "*"), want);
        assert_eq!(hit_files(&searched(&w, "", &everything)), want);
        for pattern in ["*.pem", "id_rsa", ".*", ".serverfs-*", "**/.dot/*", "x.txt"] {
            assert_eq!(found(&w, "", pattern), Vec::<String>::new(), "{pattern}");
        }
        assert_eq!(
            find_in(&w, ".hdir", "*", FIND).map(|r| paths(&r)),
            Err(ErrorCode::HiddenPathNotAllowed)
        );
        assert_eq!(
            search_in(&w, "keys/server.pem", &q("needle"), LIMITS).map(|r| hits(&r)),
            Err(ErrorCode::DeniedPath)
        );

        // Hidden allowed, operator deny globs (name, directory, subtree).
        let extra = strings(&["*.log", "private", "docs/secret/**"]);
        let w = open_with(t, resolver, PathPolicy::new(true, true, &extra).unwrap());
        let want = strings(&[
            ".hdir/inner.txt",
            ".hidden.txt",
            "dir/.dot/x.txt",
            "dir/ok.txt",
            "docs/ok.txt",
            "visible.txt",
        ]);
        assert_eq!(found(&w, "", "*"), want);
        assert_eq!(hit_files(&searched(&w, "", &everything)), want);
        for pattern in [
            "*.log",
            "*.pem",
            "notes.txt",
            "s.txt",
            ".serverfs-*",
            "*tmp*",
        ] {
            assert_eq!(found(&w, "", pattern), Vec::<String>::new(), "{pattern}");
        }
        for (path, code) in [
            ("private", ErrorCode::DeniedPath),
            ("docs/secret", ErrorCode::DeniedPath),
            ("logs/today.log", ErrorCode::DeniedPath),
            ("dir/.serverfs-tmp-1", ErrorCode::ReservedPath),
        ] {
            assert_eq!(
                find_in(&w, path, "*", FIND).map(|r| paths(&r)),
                Err(code),
                "find under {path}"
            );
            assert_eq!(
                search_in(&w, path, &everything, LIMITS).map(|r| hits(&r)),
                Err(code),
                "search under {path}"
            );
        }
        // Reserved names stay invisible even with every rule relaxed.
        let w = open_with(t, resolver, PathPolicy::new(true, false, &[]).unwrap());
        let got = found(&w, "", "*");
        assert!(got.iter().all(|p| !p.contains(".serverfs-")), "{got:?}");
        assert_eq!(got.len(), 12, "{got:?}");
        let got = hit_files(&searched(&w, "", &everything));
        assert!(got.iter().all(|p| !p.contains(".serverfs-")), "{got:?}");
        assert_eq!(got.len(), 12, "{got:?}");
    }
);

// ---------------------------------------------------------------------------
// Symlinks and special files
// ---------------------------------------------------------------------------

fs_test!(
    symlinks_never_followed_and_fifos_never_block,
    |t, resolver| {
        std::fs::write(t.outside().join("needle.txt"), "needle OUTSIDE\n").unwrap();
        std::fs::write(t.outside().join("ignore-all"), "*\n").unwrap();
        t.file("real/inside.txt", "needle inside\n")
            // Ignore files are read with the same care: a symlinked one is
            // not followed (it would ignore everything), a FIFO one does not
            // block.
            .symlink(".ignore", t.outside().join("ignore-all"))
            .dir("real/.git")
            .fifo("real/.gitignore")
            .symlink("link-dir-in", "real")
            .symlink("link-dir-out", t.outside())
            .symlink("link-file-in", "real/inside.txt")
            .symlink("link-file-out", t.outside().join("needle.txt"))
            .symlink("link-secret", t.outside().join("secret.txt"))
            .symlink("real/up", "..")
            .symlink("real/loop", "loop")
            .symlink("dangling", "nope")
            .fifo("fifo")
            .fifo("real/fifo.txt");
        let _socket = t.socket("sock");
        for policy in [
            PathPolicy::new(false, true, &[]).unwrap(),
            PathPolicy::new(true, false, &[]).unwrap(),
        ] {
            let w = open_with(t, resolver, policy);
            // Only the one real regular file, whatever the pattern.
            for pattern in ["*", "**", "**/*.txt", "link-*", "inside.txt", "*secret*"] {
                let got = found(&w, "", pattern);
                let want: &[&str] = if matches!(pattern, "*" | "**" | "**/*.txt" | "inside.txt") {
                    &["real/inside.txt"]
                } else {
                    &[]
                };
                assert_eq!(got, strings(want), "{resolver:?} {pattern}");
            }
            let everything = SearchQuery {
                include_ignored: true,
                ..q("needle")
            };
            let result = searched(&w, "", &everything);
            assert_eq!(
                hits(&result),
                vec![("real/inside.txt".to_owned(), 1, "needle inside".to_owned())]
            );
            assert_eq!((result.files_searched, result.files_skipped), (1, 0));
            for query in [OUTSIDE_SECRET, "OUTSIDE", "SECRET"] {
                assert_eq!(hits(&searched(&w, "", &q(query))), vec![], "{query}");
            }
            // A symlinked search root is refused, not followed.
            for root in ["link-dir-in", "link-dir-out", "real/up"] {
                assert_eq!(
                    search_in(&w, root, &q("needle"), LIMITS).map(|r| hits(&r)),
                    Err(ErrorCode::SymlinkNotAllowed),
                    "{root}"
                );
                assert_eq!(
                    find_in(&w, root, "*", FIND).map(|r| paths(&r)),
                    Err(ErrorCode::SymlinkNotAllowed),
                    "{root}"
                );
            }
        }
    }
);

// ---------------------------------------------------------------------------
// File content: binary, size, encodings, line endings, long lines
// ---------------------------------------------------------------------------

fs_test!(binary_oversize_and_line_handling, |t, resolver| {
    // The NUL sits past the searcher's first 64 KiB buffer: matches read
    // before it was seen must not be reported either.
    let mut late_nul = b"needle before a late NUL\n".to_vec();
    late_nul.extend(std::iter::repeat_n(b'x', 200 * 1024));
    late_nul.extend(b"\n\0needle after\n");
    // 7 ASCII bytes then two-byte characters: the 2048-byte cut falls in
    // the middle of one and must back off to a character boundary.
    let long = format!("needle!{}\n", "é".repeat(3000));
    t.file("bin_early.dat", b"needle\0binary\n")
        .file("bin_late.dat", &late_nul)
        .file("nonutf8.txt", b"needle \xff\xfe bad\nneedle good\n")
        .file("crlf.txt", "a\r\nneedle here\r\nb\r\n")
        .file("nofinal.txt", "x\nlast needle")
        .file("long.txt", &long)
        .file("empty.txt", "")
        .file("latin1.txt", b"caf\xe9 needle\n");
    // A name that is not UTF-8 cannot be named by a client: never reported.
    std::fs::write(
        t.root()
            .join(std::ffi::OsStr::from_bytes(b"bad\xffname.txt")),
        "needle\n",
    )
    .unwrap();
    let w = open(t, resolver);
    assert_eq!(found(&w, "", "bad*"), Vec::<String>::new());
    let result = searched(&w, "", &q("needle"));
    let want = vec![
        ("crlf.txt".to_owned(), 2, "needle here\r".to_owned()),
        ("nofinal.txt".to_owned(), 2, "last needle".to_owned()),
        ("nonutf8.txt".to_owned(), 2, "needle good".to_owned()),
    ];
    let got: Vec<_> = hits(&result)
        .into_iter()
        .filter(|(path, _, _)| path != "long.txt")
        .collect();
    assert_eq!(got, want);
    // The two binary files skipped; the other six searched.
    assert_eq!((result.files_searched, result.files_skipped), (6, 2));

    let long_hit = result
        .matches
        .iter()
        .find(|m| m.path.as_string() == "long.txt")
        .expect("long.txt matches");
    assert_eq!(long_hit.line, 1);
    assert!(long_hit.line_truncated);
    assert_eq!(long_hit.text.len(), 2047);
    assert!(long_hit.text.starts_with("needle!é"));
    assert!(long_hit.text.ends_with('é'));
    for m in &result.matches {
        assert_eq!(m.line_truncated, m.path.as_string() == "long.txt");
    }
    // A line of exactly the cap is not cut.
    t.file("cap.txt", format!("needle{}\n", "z".repeat(2048 - 6)));
    let cap = searched(&w, "", &with_glob("needle", "cap.txt"));
    assert_eq!(cap.matches.len(), 1);
    assert_eq!(cap.matches[0].text.len(), 2048);
    assert!(!cap.matches[0].line_truncated);

    // The size cap: a file of exactly the cap is searched, one byte more
    // is skipped and counted.
    let mut exact = b"needle exact\n".to_vec();
    exact.resize(1000, b'.');
    let mut over = b"needle over\n".to_vec();
    over.resize(1001, b'.');
    t.file("size/exact.txt", &exact)
        .file("size/over.txt", &over);
    let capped = SearchLimits {
        max_file_bytes: 1000,
        ..LIMITS
    };
    let result = search_in(&w, "size", &q("needle"), capped).unwrap();
    assert_eq!((result.truncated, result.truncated_reason), (false, None));
    assert_eq!(
        hits(&result),
        vec![("size/exact.txt".to_owned(), 1, "needle exact".to_owned())]
    );
    assert_eq!((result.files_searched, result.files_skipped), (1, 1));
    let result = searched(&w, "size", &q("needle"));
    assert_eq!(
        hit_files(&result),
        strings(&["size/exact.txt", "size/over.txt"])
    );
    assert_eq!((result.files_searched, result.files_skipped), (2, 0));
});

// ---------------------------------------------------------------------------
// Regex mode and case folding
// ---------------------------------------------------------------------------

fs_test!(regex_mode_and_case_folding, |t, resolver| {
    t.file(
        "a.txt",
        "neeedle7\nstart of line\nnot start\na.b\naxb\nNeedle Upper\nÉTÉ\nété\nneedle\n",
    );
    let w = open(t, resolver);
    let regex = |pattern: &str| SearchQuery {
        regex: true,
        ..q(pattern)
    };
    let lines = |result: &SearchResult| result.matches.iter().map(|m| m.line).collect::<Vec<_>>();
    assert_eq!(lines(&searched(&w, "", &regex(r"ne+dle\d"))), [1]);
    assert_eq!(lines(&searched(&w, "", &regex("^start"))), [2]);
    assert_eq!(lines(&searched(&w, "", &regex("^needle$"))), [9]);
    assert_eq!(lines(&searched(&w, "", &regex("a.b"))), [4, 5]);
    assert_eq!(lines(&searched(&w, "", &regex("(?i)needle"))), [6, 9]);
    // Literal mode: metacharacters are just text.
    assert_eq!(lines(&searched(&w, "", &q("a.b"))), [4]);
    assert_eq!(lines(&searched(&w, "", &q("^start"))), Vec::<u64>::new());
    assert_eq!(
        lines(&searched(&w, "", &q("(?i)needle"))),
        Vec::<u64>::new()
    );
    // Case: sensitive by default, Unicode-aware folding on request.
    assert_eq!(lines(&searched(&w, "", &q("NEEDLE"))), Vec::<u64>::new());
    let folded = |text: &str| SearchQuery {
        case_sensitive: false,
        ..q(text)
    };
    assert_eq!(lines(&searched(&w, "", &folded("NEEDLE"))), [6, 9]);
    assert_eq!(lines(&searched(&w, "", &folded("été"))), [7, 8]);
    assert_eq!(lines(&searched(&w, "", &q("été"))), [8]);
    let folded_regex = SearchQuery {
        case_sensitive: false,
        ..regex("^needle")
    };
    assert_eq!(lines(&searched(&w, "", &folded_regex)), [6, 9]);

    // Bad or oversized patterns are refused before any walk.
    for bad in [
        "(",
        "[z-a]",
        "a{2,1}",
        r"\p{NoSuchClass}",
        "a{1000}{1000}",
        r"\w{500}{500}",
    ] {
        assert_eq!(
            search_in(&w, "", &regex(bad), LIMITS).map(|r| hits(&r)),
            Err(ErrorCode::InvalidPattern),
            "{bad:?}"
        );
    }
});

// ---------------------------------------------------------------------------
// Context lines
// ---------------------------------------------------------------------------

fs_test!(context_lines_exact, |t, resolver| {
    // Matches ("M") on lines 1, 5, 6 and 10 of ten.
    let lines = ["M1", "a2", "a3", "a4", "M5", "M6", "a7", "a8", "a9", "M10"];
    t.file("ctx.txt", lines.join("\n") + "\n")
        .file("other.txt", "before\nM other\nafter\n");
    let w = open(t, resolver);
    let with_context = |n: usize| SearchQuery {
        context_lines: n,
        ..with_glob("M", "ctx.txt")
    };
    // Hand-written for one and two lines of context.
    let one = searched(&w, "", &with_context(1));
    let got: Vec<(u64, Vec<String>, Vec<String>)> = one
        .matches
        .iter()
        .map(|m| (m.line, m.context_before.clone(), m.context_after.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, strings(&[]), strings(&["a2"])),
            (5, strings(&["a4"]), strings(&["M6"])),
            (6, strings(&["M5"]), strings(&["a7"])),
            (10, strings(&["a9"]), strings(&[])),
        ]
    );
    let two = searched(&w, "", &with_context(2));
    let got: Vec<(u64, Vec<String>, Vec<String>)> = two
        .matches
        .iter()
        .map(|m| (m.line, m.context_before.clone(), m.context_after.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, strings(&[]), strings(&["a2", "a3"])),
            (5, strings(&["a3", "a4"]), strings(&["M6", "a7"])),
            (6, strings(&["a4", "M5"]), strings(&["a7", "a8"])),
            (10, strings(&["a8", "a9"]), strings(&[])),
        ]
    );
    // 0 to 5: exactly the neighbouring lines, clipped at the file's edges.
    for n in 0..=5usize {
        let result = searched(&w, "", &with_context(n));
        assert_eq!(result.matches.len(), 4);
        for m in &result.matches {
            let i = usize::try_from(m.line).unwrap() - 1;
            let before = strings(&lines[i.saturating_sub(n)..i]);
            let after = strings(&lines[i + 1..(i + 1 + n).min(lines.len())]);
            assert_eq!(m.text, lines[i]);
            assert_eq!(
                (&m.context_before, &m.context_after),
                (&before, &after),
                "line {} with {n} lines of context",
                m.line
            );
        }
    }
    // Context never crosses into another file.
    let other = searched(
        &w,
        "",
        &SearchQuery {
            context_lines: 5,
            ..with_glob("M other", "other.txt")
        },
    );
    assert_eq!(other.matches.len(), 1);
    assert_eq!(other.matches[0].context_before, strings(&["before"]));
    assert_eq!(other.matches[0].context_after, strings(&["after"]));
    // Context lines are cut like matched lines.
    t.file(
        "wide.txt",
        "0123456789abcdef\nM wide match\n0123456789abcdef\n",
    );
    let narrow = SearchLimits {
        max_line_bytes: 8,
        ..LIMITS
    };
    let wide = search_in(
        &w,
        "",
        &SearchQuery {
            context_lines: 1,
            ..with_glob("M wide", "wide.txt")
        },
        narrow,
    )
    .unwrap();
    assert_eq!(wide.matches.len(), 1);
    let m = &wide.matches[0];
    assert_eq!((m.text.as_str(), m.line_truncated), ("M wide m", true));
    assert_eq!(m.context_before, strings(&["01234567"]));
    assert_eq!(m.context_after, strings(&["01234567"]));
});

// ---------------------------------------------------------------------------
// Caps: every one ends in `truncated: true` with its reason, never an error
// ---------------------------------------------------------------------------

/// Five files with two matching lines each: ten matches in all.
fn ten_matches(t: &TempWorkdir) -> BTreeSet<(String, u64, String)> {
    let mut all = BTreeSet::new();
    for i in 0..5 {
        let path = format!("d{}/f{i}.txt", i % 2);
        t.file(&path, format!("needle {i}a\nplain\nneedle {i}b\n"));
        all.insert((path.clone(), 1, format!("needle {i}a")));
        all.insert((path, 3, format!("needle {i}b")));
    }
    all
}

fs_test!(search_limit_cap, |t, resolver| {
    let all = ten_matches(t);
    let w = open(t, resolver);
    // Exactly `limit` matches: complete, not truncated.
    let exact = search_in(
        &w,
        "",
        &q("needle"),
        SearchLimits {
            limit: 10,
            ..LIMITS
        },
    )
    .unwrap();
    assert_eq!((exact.truncated, exact.truncated_reason), (false, None));
    assert_eq!(hits(&exact).into_iter().collect::<BTreeSet<_>>(), all);
    // One more match than `limit`: `limit` of them, truncated.
    for limit in [9, 5, 1] {
        let cut = search_in(&w, "", &q("needle"), SearchLimits { limit, ..LIMITS }).unwrap();
        assert_eq!(
            (cut.truncated, cut.truncated_reason),
            (true, Some("limit")),
            "limit {limit}"
        );
        let got = hits(&cut);
        assert_eq!(got.len(), limit);
        assert!(got.iter().all(|h| all.contains(h)), "{got:?}");
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted, "returned matches are sorted");
    }
    // The same within one file.
    t.file("one/many.txt", "needle\n".repeat(10));
    let one = search_in(
        &w,
        "one",
        &q("needle"),
        SearchLimits {
            limit: 10,
            ..LIMITS
        },
    )
    .unwrap();
    assert_eq!((one.truncated, one.matches.len()), (false, 10));
    let one = search_in(&w, "one", &q("needle"), SearchLimits { limit: 9, ..LIMITS }).unwrap();
    assert_eq!(
        (one.truncated, one.truncated_reason, one.matches.len()),
        (true, Some("limit"), 9)
    );
    assert_eq!(
        one.matches.iter().map(|m| m.line).collect::<Vec<_>>(),
        (1..=9).collect::<Vec<u64>>()
    );
});

fs_test!(search_response_bytes_cap, |t, resolver| {
    let line = format!("needle {}", "x".repeat(93)); // 100 bytes
    for f in 0..4 {
        t.file(&format!("f{f}.txt"), format!("{line}\n").repeat(25));
    }
    let w = open(t, resolver);
    let limits = SearchLimits {
        max_response_bytes: 1000,
        ..LIMITS
    };
    let result = search_in(&w, "", &q("needle"), limits).unwrap();
    assert_eq!(
        (result.truncated, result.truncated_reason),
        (true, Some("response_bytes"))
    );
    assert!(!result.matches.is_empty() && result.matches.len() < 10);
    let bytes: usize = result
        .matches
        .iter()
        .map(|m| m.path.as_string().len() + m.text.len())
        .sum();
    assert!(bytes <= 1000, "{bytes} bytes returned");
    assert!(result.matches.iter().all(|m| m.text == line));
    // With context the budget fills sooner.
    let with_context = SearchQuery {
        context_lines: 5,
        ..q("needle")
    };
    let result = search_in(&w, "", &with_context, limits).unwrap();
    assert_eq!(
        (result.truncated, result.truncated_reason),
        (true, Some("response_bytes"))
    );
    assert!(result.matches.len() < 2, "{} matches", result.matches.len());
});

fs_test!(walk_limit_cap_in_both_tools, |t, resolver| {
    // 3 directories + 15 files = 18 entries below the root.
    for d in 0..3 {
        for f in 0..5 {
            t.file(&format!("d{d}/f{f}.txt"), "needle\n");
        }
    }
    let w = open(t, resolver);
    let find = |max_entries: u64| {
        find_in(
            &w,
            "",
            "*.txt",
            FindLimits {
                max_entries,
                ..FIND
            },
        )
        .unwrap()
    };
    let complete = find(18);
    assert_eq!((complete.truncated, complete.matches.len()), (false, 15));
    for max_entries in [17, 5, 1] {
        let cut = find(max_entries);
        assert_eq!(
            (cut.truncated, cut.truncated_reason),
            (true, Some("walk_limit")),
            "{max_entries}"
        );
        assert!(cut.matches.len() < 15);
    }
    let search = |max_entries: u64| {
        search_in(
            &w,
            "",
            &q("needle"),
            SearchLimits {
                max_entries,
                ..LIMITS
            },
        )
        .unwrap()
    };
    let complete = search(18);
    assert_eq!((complete.truncated, complete.matches.len()), (false, 15));
    for max_entries in [17, 5, 1] {
        let cut = search(max_entries);
        assert_eq!(
            (cut.truncated, cut.truncated_reason),
            (true, Some("walk_limit")),
            "{max_entries}"
        );
        assert!(cut.matches.len() < 15);
        assert!(cut.matches.iter().all(|m| m.text == "needle"));
    }
});

fs_test!(find_limit_cap, |t, resolver| {
    for i in 0..12 {
        t.file(&format!("d{}/m{i:02}.rs", i % 3), "");
    }
    t.file("other.txt", "");
    let w = open(t, resolver);
    let all = found(&w, "", "*.rs");
    assert_eq!(all.len(), 12);
    let exact = find_in(&w, "", "*.rs", FindLimits { limit: 12, ..FIND }).unwrap();
    assert_eq!(
        (exact.truncated, exact.truncated_reason, paths(&exact)),
        (false, None, all.clone())
    );
    for limit in [11, 3, 1] {
        let cut = find_in(&w, "", "*.rs", FindLimits { limit, ..FIND }).unwrap();
        // Complete walk, sorted, then cut: deterministic.
        assert_eq!(
            (cut.truncated, cut.truncated_reason, paths(&cut)),
            (true, Some("limit"), all[..limit].to_vec())
        );
    }
});

fs_test!(search_timeout_returns_partial_results, |t, resolver| {
    for d in 0..30 {
        for f in 0..100 {
            t.file(&format!("d{d:02}/f{f:03}.txt"), "needle\n");
        }
    }
    let w = open(t, resolver);
    let everything = SearchLimits {
        limit: 10_000,
        ..LIMITS
    };
    // A budget already spent: nothing is searched, and that is not an error.
    let zero = search_in(
        &w,
        "",
        &q("needle"),
        SearchLimits {
            timeout: Duration::ZERO,
            ..everything
        },
    )
    .unwrap();
    assert_eq!(
        (zero.truncated, zero.truncated_reason),
        (true, Some("timeout"))
    );
    assert!(zero.matches.is_empty());
    // A 1 ms budget over 3,000 files: whatever was found so far.
    let short = search_in(
        &w,
        "",
        &q("needle"),
        SearchLimits {
            timeout: Duration::from_millis(1),
            ..everything
        },
    )
    .unwrap();
    assert_eq!(
        (short.truncated, short.truncated_reason),
        (true, Some("timeout"))
    );
    assert!(short.matches.len() < 3000);
    assert!(
        short
            .matches
            .iter()
            .all(|m| m.text == "needle" && m.line == 1)
    );
    // The same search with time to spare finds all of them.
    let full = search_in(&w, "", &q("needle"), everything).unwrap();
    assert_eq!((full.truncated, full.matches.len()), (false, 3000));
});

// ---------------------------------------------------------------------------
// The swap race
// ---------------------------------------------------------------------------

// While one thread keeps replacing `swap/` with a symlink to the outside
// directory and back, searches and finds for a needle present both inside
// and outside must only ever report the inside file. `parked/` is inside the
// root so that a directory descriptor opened just before a swap still lies
// beneath the root (the debug-build escape check would rightly flag it
// otherwise).
fs_test!(swap_race_never_searches_outside, |t, resolver| {
    std::fs::write(t.outside().join("needle.txt"), "needle OUTSIDE\n").unwrap();
    t.file("swap/inside.txt", "needle inside\n").dir("parked");
    let w = open(t, resolver);
    let stop = Arc::new(AtomicBool::new(false));
    let (swap, parked, outside) = (t.path("swap"), t.path("parked/swap"), t.outside());
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&swap, &parked).unwrap();
                std::os::unix::fs::symlink(&outside, &swap).unwrap();
                std::thread::yield_now();
                std::fs::remove_file(&swap).unwrap();
                std::fs::rename(&parked, &swap).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let allowed = ["swap/inside.txt", "parked/swap/inside.txt"];
    let everything = SearchQuery {
        include_ignored: true,
        ..q("needle")
    };
    let mut seen = 0u32;
    let mut failure = None;
    for round in 0..300 {
        for root in ["", "swap"] {
            match search_in(&w, root, &everything, LIMITS) {
                Ok(result) => {
                    for m in &result.matches {
                        if !allowed.contains(&m.path.as_string().as_str())
                            || m.text != "needle inside"
                        {
                            failure.get_or_insert(format!("round {round}: {m:?}"));
                        }
                        seen += 1;
                    }
                }
                Err(
                    ErrorCode::SymlinkNotAllowed
                    | ErrorCode::PathNotFound
                    | ErrorCode::FileChangedDuringRead,
                ) if root == "swap" => {}
                Err(code) => {
                    failure
                        .get_or_insert(format!("round {round}: search under {root:?}: {code:?}"));
                }
            }
        }
        for query in [OUTSIDE_SECRET, "OUTSIDE"] {
            if let Ok(result) = search_in(&w, "", &q(query), LIMITS)
                && !result.matches.is_empty()
            {
                failure.get_or_insert(format!("round {round}: {:?}", result.matches));
            }
        }
        match find_in(&w, "", "*.txt", FIND) {
            Ok(result) => {
                for p in paths(&result) {
                    if !allowed.contains(&p.as_str()) {
                        failure.get_or_insert(format!("round {round}: found {p}"));
                    }
                }
            }
            Err(code) => {
                failure.get_or_insert(format!("round {round}: find: {code:?}"));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert_eq!(failure, None, "{resolver:?}");
    assert!(swaps > 0, "the swapper never ran");
    assert!(seen > 0, "the inside file was never found");
    eprintln!("{resolver:?}: {seen} inside matches, {swaps} swaps");
});
