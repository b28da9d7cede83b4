//! Unit tests of host-path redaction: the path form, the free-text token
//! rules, the structured walk, and a generated-input property run.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::json;

use serverfs_testkit::check_table;

use super::*;

const ROOT: &str = "/srv/work";
const CANONICAL: &str = "/mnt/data/work";
const W: &str = WORKDIR_MARKER;
const O: &str = OUTSIDE_MARKER;

fn redactor(roots: &[&str]) -> Redactor {
    Redactor::new(roots.iter().map(PathBuf::from))
}

fn work() -> Redactor {
    redactor(&[ROOT])
}

#[test]
fn path_form_of_absolute_paths() {
    let redactor = work();
    check_table(
        "absolute path form",
        |text| redactor.path(text),
        &[
            ("/srv/work", "."),
            ("/srv/work/", "."),
            ("/srv/work/.", "."),
            ("/srv//work//", "."),
            ("/srv/work/src/main.rs", "src/main.rs"),
            ("/srv/work/src/", "src"),
            ("/srv//work//src/./main.rs", "src/main.rs"),
            ("/srv/work/a/../b", "b"),
            ("/srv/work/../work/x", "x"),
            ("/../srv/work/x", "x"),
            ("/srv/work/a b/ç.txt", "a b/ç.txt"),
            ("/srv/work/..", O),
            ("/srv/work/../../etc/passwd", O),
            ("/srv/work/a/../../x", O),
            ("/srv/workshop/x", O),
            ("/srv/work2", O),
            ("/srv", O),
            ("/", O),
            ("/etc/passwd", O),
            ("/SRV/WORK/x", O),
        ],
    );
}

#[test]
fn path_form_of_relative_paths() {
    let redactor = work();
    check_table(
        "relative path form",
        |text| redactor.path(text),
        &[
            ("", ""),
            (".", "."),
            ("src/main.rs", "src/main.rs"),
            ("./a", "./a"),
            ("dir/", "dir/"),
            ("a/../b", "a/../b"),
            ("a/./../.", "a/./../."),
            ("a//b", "a//b"),
            ("..", O),
            ("../x", O),
            ("a/../../b", O),
            ("./..", O),
            ("a/b/../../../c", O),
        ],
    );
}

#[test]
fn free_text_whole_string_is_one_path() {
    let redactor = work();
    check_table(
        "whole-string free text",
        |text| redactor.text(text),
        &[
            ("/srv/work", W),
            ("/srv/work/", &format!("{W}/")),
            ("/srv/work/src/lib.rs", &format!("{W}/src/lib.rs")),
            ("/srv/work/src/", &format!("{W}/src/")),
            ("/srv/work/x.", &format!("{W}/x.")),
            ("/srv/work/./a/../b", &format!("{W}/b")),
            ("/etc/passwd", O),
            // One segment is still a whole absolute path here, unlike in prose.
            ("/api", O),
            ("/api.", "/api."),
            ("/", O),
            ("/srv/work/../..", O),
            ("/srv/work/src/..", W),
        ],
    );
}

