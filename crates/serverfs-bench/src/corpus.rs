//! Deterministic corpora, generated once and reused.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The literal the literal search looks for: in 1 % of the files.
pub const NEEDLE: &str = "SERVERFS_BENCH_NEEDLE_7c1d";
/// A regular expression without a literal the whole match needs: five
/// words in a row, on about one line in a hundred files.
pub const REGEX: &str = r"zulu [a-z]+ kilo [a-z]+ lima";
/// A literal found nowhere: the pure cost of reading every file.
pub const ABSENT: &str = "SERVERFS_BENCH_ABSENT_0f3e";
/// Files per directory of every tree.
pub const FILES_PER_DIR: usize = 50;

/// One tree: `files` files of ~8 KiB in directories of 50.
pub struct Tree {
    /// Where it is.
    pub path: PathBuf,
    /// How many files it holds.
    pub files: usize,
}

/// The generated corpora.
pub struct Corpora {
    /// Trees of growing size (5k, 20k, 80k files; a tenth with --quick).
    pub trees: Vec<Tree>,
    /// Directory holding the big log, `big.log`.
    pub log_dir: PathBuf,
    /// Lines in the big log.
    pub log_lines: u64,
}

/// A small xorshift generator: the same seed gives the same corpus on
/// every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn word(&mut self) -> &'static str {
        WORDS[(self.next() % WORDS.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "request",
    "handler",
    "timeout",
    "connection",
    "session",
    "worker",
    "buffer",
    "index",
];

/// Creates (or reuses) the corpora under `base`.
pub fn prepare(base: &Path, quick: bool) -> std::io::Result<Corpora> {
    let (sizes, log_bytes): (&[usize], u64) = if quick {
        (&[500, 2_000, 8_000], 32 << 20)
    } else {
        (&[5_000, 20_000, 80_000], 256 << 20)
    };
    let mut trees = Vec::new();
    for &files in sizes {
        trees.push(Tree {
            path: tree(base, files)?,
            files,
        });
    }
    let (log_dir, log_lines) = log(base, log_bytes)?;
    Ok(Corpora {
        trees,
        log_dir,
        log_lines,
    })
}

/// The tree of `files` files, generated unless a complete one exists.
fn tree(base: &Path, files: usize) -> std::io::Result<PathBuf> {
    let dir = base.join(format!("tree-v2-{files}"));
    let done = base.join(format!("done-tree-v2-{files}"));
    if done.exists() {
        return Ok(dir);
    }
    eprintln!("generating {files} files under {} (once)…", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    // Every tree is the same sequence, so the smaller ones are prefixes of
    // the larger: per-file costs compare across sizes.
    let mut rng = Rng(0x5e4f_e5f5_0000_0001);
    for number in 0..files {
        let sub = dir.join(format!("dir{:04}", number / FILES_PER_DIR));
        if number % FILES_PER_DIR == 0 {
            std::fs::create_dir(&sub)?;
        }
        let path = sub.join(format!("file{:02}.txt", number % FILES_PER_DIR));
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        let needle_line = (number % 100 == 37).then(|| rng.next() % 100);
        let (mut written, mut line) = (0usize, 0u64);
        while written < 8 * 1024 {
            let mut text = String::new();
            for _ in 0..8 {
                text.push_str(rng.word());
                text.push(' ');
            }
            if needle_line == Some(line) {
                text.push_str(NEEDLE);
            }
            text.push('\n');
            written += text.len();
            out.write_all(text.as_bytes())?;
            line += 1;
        }
        out.flush()?;
    }
    std::fs::write(&done, "")?;
    Ok(dir)
}

/// The log of `bytes` bytes, and its line count.
fn log(base: &Path, bytes: u64) -> std::io::Result<(PathBuf, u64)> {
    let dir = base.join(format!("log-v2-{bytes}"));
    let done = base.join(format!("done-log-v2-{bytes}"));
    if let Ok(lines) = std::fs::read_to_string(&done) {
        let lines = lines.trim().parse().map_err(std::io::Error::other)?;
        return Ok((dir, lines));
    }
    eprintln!("generating a {} MiB log (once)…", bytes >> 20);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(0x5e4f_e5f5_0000_0002);
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join("big.log"))?);
    let (mut written, mut lines) = (0u64, 0u64);
    while written < bytes {
        let text = format!(
            "2026-11-30T12:{:02}:{:02}.{:03}Z INFO worker-{:02} {} {} {} id={:016x}\n",
            (lines / 60) % 60,
            lines % 60,
            lines % 1000,
            rng.next() % 32,
            rng.word(),
            rng.word(),
            rng.word(),
            rng.next()
        );
        written += text.len() as u64;
        lines += 1;
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    std::fs::write(&done, lines.to_string())?;
    Ok((dir, lines))
}
