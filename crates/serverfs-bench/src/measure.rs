//! The measurements of the default benchmark, and what they share.
//!
//! Every figure with a peer is measured in rounds: each round measures
//! ServerFS and then its anchor, or the anchor first on odd rounds, so that
//! drift on the machine (and whoever goes first warming a cache) touches
//! both alike. A row shows the median of each side's per-round values and
//! the median of the per-round ratios.

use std::time::{Duration, Instant};

use crate::corpus::{self, Corpora};
use crate::report::Row;
use crate::{Args, Section};

/// What every section needs: the binaries, the corpora, the counts.
pub struct Setup {
    /// The serverfs binary.
    pub serverfs: String,
    /// The ripgrep binary.
    pub rg: String,
    /// The reference server's program and arguments (its allowed
    /// directory is appended per use), when given.
    pub reference: Option<(String, Vec<String>)>,
    /// Rounds per figure.
    pub runs: usize,
    /// Calls per latency sample.
    pub calls: usize,
    /// The corpora.
    pub corpora: Corpora,
}

impl Setup {
    /// `serve --workdir alias=path…` for serverfs.
    pub fn serve(&self, workdirs: &[(&str, &std::path::Path)]) -> Result<Vec<String>, String> {
        let mut argv = vec!["serve".to_owned()];
        for (alias, path) in workdirs {
            argv.push("--workdir".to_owned());
            argv.push(format!("{alias}={}", path_str(path)?));
        }
        Ok(argv)
    }

    /// The reference server's command line for `directory`.
    pub fn reference_for(
        &self,
        directory: &std::path::Path,
    ) -> Result<Option<(String, Vec<String>)>, String> {
        let Some((program, args)) = &self.reference else {
            return Ok(None);
        };
        let mut args = args.clone();
        args.push(path_str(directory)?);
        Ok(Some((program.clone(), args)))
    }
}

/// The environment every serverfs instance gets: search results up to the
/// largest request the benchmark makes (and nothing else changed, so the
/// audit line of every call is written, as in a deployment).
pub const SERVERFS_ENV: &[(&str, &str)] = &[("SERVERFS_MAX_SEARCH_RESULTS", "10000")];

/// How a section measures its rows.
type SectionRows = fn(&Setup) -> Result<Vec<Row>, String>;

/// Runs the measurements of the sections asked for (all by default) and
/// returns the table rows.
pub fn run(args: &Args) -> Result<Vec<Row>, String> {
    let corpora = corpus::prepare(&args.corpus, args.quick).map_err(|e| format!("corpus: {e}"))?;
    let serverfs = path_str(&args.serverfs)?;
    if !args.serverfs.exists() {
        return Err(format!(
            "{serverfs} not found; run `cargo build --release -p serverfs` first"
        ));
    }
    let reference = match &args.reference {
        Some(command) => {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words.next().ok_or("--reference is empty")?;
            Some((program, words.collect()))
        }
        None => None,
    };
    if args.runs < 2 {
        return Err("--runs must be at least 2 (rounds alternate which side goes first)".into());
    }
    let setup = Setup {
        serverfs,
        rg: args.rg.clone(),
        reference,
        runs: args.runs,
        calls: args.calls,
        corpora,
    };
    let sections: [(Section, SectionRows); 5] = [
        (Section::Search, crate::search::rows),
        (Section::Calls, crate::calls::rows),
        (Section::Bigfile, crate::bigfile::rows),
        (Section::Http, crate::http::rows),
        (Section::Cancel, crate::cancel::rows),
    ];
    let mut rows = Vec::new();
    for (section, section_rows) in sections {
        if args.only.is_empty() || args.only.contains(&section) {
            rows.extend(section_rows(&setup)?);
        }
    }
    Ok(rows)
}

/// One value per round for each side of a figure.
#[derive(Debug, Default)]
pub struct Paired {
    ours: Vec<f64>,
    peer: Vec<f64>,
}

impl Paired {
    /// Records one round.
    pub fn push(&mut self, ours: f64, peer: Option<f64>) {
        self.ours.push(ours);
        if let Some(peer) = peer {
            self.peer.push(peer);
        }
    }

    /// The row: medians of each side, median of the per-round ratios.
    pub fn row(&self, figure: String, unit: &'static str, target: &'static str) -> Row {
        let paired = self.peer.len() == self.ours.len() && !self.peer.is_empty();
        let ratios: Vec<f64> = self
            .ours
            .iter()
            .zip(&self.peer)
            .filter(|(_, p)| **p > 0.0)
            .map(|(o, p)| o / p)
            .collect();
        Row {
            figure,
            serverfs: median(&self.ours),
            peer: paired.then(|| median(&self.peer)),
            ratio: (paired && !ratios.is_empty()).then(|| median(&ratios)),
            unit,
            target,
        }
    }
}

/// The median (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if !n.is_multiple_of(2) => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Milliseconds.
pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p` quantile of `samples` (nearest rank), in milliseconds.
pub fn percentile(samples: &[Duration], p: f64) -> f64 {
    let ms: Vec<f64> = samples.iter().map(|d| millis(*d)).collect();
    quantile(&ms, p)
}

/// The `p` quantile (nearest rank) of `samples`.
pub fn quantile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Runs `work` and returns its value and how long it took, in ms.
pub fn timed<T>(work: impl FnOnce() -> Result<T, String>) -> Result<(T, f64), String> {
    let started = Instant::now();
    let value = work()?;
    Ok((value, millis(started.elapsed())))
}

/// Runs the two sides of one round, ServerFS first on even rounds: the
/// values of `ours` and `peer`.
pub fn round<A, B>(
    index: usize,
    ours: impl FnOnce() -> Result<A, String>,
    peer: impl FnOnce() -> Result<B, String>,
) -> Result<(A, B), String> {
    if index.is_multiple_of(2) {
        let a = ours()?;
        Ok((a, peer()?))
    } else {
        let b = peer()?;
        Ok((ours()?, b))
    }
}

/// A path as an absolute UTF-8 string.
pub fn path_str(path: &std::path::Path) -> Result<String, String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    absolute
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}
