//! `serverfs-bench soak`: the fault suite. Each check attacks the real
//! release binaries as a hostile client or local user would, counts its
//! attempts and what must never happen (escapes, host-path leaks, torn
//! files, lost or re-run tasks, crashes), and measures what the attack
//! costs a legitimate client. One table; the run fails when any failure
//! count is not zero.
//!
//! | check | what it does |
//! |---|---|
//! | hostile paths | a corpus of paths through every path-taking tool and the resource, under both resolvers ([`paths`]) |
//! | symlink swap | a directory swapped with a symlink to outside while reads, searches, edits and uploads run through it ([`swap`]) |
//! | SIGKILL | the server killed during edit and upload replacement loops ([`kills`]) |
//! | HTTP abuse | slow headers and idle sockets without a token, a session flood and slow bodies with one ([`http_abuse`]) |
//! | HTTP mixed attack | every HTTP attack at once against an OAuth server: the legitimate p99, the log's growth, memory after ([`http_mixed`]) |
//! | Bridge kills | the Agent Bridge killed at submit, while waiting, running and finishing; a task cwd swapped for a symlink ([`bridge`]) |
//! | OAuth metadata documents | rounds of ten concurrent `/authorize` requests naming 1 GiB client ID metadata documents; peak RSS above baseline ([`oauth_fetch`]) |
//! | OAuth registration flood | 60 KiB registrations from eight connections without a token while a client refreshes its grant: its p99 ratio, the state file's size, RSS ([`oauth_flood`]) |
//! | approval integrity | every hidden character (controls, bidirectional and format characters) in approved commands and agent text, scanned for in every agent tool answer; models a CLI could read as an option ([`approval_integrity`]) |
//! | host-path redaction | agent output with host paths glued to any byte, percent- and JSON-escaped, behind `/proc/self/root`, in other workdirs and users' homes, read back from the approval, the task, its result and its events ([`redaction`]) |
//!
//! Property tests run beside it, from `scripts/soak.sh` (they are cargo
//! tests, with `PROPTEST_CASES` set by the profile).

mod approval_integrity;
mod bridge;
mod http_abuse;
mod http_mixed;
mod kills;
mod oauth_fetch;
mod oauth_flood;
mod paths;
mod redaction;
mod swap;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::SoakArgs;

/// How much of everything a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// About three minutes on two cores, for every CI run.
    Short,
    /// About ten minutes on two cores.
    Long,
}

impl Profile {
    /// `short` for the short profile, else `long`.
    fn pick<T>(self, short: T, long: T) -> T {
        match self {
            Profile::Short => short,
            Profile::Long => long,
        }
    }
}

/// One check's line in the table.
pub struct Outcome {
    /// The check.
    pub check: &'static str,
    /// How many attempts it made (paths × tools, operations, kills…).
    pub attempts: u64,
    /// What must be zero, each with its count.
    pub failures: Vec<(&'static str, u64)>,
    /// What it measured, as text.
    pub figures: String,
}

impl Outcome {
    fn failed(&self) -> bool {
        self.failures.iter().any(|(_, count)| *count > 0)
    }
}

/// The binaries and the profile, for every check.
pub struct Setup {
    /// `serverfs`.
    pub serverfs: PathBuf,
    /// `serverfs-agent-bridge`.
    pub bridge: PathBuf,
    /// The profile.
    pub profile: Profile,
}

/// One check: runs against the binaries, returns its table lines.
type Check = fn(&Setup) -> Result<Vec<Outcome>, String>;

/// Runs every check, prints the table, and says whether all held.
pub fn run(args: &SoakArgs) -> Result<bool, String> {
    let setup = Setup {
        serverfs: existing(&args.serverfs)?,
        bridge: existing(&args.bridge)?,
        profile: args.profile,
    };
    let started = std::time::Instant::now();
    let checks: [(&str, Check); 10] = [
        ("hostile paths", paths::run),
        ("symlink swap", swap::run),
        ("SIGKILL", kills::run),
        ("HTTP abuse", http_abuse::run),
        ("HTTP mixed attack", http_mixed::run),
        ("Bridge kills", bridge::run),
        ("OAuth metadata documents", oauth_fetch::run),
        ("OAuth registration flood", oauth_flood::run),
        ("approval integrity", approval_integrity::run),
        ("host-path redaction", redaction::run),
    ];
    let mut outcomes = Vec::new();
    for (name, check) in checks {
        if args
            .only
            .as_ref()
            .is_some_and(|only| !name.contains(only.as_str()))
        {
            continue;
        }
        eprintln!("soak: {name}…");
        outcomes.extend(check(&setup).map_err(|e| format!("{name}: {e}"))?);
    }
    print!("{}", table(&outcomes));
    println!(
        "\nprofile {:?}, {:.0} s",
        setup.profile,
        started.elapsed().as_secs_f64()
    );
    Ok(!outcomes.iter().any(Outcome::failed))
}

fn existing(path: &Path) -> Result<PathBuf, String> {
    if path.is_file() {
        Ok(path.to_path_buf())
    } else {
        Err(format!(
            "{} not found; run `cargo build --release -p serverfs -p serverfs-agent-bridge`",
            path.display()
        ))
    }
}

/// The Markdown table of all outcomes.
fn table(outcomes: &[Outcome]) -> String {
    let mut out =
        String::from("| check | attempts | must be zero | figures |\n|---|---:|---|---|\n");
    for outcome in outcomes {
        let failures: Vec<String> = outcome
            .failures
            .iter()
            .map(|(what, count)| {
                if *count > 0 {
                    format!("**{what} {count}**")
                } else {
                    format!("{what} 0")
                }
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            outcome.check,
            outcome.attempts,
            failures.join(", "),
            outcome.figures
        ));
    }
    out
}

/// A deterministic pseudo-random sequence (xorshift64*), so that a run's
/// generated paths and kill delays are the same every time.
pub struct Rng(u64);

impl Rng {
    /// A sequence from `seed` (never zero inside).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    /// A duration between `low` and `high`.
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let span = high.saturating_sub(low).as_micros().max(1);
        let span = u64::try_from(span).unwrap_or(u64::MAX);
        low + Duration::from_micros(self.below(span))
    }
}

/// A throw-away directory for one check, with an empty `root` directory
/// in it (the workdir the check serves).
pub fn scratch() -> Result<(tempfile::TempDir, PathBuf), String> {
    let tmp = tempfile::Builder::new()
        .prefix("serverfs-soak-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    Ok((tmp, root))
}

/// A path as a TOML basic string (JSON string syntax is a subset of it).
pub fn toml_string(path: &Path) -> Result<String, String> {
    let text = path
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))?;
    serde_json::to_string(text).map_err(|e| e.to_string())
}

/// A path as text, or an error naming it.
pub fn text(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}
