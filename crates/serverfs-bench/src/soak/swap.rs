//! A directory swapped with a symlink to outside, as fast as the kernel
//! allows (`renameat2(RENAME_EXCHANGE)`), while reads, searches, edits and
//! uploads go through it. An **escape** is an answer carrying the outside
//! marker or any change below `outside/`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Outcome, Setup, text};
use crate::stdio::StdioServer;

const MARKER: &str = "SOAK-OUTSIDE-93c1aa";
/// The outside `u.bin` (the marker alone) as a download would carry it.
const MARKER_BASE64: &str = "U09BSy1PVVRTSURFLTkzYzFhYQ==";

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let duration = Duration::from_secs(setup.profile.pick(30, 120));
    let tmp = tempfile::Builder::new()
        .prefix("serverfs-soak-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    let io = |e: std::io::Error| e.to_string();
    std::fs::create_dir_all(root.join("d")).map_err(io)?;
    std::fs::create_dir_all(&outside).map_err(io)?;
    std::fs::write(root.join("d/f.txt"), "inside-0\n").map_err(io)?;
    std::fs::write(root.join("d/u.bin"), "bytes").map_err(io)?;
    std::fs::write(outside.join("f.txt"), format!("{MARKER}\n")).map_err(io)?;
    std::fs::write(outside.join("u.bin"), MARKER).map_err(io)?;
    std::os::unix::fs::symlink("../outside", root.join("d.swap")).map_err(io)?;
    let outside_before = super::paths::snapshot(&outside);

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps, root) = (stop.clone(), swaps.clone(), root.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let swapped = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    root.join("d"),
                    rustix::fs::CWD,
                    root.join("d.swap"),
                    rustix::fs::RenameFlags::EXCHANGE,
                );
                if swapped.is_ok() {
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let spec = format!("w={}:rw", text(&root)?);
    let mut server = StdioServer::spawn(
        text(&setup.serverfs)?,
        &["serve".to_owned(), "--workdir".to_owned(), spec],
        &[("SERVERFS_BINARY_TRANSFER_ENABLED", "true")],
    )?;
    let (mut operations, mut escapes) = (0u64, 0u64);
    let started = Instant::now();
    let mut generation = 0u64;
    while started.elapsed() < duration {
        let mut answers: Vec<Value> = Vec::new();
        answers
            .push(server.call_any("read_text_file", json!({"workdir": "w", "path": "d/f.txt"}))?);
        answers.push(server.call_any(
            "search_text",
            json!({"workdir": "w", "path": "d", "query": "SOAK-OUTSIDE"}),
        )?);
        let stat = server.call_any("stat_file", json!({"workdir": "w", "path": "d/f.txt"}))?;
        if let Some(revision) = stat["structuredContent"]["revision"].as_str() {
            let edit = server.call_any(
                "edit_text_file",
                json!({"workdir": "w", "path": "d/f.txt", "expected_revision": revision,
                       "edits": [{"old_text": format!("inside-{generation}"),
                                  "new_text": format!("inside-{}", generation + 1)}]}),
            )?;
            if edit["isError"] != json!(true) {
                generation += 1;
            }
            answers.push(edit);
        }
        answers.push(stat);
        let stat = server.call_any("stat_file", json!({"workdir": "w", "path": "d/u.bin"}))?;
        if let Some(revision) = stat["structuredContent"]["revision"].as_str() {
            answers.push(server.call_any(
                "upload_binary_file",
                json!({"workdir": "w", "path": "d/u.bin", "overwrite": true,
                       "expected_revision": revision, "data_base64": "c3dhcHBlZA=="}),
            )?);
        }
        answers.push(stat);
        answers.push(server.call_any(
            "download_binary_file",
            json!({"workdir": "w", "path": "d/u.bin"}),
        )?);
        for answer in &answers {
            let shown = answer.to_string();
            operations += 1;
            // A download carries the bytes as base64: look for both forms.
            escapes += u64::from(shown.contains(MARKER) || shown.contains(MARKER_BASE64));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = swapper.join();
    drop(server);
    let changed = u64::from(super::paths::snapshot(&outside) != outside_before);
    Ok(vec![Outcome {
        check: "symlink swap (read/search/edit/upload)",
        attempts: operations,
        failures: vec![("escapes", escapes + changed)],
        figures: format!(
            "{} swaps in {:.0} s",
            swaps.load(Ordering::Relaxed),
            duration.as_secs_f64()
        ),
    }])
}
