//! Table tests of text renderings (redaction, scrubbing): every failing
//! row reported at once, and each expected output checked to be stable
//! under a second rendering.

/// Checks `(input, expected)` rows against `render`, reporting every
/// failing row at once, and that rendering the expected output again
/// changes nothing (idempotence on hand-picked cases).
///
/// # Panics
///
/// When any row fails: that is the test failing.
pub fn check_table(name: &str, render: impl Fn(&str) -> String, rows: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (input, expected) in rows {
        let got = render(input);
        if got != *expected {
            failures.push(format!("{input:?}: got {got:?}, want {expected:?}"));
        }
        let again = render(expected);
        if again != *expected {
            failures.push(format!("{expected:?} is not stable: became {again:?}"));
        }
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}
