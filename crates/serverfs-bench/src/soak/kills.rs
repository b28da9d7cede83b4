//! The server killed with SIGKILL while it replaces files: an edit loop
//! rewriting every line of a text file and an upload loop replacing a
//! binary file, each version self-checking (every line, every byte names
//! its generation). After each kill both files must be exactly one whole
//! version (**torn** otherwise); the temporary files a kill leaves
//! (`.serverfs-tmp-*`) must be gone once the server has started again
//! (**debris after restart**).

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::{Outcome, Rng, Setup, text};
use crate::stdio::StdioServer;

/// Lines of the text file (each `gen-<n> <index>`, padded to 64 bytes).
const LINES: usize = 1_024;
/// Bytes of the binary file (each the generation modulo 256).
const BYTES: usize = 1 << 20;
/// How long a restarted server may take to remove what a kill left.
const CLEANUP_WAIT: Duration = Duration::from_secs(10);

fn text_version(generation: u64) -> String {
    (0..LINES)
        .map(|i| format!("{:<63}\n", format!("gen-{generation} {i}")))
        .collect()
}

fn binary_version(generation: u64) -> Vec<u8> {
    vec![(generation % 256) as u8; BYTES]
}

/// Whether `content` is one whole text version: `LINES` lines, line `i`
/// reading `gen-<g> <i>` with the same `g` on every line.
fn whole_text(content: &str) -> bool {
    let mut generation = None;
    let mut count = 0;
    for (index, line) in content.lines().enumerate() {
        let mut words = line.split_whitespace();
        let (Some(tag), Some(number), None) = (words.next(), words.next(), words.next()) else {
            return false;
        };
        if !tag.starts_with("gen-") || number != index.to_string() {
            return false;
        }
        if *generation.get_or_insert(tag) != tag {
            return false;
        }
        count += 1;
    }
    count == LINES && content.ends_with('\n')
}

/// Whether `content` is one whole binary version.
fn whole_binary(content: &[u8]) -> bool {
    content.len() == BYTES && content.iter().all(|b| *b == content[0])
}

fn debris(root: &Path) -> u64 {
    std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(".serverfs-tmp-")
                })
                .count() as u64
        })
        .unwrap_or(0)
}

pub fn run(setup: &Setup) -> Result<Vec<Outcome>, String> {
    let kills = setup.profile.pick(40, 200);
    let (_tmp, root) = super::temp_root()?;
    std::fs::write(root.join("e.txt"), text_version(0)).map_err(|e| e.to_string())?;
    std::fs::write(root.join("u.bin"), binary_version(0)).map_err(|e| e.to_string())?;
    let spec = format!("w={}:rw", text(&root)?);
    let argv = ["serve".to_owned(), "--workdir".to_owned(), spec];
    let env = [
        ("SERVERFS_BINARY_TRANSFER_ENABLED", "true"),
        ("SERVERFS_MAX_WRITE_BYTES", "4194304"),
    ];
    let mut rng = Rng::new(0x5eed_0003);
    let (mut torn, mut left_after_kill, mut left_after_restart, mut replaced) = (0, 0, 0, 0u64);
    for _ in 0..kills {
        let mut server = StdioServer::spawn(text(&setup.serverfs)?, &argv, &env)?;
        let pid = server.pid();
        let delay = rng.between(Duration::from_millis(5), Duration::from_millis(800));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            if let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        });
        // Replace both files until the kill cuts a call short.
        while replace_both(&mut server, &mut replaced).is_ok() {}
        let _ = killer.join();
        drop(server);
        let text_now = std::fs::read_to_string(root.join("e.txt")).unwrap_or_default();
        let binary_now = std::fs::read(root.join("u.bin")).unwrap_or_default();
        torn += u64::from(!whole_text(&text_now)) + u64::from(!whole_binary(&binary_now));
        left_after_kill += debris(&root);
        // A new server removes what the killed one left.
        let restarted = StdioServer::spawn(text(&setup.serverfs)?, &argv, &env)?;
        let started = Instant::now();
        while debris(&root) > 0 && started.elapsed() < CLEANUP_WAIT {
            std::thread::sleep(Duration::from_millis(20));
        }
        left_after_restart += debris(&root);
        drop(restarted);
    }
    Ok(vec![Outcome {
        check: "SIGKILL during edit/upload replacement",
        attempts: kills,
        failures: vec![
            ("torn files", torn),
            ("debris after restart", left_after_restart),
        ],
        figures: format!(
            "{replaced} replacements; {left_after_kill} temporary files left by the kills"
        ),
    }])
}

/// One edit of every line to the next generation, then one upload of the
/// next binary version; an error once the server is gone.
fn replace_both(server: &mut StdioServer, replaced: &mut u64) -> Result<(), String> {
    let stat = server.call("stat_file", json!({"workdir": "w", "path": "e.txt"}))?;
    let page = server.call(
        "read_text_file",
        json!({"workdir": "w", "path": "e.txt", "max_lines": 1}),
    )?;
    let generation = current_generation(&page)?;
    server.call(
        "edit_text_file",
        json!({"workdir": "w", "path": "e.txt", "expected_revision": stat["revision"],
               "edits": [{"old_text": format!("gen-{generation} "),
                          "new_text": format!("gen-{} ", generation + 1),
                          "expected_count": LINES}]}),
    )?;
    *replaced += 1;
    let stat = server.call("stat_file", json!({"workdir": "w", "path": "u.bin"}))?;
    let data = BASE64.encode(binary_version(generation + 1));
    server.call(
        "upload_binary_file",
        json!({"workdir": "w", "path": "u.bin", "overwrite": true,
               "expected_revision": stat["revision"], "data_base64": data}),
    )?;
    *replaced += 1;
    Ok(())
}

fn current_generation(page: &Value) -> Result<u64, String> {
    page["content"]
        .as_str()
        .and_then(|c| c.strip_prefix("gen-"))
        .and_then(|c| c.split(' ').next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("unexpected first line: {page}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_check_themselves() {
        assert!(whole_text(&text_version(7)));
        let mut mixed = text_version(7);
        mixed.replace_range(0..5, "gen-8");
        assert!(!whole_text(&mixed));
        assert!(!whole_text(&text_version(7)[..100]));
        // Generations grow a digit: lines get longer, still whole.
        assert!(whole_text(&text_version(7).replace("gen-7 ", "gen-10 ")));
        let swapped = text_version(7).replacen(" 1 ", " 2 ", 1);
        assert!(!whole_text(&swapped));
        assert!(whole_binary(&binary_version(3)));
        let mut torn = binary_version(3);
        torn[BYTES - 1] = 4;
        assert!(!whole_binary(&torn));
    }
}
