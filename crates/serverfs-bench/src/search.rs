//! `search_text` and `find_files` against `rg` on trees of three sizes.
//!
//! Each call of ours is one MCP round trip (its fixed cost is ~0.2 ms), each
//! of rg's a process start (~2 ms): at the small tree those fixed costs
//! dominate. The slope rows compare what grows with the tree — time per
//! extra file between the smallest and the largest tree, per round — which
//! is the per-file cost of walking, opening and searching.

use serde_json::{Value, json};

use crate::corpus::{ABSENT, NEEDLE, REGEX};
use crate::measure::{Paired, SERVERFS_ENV, Setup, path_str, round, timed};
use crate::report::Row;
use crate::stdio::StdioServer;

/// Glob for the find rows: 5 of every directory's 50 files (8,000 at 80,000
/// files, under the largest result limit of 10,000).
const FIND_GLOB: &str = "file3[0-4].txt";

/// One kind of query: how to ask ServerFS and how to ask rg.
struct Query {
    name: &'static str,
    tool: &'static str,
    arguments: fn(&str) -> Value,
    rg: fn(&str) -> Vec<String>,
    target: &'static str,
}

const QUERIES: &[Query] = &[
    Query {
        name: "search_text literal",
        tool: "search_text",
        arguments: |alias| json!({"workdir": alias, "query": NEEDLE, "limit": 10000}),
        rg: |path| strings(&["--fixed-strings", "--no-messages", "-n", NEEDLE, path]),
        target: "≤ 1.1×",
    },
    Query {
        name: "search_text regex",
        tool: "search_text",
        arguments: |alias| json!({"workdir": alias, "query": REGEX, "mode": "regex", "limit": 10000}),
        rg: |path| strings(&["--no-messages", "-n", REGEX, path]),
        target: "",
    },
    Query {
        name: "search_text zero-match",
        tool: "search_text",
        arguments: |alias| json!({"workdir": alias, "query": ABSENT, "limit": 10000}),
        rg: |path| strings(&["--fixed-strings", "--no-messages", "-n", ABSENT, path]),
        target: "≤ 1.1×",
    },
    Query {
        name: "find_files",
        tool: "find_files",
        arguments: |alias| json!({"workdir": alias, "pattern": FIND_GLOB, "limit": 10000}),
        rg: |path| strings(&["--files", "-g", FIND_GLOB, path]),
        target: "",
    },
];

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// The search and find rows.
pub fn rows(setup: &Setup) -> Result<Vec<Row>, String> {
    let trees = &setup.corpora.trees;
    let aliases: Vec<String> = trees.iter().map(|t| format!("t{}", t.files)).collect();
    let workdirs: Vec<(&str, &std::path::Path)> = aliases
        .iter()
        .zip(trees)
        .map(|(alias, tree)| (alias.as_str(), tree.path.as_path()))
        .collect();
    let mut server = StdioServer::spawn(&setup.serverfs, &setup.serve(&workdirs)?, SERVERFS_ENV)?;
    let mut rows = Vec::new();
    for query in QUERIES {
        // What rg finds is what ServerFS must return, complete.
        let mut expected = Vec::new();
        for tree in trees {
            expected.push(run_rg(&setup.rg, &(query.rg)(&path_str(&tree.path)?))?);
        }
        let mut per_tree: Vec<Paired> = trees.iter().map(|_| Paired::default()).collect();
        let mut slope = Paired::default();
        for index in 0..setup.runs {
            let mut times = Vec::new();
            for (t, tree) in trees.iter().enumerate() {
                let rg_args = (query.rg)(&path_str(&tree.path)?);
                let (ours, theirs) = round(
                    index,
                    || {
                        let (result, ms) =
                            timed(|| server.call(query.tool, (query.arguments)(&aliases[t])))?;
                        check(&result, expected[t], query.name, tree.files)?;
                        Ok(ms)
                    },
                    || timed(|| run_rg(&setup.rg, &rg_args)).map(|(_, ms)| ms),
                )?;
                per_tree[t].push(ours, Some(theirs));
                times.push((ours, theirs));
            }
            let (first, last) = (times[0], times[times.len() - 1]);
            let extra_files = (trees[trees.len() - 1].files - trees[0].files) as f64;
            // Microseconds per extra file.
            slope.push(
                (last.0 - first.0) * 1000.0 / extra_files,
                Some((last.1 - first.1) * 1000.0 / extra_files),
            );
        }
        for (t, tree) in trees.iter().enumerate() {
            let anchor = if query.tool == "find_files" {
                "rg --files -g"
            } else {
                "rg"
            };
            let largest = t + 1 == trees.len();
            rows.push(per_tree[t].row(
                format!("{}, {} files (vs {anchor})", query.name, tree.files),
                "ms",
                if largest { query.target } else { "" },
            ));
        }
        rows.push(slope.row(
            format!(
                "{}, per extra file {}→{} files (vs rg)",
                query.name,
                trees[0].files,
                trees[trees.len() - 1].files
            ),
            "µs",
            query.target,
        ));
    }
    Ok(rows)
}

/// Runs rg and counts its output lines (matches, or files).
fn run_rg(rg: &str, args: &[String]) -> Result<u64, String> {
    let out = std::process::Command::new(rg)
        .args(args)
        .output()
        .map_err(|e| format!("running {rg}: {e} (install ripgrep)"))?;
    Ok(out.stdout.iter().filter(|b| **b == b'\n').count() as u64)
}

fn check(result: &Value, want: u64, what: &str, files: usize) -> Result<(), String> {
    let got = result["returned"].as_u64().unwrap_or(0);
    if got != want || result["truncated"] == json!(true) {
        return Err(format!(
            "{what} over {files} files returned {got} results (truncated: {}), rg found {want}",
            result["truncated"]
        ));
    }
    Ok(())
}
