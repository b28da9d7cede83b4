//! Deterministic corpora.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The literal the search benchmark looks for.
pub const NEEDLE: &str = "SERVERFS_BENCH_NEEDLE_7c1d";

/// Generated corpora.
pub struct Corpora {
    /// Tree A.
    pub tree: PathBuf,
    /// Directory holding log B.
    pub log_dir: PathBuf,
    /// Lines in log B.
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
    let (dirs, files_per_dir, log_bytes) = if quick {
        (40, 50, 32u64 << 20)
    } else {
        (400, 50, 256u64 << 20)
    };
    let tag = format!("v1-{dirs}x{files_per_dir}-{log_bytes}");
    let tree = base.join(format!("tree-{tag}"));
    let log_dir = base.join(format!("log-{tag}"));
    let done = base.join(format!("done-{tag}"));
    let log_lines_file = base.join(format!("lines-{tag}"));
    if done.exists() {
        let log_lines = std::fs::read_to_string(&log_lines_file)?
            .trim()
            .parse()
            .unwrap_or(0);
        return Ok(Corpora {
            tree,
            log_dir,
            log_lines,
        });
    }
    eprintln!("generating corpora under {} (once)…", base.display());
    let _ = std::fs::remove_dir_all(&tree);
    let _ = std::fs::remove_dir_all(&log_dir);
    std::fs::create_dir_all(&tree)?;
    std::fs::create_dir_all(&log_dir)?;
    let mut rng = Rng(0x5e4f_e5f5_0000_0001);
    let mut file_number = 0u64;
    for d in 0..dirs {
        let dir = tree.join(format!("dir{d:03}"));
        std::fs::create_dir(&dir)?;
        for f in 0..files_per_dir {
            let mut out =
                BufWriter::new(std::fs::File::create(dir.join(format!("file{f:02}.txt")))?);
            let mut written = 0usize;
            let needle_line = (file_number % 100 == 37).then(|| rng.next() % 100);
            let mut line = 0u64;
            while written < 8 * 1024 {
                let mut text = String::new();
                for _ in 0..8 {
                    text.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
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
            file_number += 1;
        }
    }
    let mut out =
        BufWriter::with_capacity(1 << 20, std::fs::File::create(log_dir.join("big.log"))?);
    let (mut written, mut lines) = (0u64, 0u64);
    while written < log_bytes {
        let text = format!(
            "2026-11-30T12:{:02}:{:02}.{:03}Z INFO worker-{:02} {} {} {} id={:016x}\n",
            (lines / 60) % 60,
            lines % 60,
            lines % 1000,
            rng.next() % 32,
            WORDS[(rng.next() % WORDS.len() as u64) as usize],
            WORDS[(rng.next() % WORDS.len() as u64) as usize],
            WORDS[(rng.next() % WORDS.len() as u64) as usize],
            rng.next()
        );
        written += text.len() as u64;
        lines += 1;
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    std::fs::write(&log_lines_file, lines.to_string())?;
    std::fs::write(&done, "")?;
    Ok(Corpora {
        tree,
        log_dir,
        log_lines: lines,
    })
}
