//! Per-call latency of the small tools against the reference server, and
//! cold start, both over stdio through the same raw client.

use std::time::Instant;

use serde_json::{Value, json};

use crate::measure::{Paired, SERVERFS_ENV, Setup, millis, quantile, round};
use crate::report::Row;
use crate::stdio::StdioServer;

/// The per-call p50 target of the issue, as a ratio to the reference.
const P50_TARGET: &str = "≤ 0.3×";

/// One per-call comparison: our tool and arguments, the reference's.
struct Case {
    figure: &'static str,
    tool: &'static str,
    arguments: Value,
    peer_tool: &'static str,
    peer_arguments: Value,
}

/// The per-call rows (p50 and p99 of each tool) and the cold-start row.
pub fn rows(setup: &Setup) -> Result<Vec<Row>, String> {
    // The middle tree: 20,000 files (2,000 with --quick).
    let tree = &setup.corpora.trees[1].path;
    let peer_command = setup.reference_for(tree)?;
    let dir = tree.join("dir0000");
    let file = dir.join("file00.txt");
    let (dir, file) = (
        crate::measure::path_str(&dir)?,
        crate::measure::path_str(&file)?,
    );
    // list_directory is compared with the reference's plain listing (names
    // and types only) both as it is by default and without metadata (the
    // same facts), and with the reference's listing with sizes, which, like
    // our default, stats every entry.
    let cases = [
        Case {
            figure: "stat_file",
            tool: "stat_file",
            arguments: json!({"workdir": "a", "path": "dir0000/file00.txt"}),
            peer_tool: "get_file_info",
            peer_arguments: json!({"path": file}),
        },
        Case {
            figure: "read_text_file 8 KiB",
            tool: "read_text_file",
            arguments: json!({"workdir": "a", "path": "dir0000/file00.txt"}),
            peer_tool: "read_text_file",
            peer_arguments: json!({"path": file}),
        },
        Case {
            figure: "list_directory 50 entries",
            tool: "list_directory",
            arguments: json!({"workdir": "a", "path": "dir0000"}),
            peer_tool: "list_directory",
            peer_arguments: json!({"path": dir}),
        },
        Case {
            figure: "list_directory 50 entries, metadata false",
            tool: "list_directory",
            arguments: json!({"workdir": "a", "path": "dir0000", "metadata": false}),
            peer_tool: "list_directory",
            peer_arguments: json!({"path": dir}),
        },
        Case {
            figure: "list_directory 50 entries",
            tool: "list_directory",
            arguments: json!({"workdir": "a", "path": "dir0000"}),
            peer_tool: "list_directory_with_sizes",
            peer_arguments: json!({"path": dir}),
        },
    ];
    let serve = setup.serve(&[("a", tree)])?;
    let mut ours = StdioServer::spawn(&setup.serverfs, &serve, SERVERFS_ENV)?;
    let mut peer = match &peer_command {
        Some((program, args)) => Some(StdioServer::spawn(program, args, &[])?),
        None => None,
    };
    let mut rows = Vec::new();
    for case in &cases {
        let (mut p50, mut p99) = (Paired::default(), Paired::default());
        for index in 0..setup.runs {
            let (mine, theirs) = round(
                index,
                || latencies(&mut ours, case.tool, &case.arguments, setup.calls),
                || match peer.as_mut() {
                    Some(peer) => {
                        latencies(peer, case.peer_tool, &case.peer_arguments, setup.calls).map(Some)
                    }
                    None => Ok(None),
                },
            )?;
            p50.push(
                quantile(&mine, 0.5),
                theirs.as_deref().map(|t| quantile(t, 0.5)),
            );
            p99.push(
                quantile(&mine, 0.99),
                theirs.as_deref().map(|t| quantile(t, 0.99)),
            );
        }
        let versus = format!("vs {}", case.peer_tool);
        rows.push(p50.row(format!("{} p50 ({versus})", case.figure), "ms", P50_TARGET));
        rows.push(p99.row(format!("{} p99 ({versus})", case.figure), "ms", ""));
    }
    drop((ours, peer));

    let mut cold = Paired::default();
    for index in 0..setup.runs {
        let (mine, theirs) = round(
            index,
            || {
                StdioServer::spawn(&setup.serverfs, &serve, SERVERFS_ENV)
                    .map(|s| millis(s.cold_start))
            },
            || match &peer_command {
                Some((program, args)) => {
                    StdioServer::spawn(program, args, &[]).map(|s| Some(millis(s.cold_start)))
                }
                None => Ok(None),
            },
        )?;
        cold.push(mine, theirs);
    }
    rows.push(cold.row(
        "cold start to the first tools/list answer".to_owned(),
        "ms",
        "≤ 50 ms",
    ));
    Ok(rows)
}

/// `calls` sequential calls of `tool`, each timed, in ms.
pub fn latencies(
    server: &mut StdioServer,
    tool: &str,
    arguments: &Value,
    calls: usize,
) -> Result<Vec<f64>, String> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        server.call(tool, arguments.clone())?;
        samples.push(millis(started.elapsed()));
    }
    Ok(samples)
}