#[test]
fn free_text_root_after_each_allowed_preceding_char() {
    let redactor = work();
    let preceding = [
        "'", "\"", "(", "[", "{", "<", ",", ":", "=", " ", "\t", "\n", "\r", "`", ";", ">",
        "\u{0}", "\u{a0}", "\u{3000}", "«", "→", "🚀",
    ];
    let mut failures = Vec::new();
    for before in preceding {
        for (after, rendered) in [("", W.to_owned()), ("/src/a.rs", format!("{W}/src/a.rs"))] {
            let input = format!("x{before}{ROOT}{after} y");
            let want = format!("x{before}{rendered} y");
            let got = redactor.text(&input);
            if got != want {
                failures.push(format!("{input:?}: got {got:?}, want {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn free_text_root_followed_by_each_allowed_following_char() {
    let redactor = work();
    let following = [
        "/", " ", "\t", "\n", "'", "\"", ")", "]", "}", ">", ",", ":", ";", "", "`", "=", ".", "!",
        "?",
    ];
    let mut failures = Vec::new();
    for after in following {
        for tail in ["", " tail"] {
            // A root that is a whole string is the whole-string rule; put
            // prose in front to exercise the embedded rule.
            let input = format!("at {ROOT}{after}{tail}");
            let rendered_after = if after == "/" { "/" } else { after };
            let want = format!("at {W}{rendered_after}{tail}");
            let got = redactor.text(&input);
            if got != want {
                failures.push(format!("{input:?}: got {got:?}, want {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn free_text_root_glued_to_a_word_is_still_found() {
    // A deployment spelling is found whatever precedes it.
    let redactor = work();
    check_table(
        "glued root",
        |text| redactor.text(text),
        &[
            ("foo/srv/work/x", &format!("foo{W}/x")),
            ("see foo/srv/work now", &format!("see foo{W} now")),
            ("a-/srv/work", &format!("a-{W}")),
            ("~/srv/work/x", &format!("~{W}/x")),
            ("../srv/work/x", &format!("..{W}/x")),
            ("_/srv/work", &format!("_{W}")),
            ("é/srv/work", &format!("é{W}")),
            ("中/srv/work/x", &format!("中{W}/x")),
            ("(a)/srv/work", &format!("(a){W}")),
            // Glued relative paths without a spelling stay.
            ("foo/etc/passwd", "foo/etc/passwd"),
            ("src/**/tests/a.rs", "src/**/tests/a.rs"),
            ("$(pwd)/etc/x", "$(pwd)/etc/x"),
        ],
    );
}

/// The glued and encoded forms of issue 27 item 8 (the attack found 16 of
/// 18 glued forms leaking the workdir's host path).
#[test]
fn attack_glued_and_encoded_forms_never_show_the_workdir() {
    let redactor = work();
    check_table(
        "glued and encoded",
        |text| redactor.text(text),
        &[
            (
                "curl -F f=@/srv/work/secret.txt",
                &format!("curl -F f=@{W}/secret.txt"),
            ),
            ("cd|/srv/work", &format!("cd|{W}")),
            ("x&/srv/work/a", &format!("x&{W}/a")),
            ("echo $/srv/work", &format!("echo ${W}")),
            ("a!/srv/work?", &format!("a!{W}?")),
            ("^/srv/work", &format!("^{W}")),
            ("C:\\x\\/srv/work", &format!("C:\\x{W}")),
            ("id+/srv/work", &format!("id+{W}")),
            ("tag#/srv/work", &format!("tag#{W}")),
            ("*/srv/work", &format!("*{W}")),
            ("}/srv/work/a", &format!("}}{W}/a")),
            ("word/srv/work/a", &format!("word{W}/a")),
            ("«/srv/work»", &format!("«{W}»")),
            ("%2Fsrv%2Fwork%2Fsecret.txt", &format!("{W}/secret.txt")),
            ("x=%2fsrv%2fwork", &format!("x={W}")),
            (
                "{\"p\":\"\\/srv\\/work\\/a\"}",
                &format!("{{\"p\":\"{W}/a\"}}"),
            ),
            ("\\u002fsrv\\u002fwork", W),
            ("a\\n/etc/passwd", &format!("a\\n{O}")),
            (
                "file://localhost/srv/work/a",
                &format!("file://localhost{W}/a"),
            ),
            ("file://host/etc/passwd", &format!("file://host{O}")),
            ("ssh://host//srv/work", &format!("ssh://host/{W}")),
            ("see //srv//work//a", &format!("see {W}/a")),
            ("x//srv//work", &format!("x/{W}")),
            ("at /srv/./work/./a", &format!("at {W}/a")),
            ("x/srv/././/work/a", &format!("x{W}/a")),
            ("x/srv/work/sub/..", &format!("x{W}")),
            ("x/srv/work/..", &format!("x{O}")),
            ("at /srv/work/a/../..", &format!("at {O}")),
            (
                "https://example.com/srv/work/a",
                &format!("https://example.com{W}/a"),
            ),
            ("x/srv/workshop/a", &format!("x{O}")),
        ],
    );
}

#[test]
fn proc_links_lead_where_they_point() {
    let hidden = work();
    check_table(
        "proc links, hidden",
        |text| hidden.text(text),
        &[
            (
                "cat /proc/self/root/srv/work/a.rs",
                &format!("cat {W}/a.rs"),
            ),
            ("x/proc/1/root/srv/work", &format!("x/proc/1/root{W}")),
            ("(/proc/thread-self/root/srv/work/b)", &format!("({W}/b)")),
            ("at /proc/9/task/10/root/srv/work/c", &format!("at {W}/c")),
            ("at /proc/self/cwd/a.rs", &format!("at {O}")),
            ("at /proc/self/fd/3", &format!("at {O}")),
            ("at /proc/self/root", &format!("at {O}")),
        ],
    );
    assert_eq!(hidden.path("/proc/self/root/srv/work/a"), "a");
    assert_eq!(hidden.path("/proc/self/cwd"), O);
    let shown = informative();
    check_table(
        "proc links, informative",
        |text| shown.path(text),
        &[
            ("/proc/self/root/srv/work/a", "a"),
            ("/proc/self/root/etc/hosts", "/etc/hosts"),
            ("/proc/self/root/home/alice/.ssh/id_rsa", "~/.ssh/id_rsa"),
            ("/proc/self/root/tmp/x", &format!("{O}/…/x")),
            ("/proc/self/root/srv", O),
            ("/proc/self/root", O),
            ("/proc/1/cwd", O),
            ("/proc/1/cwd/secret.txt", O),
            ("/proc/self/fd/3", O),
            ("/proc/self/task/4/cwd/x", O),
            ("/dev/fd/3", O),
            ("/proc/self/status", "/proc/self/status"),
        ],
    );
}

/// Own workdir `/srv/work`; another at `/home/alice/projects/acme`; the
/// Bridge user's home `/home/alice`.
fn deployment() -> Redactor {
    work()
        .guarding(
            [PathBuf::from("/home/alice/projects/acme")],
            Some(PathBuf::from(HOME)),
        )
        .informative()
}

#[test]
fn informative_never_shows_another_workdir_or_what_is_above_one() {
    let redactor = deployment();
    check_table(
        "other workdirs",
        |text| redactor.path(text),
        &[
            ("/home/alice/projects/acme", O),
            ("/home/alice/projects/acme/src/x.rs", &format!("{O}/…/x.rs")),
            ("/home/alice/projects", O),
            ("/home/alice/projects/other/y", &format!("{O}/…/y")),
            ("/home/alice", O),
            ("/home", O),
            ("/home/alice/.ssh/id_rsa", "~/.ssh/id_rsa"),
            ("/home/alice/notes/todo.md", "~/notes/todo.md"),
            ("/srv", O),
        ],
    );
    check_table(
        "other workdirs in text",
        |text| redactor.text(text),
        &[
            ("x/home/alice/projects/acme/z", &format!("x{O}/…/z")),
            ("cd /home/alice/projects && ls", &format!("cd {O} && ls")),
            ("cd /home && ls", &format!("cd {O} && ls")),
            ("f=@/home/alice/projects/acme", &format!("f=@{O}")),
        ],
    );
    // Events hide all of it too, glued or not.
    let hidden = work().guarding(
        [PathBuf::from("/home/alice/projects/acme")],
        Some(PathBuf::from(HOME)),
    );
    check_table(
        "other workdirs, hidden",
        |text| hidden.text(text),
        &[
            ("x/home/alice/projects/acme/z", &format!("x{O}")),
            ("word/home/alice/.ssh", &format!("word{O}")),
            ("cd /home && ls", &format!("cd {O} && ls")),
        ],
    );
    // A system location above a workdir: the other workdirs' parents stay
    // hidden, unrelated system paths are shown.
    let system = work()
        .guarding([PathBuf::from("/usr/local/src/proj")], None)
        .informative();
    check_table(
        "system location above a workdir",
        |text| system.path(text),
        &[
            ("/usr/local/src", O),
            ("/usr/local/src/other/a", &format!("{O}/…/a")),
            ("/usr/local/bin/tool", &format!("{O}/…/tool")),
            ("/usr/bin/make", "/usr/bin/make"),
            ("/usr", O),
        ],
    );
}

#[test]
fn informative_never_names_a_user() {
    let redactor = deployment();
    check_table(
        "user names",
        |text| redactor.path(text),
        &[
            ("/home/bob", O),
            ("/home/bob/", O),
            ("/home/bob/notes.txt", &format!("{O}/…/notes.txt")),
            ("/Users/carol", O),
            ("/root", O),
            ("/root/.profile", &format!("{O}/…/.profile")),
            ("/var/home/dave", O),
            ("/usr/home/erin/x", &format!("{O}/…/x")),
            ("/run/user/1000", O),
            ("/run/user/1000/bus", &format!("{O}/…/bus")),
            (
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope",
                &format!("{O}/…/session-2.scope"),
            ),
            ("/sys/fs/cgroup/user.slice/user-1000.slice", O),
            (
                "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service",
                O,
            ),
            (
                "/sys/fs/cgroup/system.slice/cron.service",
                "/sys/fs/cgroup/system.slice/cron.service",
            ),
            ("/etc/sudoers.d/alice", O),
            ("/etc/alice/x.conf", &format!("{O}/…/x.conf")),
        ],
    );
    check_table(
        "user names in prose",
        |text| redactor.text(text),
        &[
            ("ls /root now", &format!("ls {O} now")),
            ("ls /home now", &format!("ls {O} now")),
            ("at (/home/bob)", &format!("at ({O})")),
        ],
    );
    assert_eq!(work().text("ls /root now"), format!("ls {O} now"));
}

#[test]
fn free_text_sibling_and_escape_tokens_are_outside() {
    let repo = redactor(&["/srv/repo"]);
    check_table(
        "siblings of /srv/repo",
        |text| repo.text(text),
        &[
            ("see /srv/repo2/x.", &format!("see {O}.")),
            ("/srv/repo2/x.", &format!("{O}.")),
            ("see /srv/repo2, ok", &format!("see {O}, ok")),
            ("(/srv/repo-old/a)", &format!("({O})")),
            ("it is /srv/repository!", &format!("it is {O}!")),
            ("at /srv/repo.bak/x?", &format!("at {O}?")),
            ("at /srv/repo.", &format!("at {W}.")),
            ("at /srv/repo/../other/x", &format!("at {O}")),
            ("at /srv/repo/../repo/x", &format!("at {W}/x")),
            ("at /srv/repo/a/../../../etc", &format!("at {O}")),
            ("at /srv/repo:x", &format!("at {W}:x")),
            ("at /srv/repo2:x", &format!("at {O}:x")),
        ],
    );
    let short = redactor(&["/work"]);
    check_table(
        "siblings of a one-segment root",
        |text| short.text(text),
        &[
            ("in /work2 now", &format!("in {O} now")),
            ("in /work now", &format!("in {W} now")),
            ("in /wor now", "in /wor now"),
            ("in /workers/x now", &format!("in {O} now")),
        ],
    );
}

#[test]
fn free_text_paths_in_prose() {
    let redactor = work();
    check_table(
        "prose",
        |text| redactor.text(text),
        &[
            (
                "cp /srv/work/a /srv/work/b && cat /srv/work",
                &format!("cp {W}/a {W}/b && cat {W}"),
            ),
            (
                "/srv/work/src/main.rs:12:5: error[E0308]",
                &format!("{W}/src/main.rs:12:5: error[E0308]"),
            ),
            (
                "edit `/srv/work/src/lib.rs`",
                &format!("edit `{W}/src/lib.rs`"),
            ),
            (
                "[notes](/srv/work/docs/a.md)",
                &format!("[notes]({W}/docs/a.md)"),
            ),
            (
                "{\"path\":\"/srv/work/x\"}",
                &format!("{{\"path\":\"{W}/x\"}}"),
            ),
            ("--root=/srv/work/sub", &format!("--root={W}/sub")),
            ("PATH=/usr/bin:/srv/work/bin", &format!("PATH={O}:{W}/bin")),
            ("/srv/work:/srv/work/bin", &format!("{W}:{W}/bin")),
            (
                "see /srv/work/../../etc/shadow now",
                &format!("see {O} now"),
            ),
            ("in /srv/work/./a//b/ dir", &format!("in {W}/a/b/ dir")),
            ("at /srv/work/..", &format!("at {O}")),
            ("at /srv/work/..!", &format!("at {O}!")),
            ("at /srv/work/src/..", &format!("at {W}")),
            ("at /srv/work/.", &format!("at {W}")),
            ("at /srv/work/src/...", &format!("at {W}/src/...")),
            ("at /srv/work/src/...!", &format!("at {W}/src/...!")),
            ("at /srv/work/a...", &format!("at {W}/a...")),
            ("echo hi 2>/dev/null", &format!("echo hi 2>{O}")),
            ("a=/srv/work/x=/etc/passwd", &format!("a={W}/x={O}")),
            ("\"/srv/work/it's\"", &format!("\"{W}/it's\"")),
        ],
    );
}

#[test]
fn free_text_outside_absolute_paths() {
    let redactor = work();
    check_table(
        "outside paths",
        |text| redactor.text(text),
        &[
            ("cat /etc/passwd", &format!("cat {O}")),
            ("key at /home/u/.ssh/id_rsa.", &format!("key at {O}.")),
            ("(/home/alice/.ssh/id_rsa)", &format!("({O})")),
            ("open '/var/lib/x' now", &format!("open '{O}' now")),
            ("see /tmp/a:/tmp/b", &format!("see {O}:{O}")),
            ("in /usr and /tmp/ only", "in /usr and /tmp/ only"),
            ("GET /api now", "GET /api now"),
            ("a / b", "a / b"),
            ("file:///etc/passwd", &format!("file://{O}")),
            ("file:///srv/work/a.rs", &format!("file://{W}/a.rs")),
            ("file:/etc/passwd", &format!("file:{O}")),
        ],
    );
}

#[test]
fn free_text_leaves_urls_fractions_and_plain_text() {
    let redactor = work();
    let untouched = [
        "https://example.com/a/b",
        "see https://github.com/owner/repo/blob/main/src/x.rs.",
        "http://localhost:8080/api/v1",
        "git@github.com:owner/repo.git",
        "3/4 of 1/2/3",
        "and/or, km/h, TCP/IP",
        "src/main.rs and ./x/y",
        "no paths here",
        "",
        "<workdir>/src/a.rs",
        "<outside-workdir>",
        "日本語のテキスト",
    ];
    let rows: Vec<(&str, &str)> = untouched.iter().map(|text| (*text, *text)).collect();
    check_table("untouched", |text| redactor.text(text), &rows);
}

#[test]
fn free_text_is_utf8_safe_around_paths() {
    let redactor = work();
    check_table(
        "unicode",
        |text| redactor.text(text),
        &[
            (
                "日本語 /srv/work/ファイル.txt を見て",
                &format!("日本語 {W}/ファイル.txt を見て"),
            ),
            ("«/srv/work/x»", &format!("«{W}/x»")),
            ("→/srv/work→/etc/passwd", &format!("→{W}→{O}")),
            ("🚀/srv/work/π.rs🚀", &format!("🚀{W}/π.rs🚀")),
            ("ü/srv/work/x", &format!("ü{W}/x")),
            ("\u{3000}/home/ü/ß", &format!("\u{3000}{O}")),
        ],
    );
}

#[test]
fn two_root_spellings_are_both_the_workdir() {
    let redactor = redactor(&[ROOT, CANONICAL]);
    check_table(
        "two spellings, path form",
        |text| redactor.path(text),
        &[
            ("/srv/work/a", "a"),
            ("/mnt/data/work/a", "a"),
            ("/mnt/data/work", "."),
            ("/mnt/data/workers", O),
            ("/mnt/data", O),
        ],
    );
    check_table(
        "two spellings, free text",
        |text| redactor.text(text),
        &[
            (
                "from /srv/work/a to /mnt/data/work/b",
                &format!("from {W}/a to {W}/b"),
            ),
            ("(/mnt/data/work)", &format!("({W})")),
            ("see /mnt/data/work2/x", &format!("see {O}")),
        ],
    );
}

#[test]
fn nested_root_spellings_use_the_longest() {
    let redactor = redactor(&["/srv", "/srv/work/inner"]);
    assert_eq!(redactor.path("/srv/work/inner/a"), "a");
    assert_eq!(redactor.path("/srv/work/a"), "work/a");
    assert_eq!(redactor.text("at /srv/work/inner/a"), format!("at {W}/a"));
}

#[test]
fn root_spellings_are_normalised_and_relative_ones_ignored() {
    let redactor = redactor(&["/srv//work/", "/srv/./x/../work", "relative/dir", ""]);
    assert_eq!(redactor.path("/srv/work/a"), "a");
    assert_eq!(redactor.text("at /srv/work/a"), format!("at {W}/a"));
    assert_eq!(redactor.path("/relative/dir"), O);
    assert_eq!(redactor.roots.len(), 1);
}

#[test]
fn debug_output_hides_root_spellings() {
    let shown = format!("{:?}", redactor(&[ROOT, CANONICAL]));
    assert_eq!(shown, "Redactor { root_spellings: 2 }");
}

#[test]
fn root_slash_is_degenerate_but_consistent() {
    let redactor = redactor(&["/"]);
    check_table(
        "root / path form",
        |text| redactor.path(text),
        &[
            ("/", "."),
            ("/etc/passwd", "etc/passwd"),
            ("/..", "."),
            ("a/../..", O),
        ],
    );
    check_table(
        "root / free text",
        |text| redactor.text(text),
        &[
            ("cat /etc/passwd", &format!("cat {W}/etc/passwd")),
            ("/usr", &format!("{W}/usr")),
            ("in /usr now", &format!("in {W}/usr now")),
            ("3/4 https://x/y", "3/4 https://x/y"),
        ],
    );
}

#[test]
fn no_root_means_everything_absolute_is_outside() {
    let redactor = Redactor::new(Vec::new());
    assert_eq!(redactor.path("/srv/work"), O);
    assert_eq!(redactor.path("a/b"), "a/b");
    assert_eq!(
        redactor.text("at /srv/work and /x"),
        format!("at {O} and /x")
    );
}

#[test]
fn structured_path_keys_take_the_path_form() {
    let redactor = work();
    for key in PATH_KEYS {
        let mut value = json!({
            key: "/srv/work/src/a.rs",
            "nested": {key: "/etc/passwd"},
            "list": [{key: "/srv/work"}],
            "relative": {key: "../up"},
            "kept": {key: "src/a b.rs"},
            "spaced": {key: "/srv/work/my file.txt"},
        });
        redactor.value(&mut value);
        assert_eq!(
            value,
            json!({
                key: "src/a.rs",
                "nested": {key: O},
                "list": [{key: "."}],
                "relative": {key: O},
                "kept": {key: "src/a b.rs"},
                "spaced": {key: "my file.txt"},
            }),
            "key {key}"
        );
    }
}

#[test]
fn structured_path_list_keys_take_the_path_form_per_element() {
    let redactor = work();
    for key in PATH_LIST_KEYS {
        let mut value = json!({
            "sandbox": {key: ["/srv/work", "/srv/work/out", "/etc", "rel/x", "../x", 7, {"note": "/etc/passwd"}]},
        });
        redactor.value(&mut value);
        assert_eq!(
            value,
            json!({
                "sandbox": {key: [".", "out", O, "rel/x", O, 7, {"note": O}]},
            }),
            "key {key}"
        );
    }
}

#[test]
fn structured_dropped_keys_vanish_at_every_depth() {
    let redactor = work();
    for key in DROPPED_KEYS {
        let mut value = json!({
            key: "sess-1",
            "kept": 1,
            "inner": {key: {"deep": "x"}, "also": true},
            "items": [{key: 3, "id": "a"}, [{key: null}]],
        });
        redactor.value(&mut value);
        assert_eq!(
            value,
            json!({
                "kept": 1,
                "inner": {"also": true},
                "items": [{"id": "a"}, [{}]],
            }),
            "key {key}"
        );
    }
}

#[test]
fn structured_other_strings_by_shape() {
    let redactor = work();
    let mut value = json!({
        "message": "wrote /srv/work/a.rs and read /etc/hosts.",
        "target": "/srv/work/src",
        "outside": "/etc/passwd",
        "single": "/api",
        "glued": "foo/srv/work",
        "url": "https://example.com/a/b",
        "path": 12,
        "cwd": {"inner": "/srv/work/x"},
        "read": "/srv/work/not-a-list",
        "write": true,
        "deep": [[["/srv/work/deep", ["see /home/u/.ssh/id_rsa"]]]],
        "numbers": [1, 2.5, null, false],
        "comma": "/srv/work/a,b.txt",
    });
    redactor.value(&mut value);
    assert_eq!(
        value,
        json!({
            "message": format!("wrote {W}/a.rs and read {O}."),
            "target": "src",
            "outside": O,
            "single": O,
            "glued": format!("foo{W}"),
            "url": "https://example.com/a/b",
            "path": 12,
            "cwd": {"inner": "x"},
            "read": "not-a-list",
            "write": true,
            "deep": [[["deep", [format!("see {O}")]]]],
            "numbers": [1, 2.5, null, false],
            "comma": format!("{W}/a,b.txt"),
        })
    );
}

#[test]
fn structured_keys_are_redacted_too() {
    let redactor = work();
    let mut value = json!({
        "changes": {
            "/srv/work/src/a.rs": {"kind": "add"},
            "/srv/work/src/b.rs": {"kind": "delete"},
            "see /etc/x/y": 1,
            "plain": 2,
        },
    });
    redactor.value(&mut value);
    assert_eq!(
        value,
        json!({
            "changes": {
                "src/a.rs": {"kind": "add"},
                "src/b.rs": {"kind": "delete"},
                format!("see {O}"): 1,
                "plain": 2,
            },
        })
    );
}

#[test]
fn structured_key_rules_match_the_original_key() {
    // A key that redacts to `path` is not a path key: its string value
    // still gets the general rule, and a host path in it is still caught.
    let redactor = work();
    let mut value = json!({"/srv/work/path": "read /etc/passwd now"});
    redactor.value(&mut value);
    assert_eq!(value, json!({"path": format!("read {O} now")}));
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Approval {
    path: String,
    reason: String,
    #[serde(default)]
    turn_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct NeedsThread {
    thread_id: String,
}

#[test]
fn typed_payloads_round_trip() {
    let redactor = work();
    let approval = Approval {
        path: "/srv/work/Cargo.toml".to_owned(),
        reason: "edit /srv/work/Cargo.toml, not /etc/hosts".to_owned(),
        turn_id: Some("t-9".to_owned()),
    };
    assert_eq!(
        redactor.redact(&approval).unwrap(),
        Approval {
            path: "Cargo.toml".to_owned(),
            reason: format!("edit {W}/Cargo.toml, not {O}"),
            turn_id: None,
        }
    );
    let failed = redactor.redact(&NeedsThread {
        thread_id: "x".to_owned(),
    });
    assert!(failed.is_err(), "{failed:?}");
}

const HOME: &str = "/home/alice";

/// The approval redactor of `approval_paths = "informative"` for [`ROOT`],
/// with the Bridge user's home at [`HOME`].
fn informative() -> Redactor {
    work()
        .guarding(Vec::new(), Some(PathBuf::from(HOME)))
        .informative()
}

#[test]
fn informative_path_form_pins_each_class() {
    let redactor = informative();
    check_table(
        "informative path form",
        |text| redactor.path(text),
        &[
            // Inside the workdir: relative, as always.
            ("/srv/work/src/main.rs", "src/main.rs"),
            ("/srv/work", "."),
            // Well-known system locations: as they are (normalised).
            ("/bin/bash", "/bin/bash"),
            ("/usr/bin/env", "/usr/bin/env"),
            ("/usr//lib/./x/../libc.so", "/usr/lib/libc.so"),
            ("/etc/hosts", "/etc/hosts"),
            ("/etc", "/etc"),
            ("/sbin/ip", "/sbin/ip"),
            ("/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"),
            ("/proc/self/status", "/proc/self/status"),
            ("/sys/fs/cgroup", "/sys/fs/cgroup"),
            ("/dev/null", "/dev/null"),
            ("/dev/urandom", "/dev/urandom"),
            ("/srv/work/../../etc/passwd", "/etc/passwd"),
            // The Bridge user's home: `~`.
            ("/home/alice/.ssh/id_rsa", "~/.ssh/id_rsa"),
            ("/home/alice", "~"),
            ("/home/alice/", "~"),
            ("/home/alice/../alice/.bashrc", "~/.bashrc"),
            // Anything else: the marker and the last component.
            ("/tmp/build.log", &format!("{O}/…/build.log")),
            ("/tmp", &format!("{O}/…/tmp")),
            ("/home/bob/notes.txt", &format!("{O}/…/notes.txt")),
            ("/home/alicex/y", &format!("{O}/…/y")),
            ("/srv/other/secret.txt", &format!("{O}/…/secret.txt")),
            ("/srv/work2/a", &format!("{O}/…/a")),
            ("/dev/shm/x", &format!("{O}/…/x")),
            ("/dev/sda", &format!("{O}/…/sda")),
            ("/var/lib/serverfs/state.db", &format!("{O}/…/state.db")),
            ("/opt/app/bin/tool", &format!("{O}/…/tool")),
            ("/root/.profile", &format!("{O}/…/.profile")),
            // Above the workdir root, or the host root: never shown.
            ("/srv", O),
            ("/", O),
            ("/srv/work/..", O),
            // Relative paths: as before.
            ("src/lib.rs", "src/lib.rs"),
            ("../x", O),
        ],
    );
}

#[test]
fn informative_free_text_shows_what_a_human_must_judge() {
    let redactor = informative();
    check_table(
        "informative free text",
        |text| redactor.text(text),
        &[
            (
                "/bin/bash -lc 'cat /home/alice/.ssh/id_rsa > /srv/work/out.txt'",
                &format!("/bin/bash -lc 'cat ~/.ssh/id_rsa > {W}/out.txt'"),
            ),
            (
                "rm -rf /srv/other/data /tmp/cache/",
                &format!("rm -rf {O}/…/data {O}/…/cache"),
            ),
            (
                "curl -o /dev/null https://x.test/a/b",
                "curl -o /dev/null https://x.test/a/b",
            ),
            ("see /home/bob/todo.md.", &format!("see {O}/…/todo.md.")),
            // A one-segment token in prose stays prose, as in every mode.
            ("write to /tmp then /usr", "write to /tmp then /usr"),
            // Above the workdir root, even as one segment.
            ("cd /srv && ls", &format!("cd {O} && ls")),
            // A whole string that is one path: its path form.
            ("/srv/other", &format!("{O}/…/other")),
            ("/srv", O),
        ],
    );
}

#[test]
fn informative_home_must_be_a_real_absolute_directory() {
    for home in [None, Some("/"), Some("relative/home"), Some("")] {
        let redactor = work()
            .guarding(Vec::new(), home.map(PathBuf::from))
            .informative();
        assert_eq!(
            redactor.path("/home/alice/.ssh/id_rsa"),
            format!("{O}/…/id_rsa"),
            "{home:?}"
        );
        assert_eq!(redactor.path("/etc/hosts"), "/etc/hosts", "{home:?}");
    }
    // A home that holds the workdir: the workdir stays relative, the home
    // itself is above the root and stays hidden, its other files are `~`.
    let nested = redactor(&["/home/alice/work"])
        .guarding(Vec::new(), Some(PathBuf::from(HOME)))
        .informative();
    check_table(
        "home above the root",
        |text| nested.path(text),
        &[
            ("/home/alice/work/a.rs", "a.rs"),
            ("/home/alice", O),
            ("/home", O),
            ("/home/alice/.gitconfig", "~/.gitconfig"),
            ("/home/alice/work2/x", "~/work2/x"),
        ],
    );
    // A system location that holds the workdir: its ancestors stay hidden.
    let system = redactor(&["/usr/local/src/proj"]).informative();
    assert_eq!(system.path("/usr/local/src"), O);
    assert_eq!(system.path("/usr"), O);
    assert_eq!(system.path("/usr/bin/make"), "/usr/bin/make");
}

#[test]
fn informative_structured_payloads() {
    let redactor = informative();
    let mut payload = json!({
        "command_display": "/usr/bin/git -C /srv/work push",
        "relative_cwd": "/home/alice/src",
        "file_changes": [{"path": "/srv/other/a.rs"}, {"path": "/srv/work/b.rs"}],
        "thread_id": "t1",
        "tool_input": {"file_path": "/etc/shadow", "/tmp/key.pem": "x"},
    });
    redactor.value(&mut payload);
    assert_eq!(
        payload,
        json!({
            "command_display": format!("/usr/bin/git -C {W} push"),
            "relative_cwd": "~/src",
            "file_changes": [{"path": format!("{O}/…/a.rs")}, {"path": "b.rs"}],
            "tool_input": {"file_path": "/etc/shadow", format!("{O}/…/key.pem"): "x"},
        })
    );
    // The default redactor is untouched by the informative one.
    let mut again = json!({"command_display": "/usr/bin/git push"});
    work().value(&mut again);
    assert_eq!(again, json!({"command_display": format!("{O} push")}));
}

/// A deterministic xorshift generator: reproducible inputs without a
/// dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(bound).unwrap()).unwrap()
    }
}

const FRAGMENTS: &[&str] = &[
    ROOT,
    ROOT,
    CANONICAL,
    " /srv/work",
    "(/srv/work/",
    "=/mnt/data/work",
    "'/srv/work",
    ":/mnt/data/work/",
    "/srv/work2",
    "/srv/workshop/x",
    "/mnt/data/work-old",
    "/",
    "/x",
    "/etc/passwd",
    "/home/u/.ssh/id_rsa",
    "..",
    ".",
    " ",
    "\n",
    "\t",
    "\u{a0}",
    "'",
    "\"",
    "`",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    ",",
    ":",
    ";",
    "=",
    "!",
    "?",
    "-",
    "~",
    "word",
    "3",
    "https://",
    "file://",
    "é",
    "日本",
    "🚀",
    "«",
    "→",
    WORKDIR_MARKER,
    OUTSIDE_MARKER,
];

/// Where `out` still shows a root spelling as a path: at a path start by
/// the reference's preceding-character rule (start, whitespace, one of
/// `'"([{<,:=`), followed by `/`, the end or whitespace. Written apart from
/// the implementation's own predicates on purpose.
fn visible_roots(out: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for spelling in [ROOT, CANONICAL] {
        for (at, _) in out.match_indices(spelling) {
            let before = out[..at].chars().next_back();
            let after = out[at + spelling.len()..].chars().next();
            let starts = before.is_none_or(|c| c.is_whitespace() || "'\"([{<,:=".contains(c));
            let ends = after.is_none_or(|c| c == '/' || c.is_whitespace());
            if starts && ends {
                found.push(at);
            }
        }
    }
    found
}

#[test]
fn generated_text_never_shows_a_root_and_is_idempotent() {
    let hidden = redactor(&[ROOT, CANONICAL]);
    let shown = hidden
        .clone()
        .guarding(Vec::new(), Some(PathBuf::from("/home/u")))
        .informative();
    let mut random = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut leaky_inputs = 0;
    let mut failures = Vec::new();
    for round in 0..1000 {
        let informative = round % 2 == 1;
        let redactor = if informative { &shown } else { &hidden };
        let pieces = 1 + random.below(12);
        let input: String = (0..pieces)
            .map(|_| FRAGMENTS[random.below(FRAGMENTS.len())])
            .collect();
        if !visible_roots(&input).is_empty() {
            leaky_inputs += 1;
        }
        let once = redactor.text(&input);
        let twice = redactor.text(&once);
        if !visible_roots(&once).is_empty() {
            failures.push(format!("root visible: {input:?} -> {once:?}"));
        }
        if twice != once {
            failures.push(format!(
                "not idempotent: {input:?} -> {once:?} -> {twice:?}"
            ));
        }
        if !informative && once.contains("/etc/passwd") && visible_outside(&once) {
            failures.push(format!("outside path visible: {input:?} -> {once:?}"));
        }
        if informative && once.contains("/home/u/.ssh") && visible_home(&once) {
            failures.push(format!("home not shown as ~: {input:?} -> {once:?}"));
        }
    }
    // The generator must actually produce leaks to hide, or the run proves
    // nothing.
    assert!(
        leaky_inputs > 100,
        "only {leaky_inputs} inputs showed a root"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether `/home/u/.ssh` appears at a whitespace-delimited start in `out`.
fn visible_home(out: &str) -> bool {
    out.match_indices("/home/u/.ssh").any(|(at, _)| {
        out[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
    })
}

/// Whether `/etc/passwd` appears at a whitespace-delimited start in `out`.
fn visible_outside(out: &str) -> bool {
    out.match_indices("/etc/passwd").any(|(at, _)| {
        out[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
    })
}

mod property {
    //! Generated glued and encoded forms (issue 27 item 8): whatever byte
    //! precedes a deployment path and however it is encoded, neither a
    //! workdir root, nor a directory above one, nor a user name survives;
    //! text without host paths is unchanged; a second pass changes
    //! nothing.

    use std::path::PathBuf;

    use proptest::prelude::*;
    use proptest::sample::select;
    use proptest::test_runner::{Config, TestRunner};

    use super::super::Redactor;
    use super::super::view::View;

    /// Own workdir (two spellings), another workdir, the Bridge user's home.
    fn redactors() -> [Redactor; 2] {
        let hidden = Redactor::new([PathBuf::from("/srv/work"), PathBuf::from("/mnt/data/work")])
            .guarding(
                [PathBuf::from("/home/alice/projects/acme")],
                Some(PathBuf::from("/home/alice")),
            );
        let informative = hidden.clone().informative();
        [hidden, informative]
    }

    /// What must never be seen, once the output is decoded.
    const FORBIDDEN: [&str; 9] = [
        "/srv/work",
        "/mnt/data",
        "alice",
        "/projects/acme",
        "bob",
        "carol",
        "user-1000",
        "/user/1000",
        "/var/home/dave",
    ];

    /// Paths that are deployment spellings (found after any byte).
    const DEPLOYMENT: [&str; 9] = [
        "/srv/work",
        "/srv/work/src/a.rs",
        "/mnt/data/work/x",
        "/mnt/data",
        "/home/alice/projects/acme/y.txt",
        "/home/alice/projects",
        "/home/alice",
        "/home/alice/.ssh/id_rsa",
        "/proc/self/root/srv/work/z",
    ];

    /// Other users' places (found where a path starts).
    const USERS: [&str; 7] = [
        "/home/bob",
        "/home/bob/notes.txt",
        "/Users/carol",
        "/var/home/dave/x",
        "/run/user/1000",
        "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope",
        "/proc/1/root/home/bob/a",
    ];

    /// Any byte a path may follow; the first ones glue to a word.
    const GLUE: [&str; 16] = [
        "x", "Z", "9", "_", "-", ".", "~", "*", "#", "+", ")", "]", "}", "é", "中", "..",
    ];
    const STARTS: [&str; 32] = [
        "", " ", "\n", "\t", "@", "|", "(", "'", "\"", ":", ";", ",", ">", "<", "`", "[", "{", "$",
        "\\", "=", "&", "!", "?", "^", "%", "«", "→", "…", "\u{a0}", "f=@", "cd|", "a b ",
    ];
    const AFTER: [&str; 14] = [
        "", " ", ".", ",", ":12", ")", "\"", "'", "\n", "?", "!", ">", "/", "/sub/..",
    ];

    /// `path` in encoding number `encoding`.
    fn encode(path: &str, encoding: usize) -> String {
        match encoding {
            0 => path.to_owned(),
            1 => path.replace('/', "%2F"),
            2 => path.replace('/', "%2f"),
            3 => path.replace('/', "\\/"),
            4 => path.replace('/', "\\\\/"),
            5 => path.replace('/', "\\u002f"),
            6 => path.replace('/', "//"),
            7 => path.replace('/', "/./"),
            8 => format!("file://{path}"),
            9 => format!("file://localhost{path}"),
            _ => format!("{path}/a/.."),
        }
    }

    /// `text` decoded as a client might decode it: percent and JSON escapes,
    /// doubled slashes and `/./` collapsed.
    fn decoded(text: &str) -> String {
        let mut out = View::new(text).text().to_owned();
        loop {
            let next = out.replace("//", "/").replace("/./", "/");
            if next == out {
                return out;
            }
            out = next;
        }
    }

    fn run<S: Strategy>(strategy: S, case: impl Fn(S::Value) -> Result<(), TestCaseError>) {
        let config = Config {
            // PROPTEST_CASES (the soak's profiles) raises it.
            cases: Config::default().cases.max(512),
            ..Config::default()
        };
        if let Err(failure) = TestRunner::new(config).run(&strategy, case) {
            panic!("{failure}");
        }
    }

    fn check(redactors: &[Redactor; 2], input: &str) -> Result<(), TestCaseError> {
        for redactor in redactors {
            let once = redactor.text(input);
            let seen = decoded(&once);
            for forbidden in FORBIDDEN {
                prop_assert!(
                    !seen.contains(forbidden),
                    "{forbidden} survives: {input:?} -> {once:?}"
                );
            }
            prop_assert_eq!(
                redactor.text(&once),
                once.clone(),
                "second pass of {:?}",
                input
            );
            let mut value = serde_json::json!({ "text": input, "path": input, "list": [input] });
            redactor.value(&mut value);
            let seen = decoded(&value.to_string());
            for forbidden in FORBIDDEN {
                prop_assert!(
                    !seen.contains(forbidden),
                    "{forbidden} survives in a value: {input:?} -> {value}"
                );
            }
        }
        Ok(())
    }

    #[test]
    fn property_glued_and_encoded_deployment_paths_never_survive() {
        let before = select([&GLUE[..], &STARTS[..]].concat());
        let strategy = (
            before,
            select(DEPLOYMENT.to_vec()),
            0usize..11,
            select(AFTER.to_vec()),
            select(vec!["", "see ", "run: ", "x"]),
        );
        let redactors = redactors();
        run(strategy, |(before, path, encoding, after, lead)| {
            check(
                &redactors,
                &format!("{lead}{before}{}{after} end", encode(path, encoding)),
            )
        });
    }

    #[test]
    fn property_other_users_paths_never_survive_where_a_path_starts() {
        // Another user's home is not a deployment spelling: glued to a word
        // (`pages/home/index.tsx`) it is a relative path, so only the bytes
        // that start a path precede it here.
        let strategy = (
            select(STARTS.to_vec()),
            select(USERS.to_vec()),
            0usize..11,
            select(AFTER.to_vec()),
        );
        let redactors = redactors();
        run(strategy, |(before, path, encoding, after)| {
            check(
                &redactors,
                &format!("{before}{}{after}", encode(path, encoding)),
            )
        });
    }

    #[test]
    fn property_text_without_host_paths_is_unchanged() {
        let pieces = select(vec![
            "src/main.rs",
            "a/b",
            "3/4",
            "and/or",
            "https://example.com/a/b",
            "./x/y",
            "../up",
            "src/**/t.rs",
            "$(pwd)/x/y",
            "~/notes",
            "word",
            "é",
            "«",
            "→",
            " ",
            "\n",
            ",",
            ".",
            ":",
            ";",
            "(",
            ")",
            "\"",
            "'",
            "=",
            "@",
            "|",
            "%2F",
            "\\/",
            "home/bob",
            "srv",
            "x#/definitions/a",
            "<workdir>",
            "<outside-workdir>",
        ]);
        let redactors = redactors();
        run(proptest::collection::vec(pieces, 0..16), |pieces| {
            let text: String = pieces.concat();
            // A piece boundary can still start a host path (`(` then `%2F`
            // then `a/b`); those inputs are the other properties' business.
            let view = View::new(&text);
            let starts_a_path = view
                .text()
                .char_indices()
                .any(|(at, c)| c == '/' && super::super::is_path_start(view.text(), at));
            prop_assume!(!starts_a_path);
            for redactor in &redactors {
                prop_assert_eq!(redactor.text(&text), text.clone());
            }
            Ok(())
        });
    }
}
