//! The printed table.

/// One figure: the measured side's value, the peer's, and how to show them.
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// The measured side's value (ServerFS, or the Agent Bridge in `bridge`
    /// mode).
    pub serverfs: f64,
    /// The peer's (or baseline's) value, when measured.
    pub peer: Option<f64>,
    /// The median of the ratios of rounds measured in pairs (ServerFS then
    /// peer, or the other way round); `None` shows `serverfs / peer`.
    pub ratio: Option<f64>,
    /// Unit shown after values.
    pub unit: &'static str,
    /// The target, as text.
    pub target: &'static str,
}

/// Renders the rows as a Markdown table headed `ours` and `peer`.
pub fn table(rows: &[Row], ours: &str, peer: &str) -> String {
    let mut out =
        format!("| figure | {ours} | {peer} | ratio | target |\n|---|---:|---:|---:|---|\n");
    for row in rows {
        let peer = row
            .peer
            .map_or_else(|| "-".to_owned(), |p| format!("{} {}", number(p), row.unit));
        let ratio = row
            .ratio
            .or_else(|| row.peer.filter(|p| *p > 0.0).map(|p| row.serverfs / p))
            .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"));
        out.push_str(&format!(
            "| {} | {} {} | {peer} | {ratio} | {} |\n",
            row.figure,
            number(row.serverfs),
            row.unit,
            row.target
        ));
    }
    out
}

/// Two decimals, or three below 0.1 so that a microsecond figure shown in
/// milliseconds (a socket round trip) keeps a significant digit.
fn number(value: f64) -> String {
    if value != 0.0 && value.abs() < 0.1 {
        format!("{value:.3}")
    } else {
        format!("{value:.2}")
    }
}
