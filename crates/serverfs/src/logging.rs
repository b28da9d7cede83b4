//! Structured logs: JSON lines on stderr (stdout belongs to the stdio
//! transport).
//!
//! Two rules keep caller data out of them. Dependencies log at `error` at
//! most (rmcp at `error`, the rest at `warn`): rmcp's debug logs print
//! whole requests and results (file content, edit texts, uploads), its
//! warnings repeat a failed request's error with the caller's URI or path,
//! and hyper's debug logs print headers; what a caller did wrong is in the
//! audit record instead, redacted and bounded. And no line is longer than
//! [`MAX_LINE_BYTES`]: a longer one is replaced, whole, by a short line
//! saying so, since cutting it would leave neither valid JSON nor a bound
//! on what a caller can push into the log.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The longest log line written, newline included.
const MAX_LINE_BYTES: usize = 8 * 1024;

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
        .with_writer(BoundedStderr)
        .with_env_filter(EnvFilter::new(format!("warn,rmcp=error,serverfs={level}")))
        .try_init();
}

/// Stderr, one bounded line per event.
struct BoundedStderr;

impl<'a> MakeWriter<'a> for BoundedStderr {
    type Writer = BoundedLine<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        BoundedLine(io::stderr())
    }
}

/// Writes each formatted event (the formatter hands over one whole line
/// per `write`) unless it is too long, in which case it writes a line
/// saying that one was dropped, and how long it was.
struct BoundedLine<W>(W);

impl<W: Write> Write for BoundedLine<W> {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        if line.len() <= MAX_LINE_BYTES {
            self.0.write_all(line)?;
        } else {
            let note = serde_json::json!({
                "level": "WARN",
                "event": "log_line_dropped",
                "reason": "longer than the log line bound",
                "bytes": line.len(),
            });
            writeln!(self.0, "{note}")?;
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_replaced_whole() {
        let mut out = BoundedLine(Vec::new());
        out.write_all(b"{\"short\":1}\n").unwrap();
        let long = format!("{{\"path\":\"{}\"}}\n", "x".repeat(MAX_LINE_BYTES));
        out.write_all(long.as_bytes()).unwrap();
        let text = String::from_utf8(out.0).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "{\"short\":1}");
        let note: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(note["event"], "log_line_dropped");
        assert_eq!(note["bytes"], long.len());
        assert!(!text.contains("xxxx"));
    }
}
