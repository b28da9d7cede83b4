//! Structured logs: JSON lines on stderr (stdout belongs to the stdio
//! transport).

use tracing_subscriber::EnvFilter;

/// Installs the JSON subscriber at `level` (`debug`, `info`, `warning`,
/// `error`). Safe to call once per process.
pub fn init(level: &str) {
    let level = match level {
        "warning" => "warn",
        other => other,
    };
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        // Our own events at the chosen level; every dependency at warn at
        // most, since rmcp's debug logs print whole requests and results
        // (file content, edit texts, uploads) and hyper's print headers.
        .with_env_filter(EnvFilter::new(format!("warn,serverfs={level}")))
        .try_init();
}
