//! The report both `doctor` commands print (`serverfs doctor`,
//! `serverfs-agent-bridge doctor`): one line per check, a summary line, and
//! the exit status operators and scripts rely on.
//!
//! A check line is `OK   <check>: <detail>`, `WARN <check>: <detail>` or
//! `FAIL <check>: <detail>`; the last line is `doctor: N ok, N warnings,
//! N failures`. The status is 0 without a FAIL (warnings allowed) and
//! [`DOCTOR_EXIT_FAILED`] with one; a configuration that cannot be parsed is
//! the caller's [`DOCTOR_EXIT_CONFIG`], before any line is printed.

use std::fmt::Display;
use std::io::Write;
use std::process::ExitCode;

use crate::error::one_line;

/// Exit status of a doctor run with at least one FAIL line.
pub const DOCTOR_EXIT_FAILED: u8 = 1;

/// Exit status of a doctor run whose configuration cannot be parsed.
pub const DOCTOR_EXIT_CONFIG: u8 = 2;

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Warn,
    Fail,
}

/// The lines printed so far, counted by level. Writes each line as it is
/// added, so a slow check shows the ones before it.
#[derive(Debug)]
pub struct DoctorReport<W: Write> {
    out: W,
    ok: usize,
    warnings: usize,
    failures: usize,
}

impl DoctorReport<std::io::Stdout> {
    /// A report on standard output.
    pub fn stdout() -> DoctorReport<std::io::Stdout> {
        DoctorReport::new(std::io::stdout())
    }
}

impl<W: Write> DoctorReport<W> {
    /// A report written to `out`.
    pub fn new(out: W) -> DoctorReport<W> {
        DoctorReport {
            out,
            ok: 0,
            warnings: 0,
            failures: 0,
        }
    }

    /// A check that passed.
    pub fn ok(&mut self, check: &str, detail: impl Display) {
        self.line(Level::Ok, check, detail);
    }

    /// A check that found something worth fixing that does not stop
    /// ServerFS from working.
    pub fn warn(&mut self, check: &str, detail: impl Display) {
        self.line(Level::Warn, check, detail);
    }

    /// A check that failed; the detail should say how to fix it.
    pub fn fail(&mut self, check: &str, detail: impl Display) {
        self.line(Level::Fail, check, detail);
    }

    /// Whether a FAIL line was printed.
    pub fn has_failures(&self) -> bool {
        self.failures > 0
    }

    fn line(&mut self, level: Level, check: &str, detail: impl Display) {
        let tag = match level {
            Level::Ok => {
                self.ok += 1;
                "OK  "
            }
            Level::Warn => {
                self.warnings += 1;
                "WARN"
            }
            Level::Fail => {
                self.failures += 1;
                "FAIL"
            }
        };
        let text = format!(
            "{tag} {}: {}",
            one_line(check),
            one_line(&detail.to_string())
        );
        // A closed stdout (`doctor | head -1`) must not panic; the exit
        // status still tells the outcome.
        let _ = writeln!(self.out, "{text}");
    }

    /// Prints the summary line and returns the exit status: success
    /// without a FAIL line, [`DOCTOR_EXIT_FAILED`] with one.
    pub fn finish(mut self) -> ExitCode {
        let _ = writeln!(
            self.out,
            "doctor: {} ok, {} warnings, {} failures",
            self.ok, self.warnings, self.failures
        );
        let _ = self.out.flush();
        if self.failures == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(DOCTOR_EXIT_FAILED)
        }
    }
}

/// `count` and the noun, singular or plural: `1 workdir`, `2 workdirs`.
pub fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged_single_and_counted() {
        let mut out = Vec::new();
        let mut report = DoctorReport::new(&mut out);
        report.ok("a", "fine");
        report.warn("b", "first\nsecond");
        assert!(!report.has_failures());
        report.fail("c", "broken");
        assert!(report.has_failures());
        let _ = report.finish();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "OK   a: fine\nWARN b: first second\nFAIL c: broken\n\
             doctor: 1 ok, 1 warnings, 1 failures\n"
        );
    }

    #[test]
    fn words() {
        assert_eq!(plural(1, "token", "tokens"), "1 token");
        assert_eq!(plural(0, "token", "tokens"), "0 tokens");
    }
}
