//! The measurements.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Args;
use crate::corpus::{self, NEEDLE};
use crate::mcp::Connected;
use crate::report::Row;

/// Glob for the find benchmark: 10 of every directory's 50 files.
const FIND_GLOB: &str = "file3?.txt";

/// Runs every measurement and returns the table rows.
pub async fn run(args: &Args) -> Result<Vec<Row>, String> {
    let corpora = corpus::prepare(&args.corpus, args.quick).map_err(|e| format!("corpus: {e}"))?;
    let serverfs = args
        .serverfs
        .to_str()
        .ok_or("--serverfs is not UTF-8")?
        .to_owned();
    if !args.serverfs.exists() {
        return Err(format!(
            "{serverfs} not found; run `cargo build --release -p serverfs` first"
        ));
    }
    let tree = path_str(&corpora.tree)?;
    let log_dir = path_str(&corpora.log_dir)?;
    let serve = |specs: Vec<String>| {
        let mut argv = vec!["serve".to_owned()];
        for spec in specs {
            argv.push("--workdir".to_owned());
            argv.push(spec);
        }
        argv
    };
    let env: &[(&str, &str)] = &[
        ("SERVERFS_MAX_SEARCH_RESULTS", "10000"),
        ("SERVERFS_LOG_LEVEL", "error"),
    ];
    let mut rows = Vec::new();

    // Search and find over A, against rg.
    let server = Connected::spawn(&serverfs, &serve(vec![format!("a={tree}")]), env).await?;
    let needle_files = count_rg(
        &args.rg,
        &["--fixed-strings", "--no-messages", "-n", NEEDLE, &tree],
    )?;
    let find_files = count_rg(&args.rg, &["--files", "-g", FIND_GLOB, &tree])?;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        let started = Instant::now();
        let result = server
            .call(
                "search_text",
                json!({"workdir": "a", "query": NEEDLE, "limit": 1000}),
            )
            .await?;
        ours.push(started.elapsed());
        expect_count(&result, "returned", needle_files, "search_text")?;
        let started = Instant::now();
        count_rg(
            &args.rg,
            &["--fixed-strings", "--no-messages", "-n", NEEDLE, &tree],
        )?;
        theirs.push(started.elapsed());
    }
    rows.push(timing_row(
        format!(
            "search_text, {} files (vs rg)",
            corpora_files(&corpora.tree)
        ),
        &ours,
        Some(&theirs),
        "≤ 1.5×",
    ));
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        let started = Instant::now();
        let result = server
            .call(
                "find_files",
                json!({"workdir": "a", "pattern": FIND_GLOB, "limit": 10000}),
            )
            .await?;
        ours.push(started.elapsed());
        expect_count(&result, "returned", find_files, "find_files")?;
        let started = Instant::now();
        count_rg(&args.rg, &["--files", "-g", FIND_GLOB, &tree])?;
        theirs.push(started.elapsed());
    }
    rows.push(timing_row(
        "find_files (vs rg --files -g)".to_owned(),
        &ours,
        Some(&theirs),
        "≤ 3×",
    ));

    // Per-call latency against the reference server.
    let reference = match &args.reference {
        Some(command) => {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words.next().ok_or("--reference is empty")?;
            let mut argv: Vec<String> = words.collect();
            argv.push(tree.clone());
            Some((program, argv))
        }
        None => None,
    };
    let peer = match &reference {
        Some((program, argv)) => Some(Connected::spawn(program, argv, &[]).await?),
        None => None,
    };
    let file = format!("{tree}/dir000/file00.txt");
    let dir = format!("{tree}/dir000");
    // list_directory is compared twice: with the reference's plain listing
    // (names and types only) and with its listing with sizes, which, like
    // ours, stats every entry.
    let calls: [(&str, Value, &str, Value); 4] = [
        (
            "stat_file",
            json!({"workdir": "a", "path": "dir000/file00.txt"}),
            "get_file_info",
            json!({"path": file}),
        ),
        (
            "list_directory",
            json!({"workdir": "a", "path": "dir000"}),
            "list_directory",
            json!({"path": dir}),
        ),
        (
            "list_directory",
            json!({"workdir": "a", "path": "dir000"}),
            "list_directory_with_sizes",
            json!({"path": dir}),
        ),
        (
            "read_text_file",
            json!({"workdir": "a", "path": "dir000/file00.txt"}),
            "read_text_file",
            json!({"path": file}),
        ),
    ];
    for (tool, ours_args, peer_tool, peer_args) in calls {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..args.calls {
            let started = Instant::now();
            server.call(tool, ours_args.clone()).await?;
            ours.push(started.elapsed());
            if let Some(peer) = &peer {
                let started = Instant::now();
                peer.call(peer_tool, peer_args.clone()).await?;
                theirs.push(started.elapsed());
            }
        }
        let theirs = (!theirs.is_empty()).then_some(&theirs[..]);
        rows.push(timing_row(
            format!("{tool} p50 (vs {peer_tool})"),
            &ours,
            theirs,
            "≤ 0.5×",
        ));
        rows.push(percentile_row(
            format!("{tool} p95 (vs {peer_tool})"),
            &ours,
            theirs,
            0.95,
        ));
    }
    server.close().await;
    if let Some(peer) = peer {
        peer.close().await;
    }

    // Paging the big log: a fresh server, so its peak RSS is the paging's.
    let pager = Connected::spawn(&serverfs, &serve(vec![format!("b={log_dir}")]), env).await?;
    let near_end = corpora.log_lines.saturating_sub(400).max(1);
    let (mut by_line, mut by_cursor) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        let started = Instant::now();
        let page = pager
            .call(
                "read_text_file",
                json!({"workdir": "b", "path": "big.log", "start_line": near_end}),
            )
            .await?;
        by_line.push(started.elapsed());
        let cursor = page["next_cursor"]
            .as_str()
            .ok_or("no next_cursor near the end of B")?
            .to_owned();
        let started = Instant::now();
        pager
            .call(
                "read_text_file",
                json!({"workdir": "b", "path": "big.log", "cursor": cursor}),
            )
            .await?;
        by_cursor.push(started.elapsed());
    }
    rows.push(timing_row(
        format!("read page at line {near_end} of B by cursor (vs by start_line)"),
        &by_cursor,
        Some(&by_line),
        "O(page) vs O(file)",
    ));
    let rss = pager
        .peak_rss_kib()
        .ok_or("cannot read the server's VmHWM")?;
    rows.push(Row {
        figure: format!(
            "peak RSS while paging B ({} MiB log)",
            log_size_mib(&corpora.log_dir)
        ),
        serverfs: rss as f64 / 1024.0,
        peer: None,
        unit: "MiB",
        target: "≤ 32 MiB",
    });
    pager.close().await;

    // Cold start to the first tools/list answer.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        let started = Connected::spawn(&serverfs, &serve(vec![format!("a={tree}")]), env).await?;
        ours.push(started.cold_start);
        started.close().await;
        if let Some((program, argv)) = &reference {
            let peer = Connected::spawn(program, argv, &[]).await?;
            theirs.push(peer.cold_start);
            peer.close().await;
        }
    }
    let theirs = (!theirs.is_empty()).then_some(&theirs[..]);
    rows.push(timing_row(
        "cold start to tools/list".to_owned(),
        &ours,
        theirs,
        "≤ 50 ms",
    ));
    Ok(rows)
}

