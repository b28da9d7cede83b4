//! `serverfs-bench`: ServerFS side by side with its anchors, measured in
//! one run, printed as one table.
//!
//! Corpora are generated deterministically (and reused when present):
//! trees of 5,000, 20,000 and 80,000 files of ~8 KiB in directories of 50
//! (a literal needle in 1 % of the files), and one 256 MiB log of ~3
//! million lines (`--quick`: a tenth of the files, a 32 MiB log). The
//! anchors: `rg` for search and find (`search.rs`); the reference MCP
//! filesystem server for per-call latency, cold start (`calls.rs`) and
//! the big log's pages and memory (`bigfile.rs`); `GET /healthz` on the
//! same connections for MCP over HTTP, and stdio for HTTP's overhead
//! (`http.rs`); the anchor of a cancelled search is the same search left to
//! finish (`cancel.rs`). Every figure is measured in interleaved rounds
//! (`measure.rs`); the table shows medians and the median of the paired
//! ratios.
//!
//! `serverfs-bench bridge` measures the Agent Bridge daemon instead: RPC
//! round trips and submit → first event over its real socket, against a
//! `runtime.list` baseline measured in the same run (see `bridge.rs`).
//!
//! `serverfs-bench soak` is the fault suite: hostile clients and local
//! users against the real binaries, counting what must never happen
//! (see `soak/mod.rs`); it exits 1 when any count is not zero.

mod bigfile;
mod bridge;
mod calls;
mod cancel;
mod corpus;
mod http;
mod measure;
mod report;
mod rss;
mod search;
mod soak;
mod stdio;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Command line.
#[derive(Debug, Parser)]
#[command(
    about = "Benchmark ServerFS against rg, the reference MCP filesystem server and plain HTTP",
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    /// Another benchmark instead of the default one.
    #[command(subcommand)]
    pub mode: Option<Mode>,
    /// Where the corpora live (generated on first use).
    #[arg(long, default_value = "target/bench-corpus")]
    pub corpus: PathBuf,
    /// The serverfs binary to measure.
    #[arg(long, default_value = "target/release/serverfs")]
    pub serverfs: PathBuf,
    /// The ripgrep binary.
    #[arg(long, default_value = "rg")]
    pub rg: String,
    /// Command of the reference server (`node …/dist/index.js`); its
    /// allowed directory is appended. Without it those rows are skipped.
    #[arg(long)]
    pub reference: Option<String>,
    /// Rounds per figure, alternating which side goes first (medians are
    /// reported).
    #[arg(long, default_value_t = 7)]
    pub runs: usize,
    /// Calls per round of each latency figure (per client over HTTP).
    #[arg(long, default_value_t = 200)]
    pub calls: usize,
    /// Smaller corpora (500, 2,000 and 8,000 files, a 32 MiB log) for a
    /// quick look.
    #[arg(long)]
    pub quick: bool,
    /// Only these sections of rows (repeatable; default: all of them).
    #[arg(long, value_enum)]
    pub only: Vec<Section>,
}

/// The sections of rows of the default benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Section {
    /// `search_text` and `find_files` against rg.
    Search,
    /// Per-call latency and cold start against the reference server.
    Calls,
    /// The big log's pages and memory.
    Bigfile,
    /// MCP over HTTP against plain HTTP, and against stdio.
    Http,
    /// How soon a cancelled search ends.
    Cancel,
}

/// Benchmarks other than the default ServerFS one.
#[derive(Debug, Subcommand)]
pub enum Mode {
    /// The Agent Bridge daemon: task.get round trips and submit → first
    /// event over its Unix socket, 1 and N concurrent clients, against a
    /// runtime.list baseline and a raw socket echo.
    Bridge(BridgeArgs),
    /// The fault suite: hostile paths, symlink swaps, SIGKILLs, HTTP abuse
    /// and Bridge kills against the real binaries; fails on any escape,
    /// leak, torn file, lost or re-run task, or crash.
    Soak(SoakArgs),
}

/// `serverfs-bench soak` options.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// How much to do: `short` (about 3 minutes on 2 cores, run by CI) or
    /// `long` (about 10 minutes).
    #[arg(long, value_enum, default_value = "short")]
    pub profile: soak::Profile,
    /// The serverfs binary.
    #[arg(long, default_value = "target/release/serverfs")]
    pub serverfs: PathBuf,
    /// The serverfs-agent-bridge binary.
    #[arg(long, default_value = "target/release/serverfs-agent-bridge")]
    pub bridge: PathBuf,
    /// Run only the checks whose name contains this text.
    #[arg(long)]
    pub only: Option<String>,
}

/// `serverfs-bench bridge` options.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// The serverfs-agent-bridge binary to measure.
    #[arg(long, default_value = "target/release/serverfs-agent-bridge")]
    pub bridge: PathBuf,
    /// Concurrent clients of the second set of figures (1..=64), each on
    /// its own connection.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// Round trips per client per method (default 2,000; 200 with
    /// --quick).
    #[arg(long)]
    pub calls: Option<usize>,
    /// Tasks each client submits for submit → first event (default 20; 5
    /// with --quick).
    #[arg(long)]
    pub submits: Option<usize>,
    /// Fewer calls and submissions, for a fast look.
    #[arg(long)]
    pub quick: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let measured = match &args.mode {
        Some(Mode::Soak(soak)) => {
            return match soak::run(soak) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => {
                    eprintln!("serverfs-bench soak: a check failed (see the table)");
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("serverfs-bench soak: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        Some(Mode::Bridge(bridge)) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))
            .and_then(|runtime| runtime.block_on(bridge::run(bridge)))
            .map(|rows| report::table(&rows, "Bridge", "baseline")),
        None => measure::run(&args).map(|rows| report::table(&rows, "ServerFS", "anchor")),
    };
    match measured {
        Ok(table) => {
            print!("{table}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("serverfs-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
