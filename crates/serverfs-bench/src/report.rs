//! The printed table.

/// One figure: ServerFS's value, the peer's, and how to show them.
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// ServerFS's value.
    pub serverfs: f64,
    /// The peer's value, when measured.
    pub peer: Option<f64>,
    /// Unit shown after values.
    pub unit: &'static str,
    /// The target, as text.
    pub target: &'static str,
}

/// Renders the rows as a Markdown table (ratio = ServerFS / peer).
pub fn table(rows: &[Row]) -> String {
    let mut out =
        String::from("| figure | ServerFS | peer | ratio | target |\n|---|---:|---:|---:|---|\n");
    for row in rows {
        let peer = row
            .peer
            .map_or_else(|| "-".to_owned(), |p| format!("{p:.2} {}", row.unit));
        let ratio = row
            .peer
            .filter(|p| *p > 0.0)
            .map_or_else(|| "-".to_owned(), |p| format!("{:.2}", row.serverfs / p));
        out.push_str(&format!(
            "| {} | {:.2} {} | {peer} | {ratio} | {} |\n",
            row.figure, row.serverfs, row.unit, row.target
        ));
    }
    out
}