fn path_str(path: &Path) -> Result<String, String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    absolute
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}

/// Runs rg and counts its output lines.
fn count_rg(rg: &str, args: &[&str]) -> Result<u64, String> {
    let out = std::process::Command::new(rg)
        .args(args)
        .output()
        .map_err(|e| format!("running {rg}: {e} (install ripgrep)"))?;
    Ok(out.stdout.iter().filter(|b| **b == b'\n').count() as u64)
}

fn expect_count(result: &Value, field: &str, want: u64, tool: &str) -> Result<(), String> {
    let got = result[field].as_u64().unwrap_or(0);
    if got != want || result["truncated"] == json!(true) {
        return Err(format!(
            "{tool} returned {got} results (truncated: {}), rg found {want}",
            result["truncated"]
        ));
    }
    Ok(())
}

fn corpora_files(tree: &Path) -> usize {
    std::fs::read_dir(tree)
        .map(|dirs| {
            dirs.filter_map(Result::ok)
                .filter_map(|d| std::fs::read_dir(d.path()).ok())
                .map(|files| files.count())
                .sum()
        })
        .unwrap_or(0)
}

fn log_size_mib(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("big.log")).map_or(0, |m| m.len() >> 20)
}

fn millis(d: &Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p` quantile of `samples` (nearest rank), in milliseconds.
pub(crate) fn percentile(samples: &[Duration], p: f64) -> f64 {
    let mut ms: Vec<f64> = samples.iter().map(millis).collect();
    ms.sort_by(f64::total_cmp);
    if ms.is_empty() {
        return 0.0;
    }
    let index = ((ms.len() - 1) as f64 * p).round() as usize;
    ms[index.min(ms.len() - 1)]
}

fn timing_row(
    figure: String,
    ours: &[Duration],
    theirs: Option<&[Duration]>,
    target: &'static str,
) -> Row {
    Row {
        figure,
        serverfs: percentile(ours, 0.5),
        peer: theirs.map(|t| percentile(t, 0.5)),
        unit: "ms",
        target,
    }
}

fn percentile_row(figure: String, ours: &[Duration], theirs: Option<&[Duration]>, p: f64) -> Row {
    Row {
        figure,
        serverfs: percentile(ours, p),
        peer: theirs.map(|t| percentile(t, p)),
        unit: "ms",
        target: "",
    }
}
