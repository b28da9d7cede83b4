//! A `serverfs serve --http 127.0.0.1:0` child and the address it chose.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::Value;

use crate::invalid;

/// How long the server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running HTTP server, killed on drop.
pub struct Served {
    child: Child,
    address: SocketAddr,
    log: Arc<LogVolume>,
}

/// How much the server has logged so far.
#[derive(Debug, Default)]
struct LogVolume {
    bytes: AtomicU64,
    lines: AtomicU64,
    /// Lines per `event` name.
    events: Mutex<BTreeMap<String, u64>>,
}

impl Served {
    /// Spawns `command` (a `serve --http 127.0.0.1:0 …` the caller has set
    /// up) with its stderr piped, and waits for its `http_listening` log
    /// event. Its stderr keeps being read afterwards: the server writes an
    /// audit line per call and would block on a full pipe.
    ///
    /// # Errors
    ///
    /// The spawn error, or `InvalidData` when no address is announced in
    /// time.
    pub fn start(mut command: Command) -> io::Result<Served> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let Some(stderr) = child.stderr.take() else {
            return Err(invalid("no stderr pipe".to_owned()));
        };
        let (tx, rx) = mpsc::channel();
        let log = Arc::new(LogVolume::default());
        let volume = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                volume
                    .bytes
                    .fetch_add(line.len() as u64 + 1, Ordering::Relaxed);
                volume.lines.fetch_add(1, Ordering::Relaxed);
                let Ok(event) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let name = event["event"].as_str().unwrap_or("(none)");
                *volume
                    .events
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(name.to_owned())
                    .or_default() += 1;
                if name == "http_listening" {
                    let _ = tx.send(event["address"].as_str().unwrap_or_default().to_owned());
                }
            }
        });
        let mut served = Served {
            child,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
        };
        let announced = rx
            .recv_timeout(START_TIMEOUT)
            .map_err(|_| invalid("the server did not announce its address".to_owned()))?;
        served.address = announced
            .parse()
            .map_err(|_| invalid(format!("bad listening address {announced:?}")))?;
        Ok(served)
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The bytes and lines it has written to its log (stderr) so far, as
    /// far as they have been read.
    pub fn logged(&self) -> (u64, u64) {
        (
            self.log.bytes.load(Ordering::Relaxed),
            self.log.lines.load(Ordering::Relaxed),
        )
    }

    /// How many lines it has logged so far per `event` name.
    pub fn logged_events(&self) -> BTreeMap<String, u64> {
        self.log
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the server is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
