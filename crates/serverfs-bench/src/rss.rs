//! Resident memory of a measured process.

/// Peak resident set size (`VmHWM`) of process `pid`, in MiB; `None` once
/// it has exited.
pub fn peak_rss_mib(pid: u32) -> Option<f64> {
    status_mib(pid, "VmHWM:")
}

/// Current resident set size (`VmRSS`) of process `pid`, in MiB; `None`
/// once it has exited.
pub fn current_rss_mib(pid: u32) -> Option<f64> {
    status_mib(pid, "VmRSS:")
}

/// A `/proc/PID/status` field given in kB, in MiB.
fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}
