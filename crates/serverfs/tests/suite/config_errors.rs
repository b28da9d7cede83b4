//! Configuration errors, from the operator's side: the real binary, a
//! cleared environment, one bad setting at a time. Each must end the process
//! with status 2, nothing on stdout, and exactly one stderr line
//! `serverfs: configuration error: …` naming the key, variable, spec or
//! alias at fault — never a panic or a backtrace (ARCHITECTURE.md §1
//! invariant 7, §5). Every case runs through both `serve` and
//! `check-config`.
//!
//! Assertions on the wording are deliberately loose (the key is named);
//! assertions on the form are strict.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serverfs_testkit::TempWorkdir;

use crate::common::binary;

const PREFIX: &str = "serverfs: configuration error: ";
/// A configuration error is reported at once; this only guards against a
/// binary that unexpectedly starts serving.
const DEADLINE: Duration = Duration::from_secs(30);

/// What one run of the binary produced.
#[derive(Debug)]
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `serverfs <args>` with only `PATH` and `env` in its environment and
/// stdin closed.
fn run(args: &[String], env: &[(String, String)]) -> Run {
    let mut command = Command::new(binary());
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn serverfs");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait for serverfs").is_some() {
            break;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serverfs {args:?} did not exit within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = child.wait_with_output().expect("collect serverfs output");
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// One bad configuration.
struct Case {
    name: &'static str,
    /// Arguments after the subcommand.
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// The message must contain, for each group, at least one of its words.
    mentions: Vec<Vec<String>>,
}

fn case(name: &'static str, args: &[&str], env: &[(&str, &str)], mentions: &[&[&str]]) -> Case {
    Case {
        name,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        mentions: mentions
            .iter()
            .map(|group| group.iter().map(|m| (*m).to_owned()).collect())
            .collect(),
    }
}

/// Checks the form of a configuration error; `Err` says what is wrong.
fn check_config_error(run: &Run, mentions: &[Vec<String>]) -> Result<(), String> {
    let mut problems = Vec::new();
    if run.status.code() != Some(2) {
        problems.push(format!("exit status {:?}, expected 2", run.status.code()));
    }
    if !run.stdout.is_empty() {
        problems.push(format!("stdout is not empty: {:?}", run.stdout));
    }
    let lines: Vec<&str> = run.stderr.lines().collect();
    if lines.len() != 1 || !run.stderr.ends_with('\n') {
        problems.push(format!("stderr is not exactly one line: {:?}", run.stderr));
    }
    if !run.stderr.starts_with(PREFIX) {
        problems.push(format!(
            "stderr does not start with {PREFIX:?}: {:?}",
            run.stderr
        ));
    }
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE", "thread 'main'"] {
        if run.stderr.contains(bad) {
            problems.push(format!("stderr contains {bad:?}: {:?}", run.stderr));
        }
    }
    for group in mentions {
        if !group.iter().any(|m| run.stderr.contains(m.as_str())) {
            problems.push(format!(
                "stderr mentions none of {group:?}: {:?}",
                run.stderr
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Runs every case through `serve` and `check-config` and fails once,
/// listing every case that went wrong.
fn run_cases(cases: &[Case]) {
    let mut failures = Vec::new();
    for case in cases {
        for subcommand in ["serve", "check-config"] {
            let mut args = vec![subcommand.to_owned()];
            args.extend(case.args.iter().cloned());
            let run = run(&args, &case.env);
            if let Err(why) = check_config_error(&run, &case.mentions) {
                failures.push(format!("{} ({subcommand}): {why}", case.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} runs went wrong:\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n")
    );
}

/// The temporary directory beside a fixture's root, for config files and
/// slot roots.
fn base(t: &TempWorkdir) -> PathBuf {
    t.root().parent().unwrap().to_path_buf()
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// A TOML basic string holding `path`.
fn toml_string(path: &Path) -> String {
    let text = path.to_str().expect("UTF-8 temp path");
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Writes `text` as `<base>/<name>`, with `{root}` replaced by the root
/// as a TOML string, and returns the file's path.
fn config_file(t: &TempWorkdir, name: &str, text: &str) -> String {
    let path = base(t).join(name);
    std::fs::write(&path, text.replace("{root}", &toml_string(&t.root()))).unwrap();
    display(&path)
}

#[test]
fn command_line_errors() {
    let t = TempWorkdir::new();
    let other = TempWorkdir::new();
    t.file("file.txt", "x").dir("real").symlink("link", "real");
    let root = display(&t.root());
    let long_alias = format!("a{}", "b".repeat(32));
    let spec = |alias: &str, path: &str| format!("{alias}={path}");
    let ok_spec = spec("docs", &root);
    let long_spec = spec(&long_alias, &root);
    let digit_spec = spec("1docs", &root);
    let dot_spec = spec("do.cs", &root);
    let other_spec = spec("DOCS", &display(&other.root()));
    let missing_spec = spec("docs", &display(&base(&t).join("missing")));
    let file_spec = spec("docs", &display(&t.path("file.txt")));
    let link_spec = spec("docs", &display(&t.path("link")));
    run_cases(&[
        case(
            "alias with a leading digit",
            &["--workdir", &digit_spec],
            &[],
            &[&["1docs"]],
        ),
        case(
            "alias of 33 characters",
            &["--workdir", &long_spec],
            &[],
            &[&[&long_alias]],
        ),
        case(
            "alias with a '.'",
            &["--workdir", &dot_spec],
            &[],
            &[&["do.cs"]],
        ),
        case(
            "aliases equal ignoring case",
            &["--workdir", &ok_spec, "--workdir", &other_spec],
            &[],
            &[&["DOCS"]],
        ),
        case(
            "root does not exist",
            &["--workdir", &missing_spec],
            &[],
            &[&["docs"]],
        ),
        case(
            "root is a file",
            &["--workdir", &file_spec],
            &[],
            &[&["docs"]],
        ),
        case(
            "root is a symlink",
            &["--workdir", &link_spec],
            &[],
            &[&["docs"]],
        ),
        case(
            "spec without '='",
            &["--workdir", "docs"],
            &[],
            &[&["--workdir"], &["docs"]],
        ),
        case(
            "spec without a path",
            &["--workdir", "docs="],
            &[],
            &[&["--workdir"]],
        ),
        case(
            "spec without an alias",
            &["--workdir", "=/tmp"],
            &[],
            &[&["--workdir"]],
        ),
        case(
            "unknown resolver",
            &["--workdir", &ok_spec],
            &[("SERVERFS_FS_RESOLVER", "fast")],
            &[&["SERVERFS_FS_RESOLVER"]],
        ),
        case(
            "non-numeric SERVERFS_MAX_READ_BYTES",
            &["--workdir", &ok_spec],
            &[("SERVERFS_MAX_READ_BYTES", "abc")],
            &[&["SERVERFS_MAX_READ_BYTES"]],
        ),
        case("no workdirs at all", &[], &[], &[&["--workdir", "workdir"]]),
    ]);
}

#[test]
fn toml_errors() {
    let t = TempWorkdir::new();
    let workdir = "[[workdirs]]\nalias = \"w\"\npath = {root}\n";
    let file = |name: &str, text: &str| config_file(&t, name, text);
    let cases = [
        (
            "workspace-write agent mode on a read-only workdir",
            file(
                "workspace_write_ro.toml",
                "[agent]\nenabled = true\nsocket = \"/run/serverfs-test/bridge.sock\"\n\n\
                 [[workdirs]]\nalias = \"w\"\npath = {root}\n\
                 agent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\"]\n",
            ),
            vec![vec!["read_only", "agent_mode"]],
        ),
        (
            "agent mode while the Bridge is disabled",
            file(
                "bridge_off.toml",
                "[[workdirs]]\nalias = \"w\"\npath = {root}\n\
                 agent_mode = \"review\"\nagent_runtimes = [\"fake\"]\n",
            ),
            vec![vec!["agent.enabled", "agent_mode"]],
        ),
        (
            "unknown top-level key",
            file("unknown_top.toml", &format!("bogus_key = 1\n{workdir}")),
            vec![vec!["bogus_key"]],
        ),
        (
            "unknown key in [server]",
            // Not a prefix of any real key, so the mention cannot come from
            // the list of expected keys.
            file(
                "unknown_server.toml",
                &format!("[server]\nlines_per_read = 5\n\n{workdir}"),
            ),
            vec![vec!["lines_per_read"]],
        ),
        (
            "unknown key in [[workdirs]]",
            file(
                "unknown_workdir.toml",
                &format!("{workdir}readonly = true\n"),
            ),
            vec![vec!["readonly"]],
        ),
        (
            "read_only is a string",
            file(
                "type_error.toml",
                &format!("{workdir}read_only = \"yes\"\n"),
            ),
            vec![vec!["read_only"]],
        ),
        (
            "max_read_lines = 0",
            file(
                "lines_zero.toml",
                &format!("[server]\nmax_read_lines = 0\n\n{workdir}"),
            ),
            vec![vec!["max_read_lines"]],
        ),
        (
            "max_read_bytes too big",
            file(
                "bytes_big.toml",
                &format!("{workdir}max_read_bytes = 1_000_000_000_000\n"),
            ),
            vec![vec!["max_read_bytes"]],
        ),
        (
            "invalid deny glob",
            file(
                "bad_glob.toml",
                &format!("{workdir}deny = [\"*.log\", \"a[b\"]\n"),
            ),
            vec![vec!["deny"], vec!["a[b"]],
        ),
        (
            "invalid alias",
            file(
                "bad_alias.toml",
                "[[workdirs]]\nalias = \"9lives\"\npath = {root}\n",
            ),
            vec![vec!["9lives"]],
        ),
        (
            "aliases equal ignoring case",
            file(
                "dup_alias.toml",
                "[[workdirs]]\nalias = \"Docs\"\npath = {root}\n\n\
                 [[workdirs]]\nalias = \"docs\"\npath = {root}\n",
            ),
            vec![vec!["docs"]],
        ),
        (
            "workdir without a path",
            file("no_path.toml", "[[workdirs]]\nalias = \"w\"\n"),
            vec![vec!["path"]],
        ),
        (
            "no [[workdirs]]",
            file("empty.toml", "[server]\nlog_level = \"info\"\n"),
            vec![vec!["workdirs"]],
        ),
        (
            "relative Bridge socket while enabled",
            file(
                "relative_socket.toml",
                &format!("[agent]\nenabled = true\nsocket = \"rel/bridge.sock\"\n\n{workdir}"),
            ),
            vec![vec!["socket"]],
        ),
        (
            "TOML syntax error",
            file("syntax.toml", "[[workdirs]\nalias = \"w\"\n"),
            vec![vec!["TOML", "toml", "line"]],
        ),
        (
            "missing configuration file",
            display(&base(&t).join("nope.toml")),
            vec![vec!["nope.toml"]],
        ),
    ];
    let cases: Vec<Case> = cases
        .iter()
        .map(|(name, path, mentions)| {
            let mentions: Vec<&[&str]> = mentions.iter().map(Vec::as_slice).collect();
            case(name, &["--config", path], &[], &mentions)
        })
        .collect();
    run_cases(&cases);
}

#[test]
fn environment_errors() {
    let t = TempWorkdir::new();
    // `<base>/slots/01` is a mounted slot; `<base>/empty` has no slot at all.
    let slots = base(&t).join("slots");
    std::fs::create_dir_all(slots.join("01")).unwrap();
    let empty = base(&t).join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let slots = display(&slots);
    let empty = display(&empty);
    let root = ("SERVERFS_WORKDIRS_ROOT", slots.as_str());
    let alias = ("WORKDIR_01_ALIAS", "docs");
    run_cases(&[
        case(
            "alias set but the slot root is missing",
            &[],
            &[("SERVERFS_WORKDIRS_ROOT", &empty), alias],
            &[&["WORKDIR_01"]],
        ),
        case(
            "READ_ONLY is not a boolean",
            &[],
            &[root, alias, ("WORKDIR_01_READ_ONLY", "maybe")],
            &[&["WORKDIR_01_READ_ONLY"]],
        ),
        case(
            "non-numeric SERVERFS_MAX_READ_BYTES",
            &[],
            &[root, alias, ("SERVERFS_MAX_READ_BYTES", "abc")],
            &[&["SERVERFS_MAX_READ_BYTES"]],
        ),
        case(
            "misspelt slot variable",
            &[],
            &[root, alias, ("WORKDIR_01_READONLY", "true")],
            &[&["WORKDIR_01_READONLY"]],
        ),
        case(
            "slot number with one digit",
            &[],
            &[root, alias, ("WORKDIR_1_ALIAS", "other")],
            &[&["WORKDIR_1_ALIAS"]],
        ),
        case(
            "mounted slot without an alias",
            &[],
            &[root, ("WORKDIR_01_READ_ONLY", "true")],
            &[&["WORKDIR_01"]],
        ),
        case(
            "invalid alias in a slot",
            &[],
            &[root, ("WORKDIR_01_ALIAS", "1bad")],
            &[&["1bad"]],
        ),
        case(
            "relative SERVERFS_WORKDIRS_ROOT",
            &[],
            &[("SERVERFS_WORKDIRS_ROOT", "slots"), alias],
            &[&["SERVERFS_WORKDIRS_ROOT"]],
        ),
        case(
            "unknown resolver",
            &[],
            &[root, alias, ("SERVERFS_FS_RESOLVER", "openat3")],
            &[&["SERVERFS_FS_RESOLVER"]],
        ),
    ]);
}

#[test]
fn check_config_accepts_a_valid_configuration_and_names_every_workdir() {
    let a = TempWorkdir::new();
    let b = TempWorkdir::new();
    let config = base(&a).join("serverfs.toml");
    std::fs::write(
        &config,
        format!(
            "[[workdirs]]\nalias = \"alpha\"\npath = {}\n\n\
             [[workdirs]]\nalias = \"beta-2\"\npath = {}\nread_only = false\n\
             allow_hidden = true\ndeny = [\"*.log\"]\n",
            toml_string(&a.root()),
            toml_string(&b.root()),
        ),
    )
    .unwrap();
    let valid = run(
        &[
            "check-config".to_owned(),
            "--config".to_owned(),
            display(&config),
        ],
        &[],
    );
    assert_eq!(valid.status.code(), Some(0), "{valid:?}");
    for alias in ["alpha", "beta-2"] {
        assert!(
            valid.stdout.contains(alias),
            "check-config does not name {alias}: {valid:?}"
        );
    }
    assert!(!valid.stderr.contains("configuration error"), "{valid:?}");
    assert!(!valid.stderr.contains("panicked"), "{valid:?}");

    let spec = format!("quick={}", a.root().display());
    let quick = run(
        &["check-config".to_owned(), "--workdir".to_owned(), spec],
        &[],
    );
    assert_eq!(quick.status.code(), Some(0), "{quick:?}");
    assert!(quick.stdout.contains("quick"), "{quick:?}");

    // The same file with one bad value: status 2 and the one-line message.
    std::fs::write(
        &config,
        format!(
            "[[workdirs]]\nalias = \"alpha\"\npath = {}\nmax_read_lines = -1\n",
            toml_string(&a.root())
        ),
    )
    .unwrap();
    let invalid = run(
        &[
            "check-config".to_owned(),
            "--config".to_owned(),
            display(&config),
        ],
        &[],
    );
    check_config_error(&invalid, &[vec!["max_read_lines".to_owned()]]).unwrap();
}
