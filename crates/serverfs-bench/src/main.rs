//! `serverfs-bench`: ServerFS side by side with `rg` and the reference MCP
//! filesystem server, measured in one run, printed as one table.
//!
//! Corpora are generated deterministically (and reused when present):
//! A — 20,000 files of ~8 KiB in 400 directories, a literal needle in 1%
//! of them; B — one 256 MiB log of ~3 million lines. Each figure is the
//! median of `--runs` alternating runs (ServerFS, then the peer, then
//! ServerFS…), so drift on the machine affects both sides alike.

mod corpus;
mod mcp;
mod measure;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "Benchmark ServerFS against rg and the reference MCP filesystem server")]
pub struct Args {
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
    /// Runs per figure (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Calls per latency figure.
    #[arg(long, default_value_t = 200)]
    pub calls: usize,
    /// Smaller corpora (2,000 files, 32 MiB log) for a quick look.
    #[arg(long)]
    pub quick: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("serverfs-bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(measure::run(&args)) {
        Ok(rows) => {
            print!("{}", report::table(&rows));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("serverfs-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
