//! Reading a Compose `.env` file, for the Agent Bridge on the host of a
//! Compose deployment: the one file both the container (through Compose)
//! and the Bridge read, so no second configuration exists to drift.
//!
//! Only the plain subset of Compose's dialect is accepted, the subset in
//! which Compose and this reader cannot disagree: `KEY=value` lines, blank
//! lines and `#` comments. Nothing is expanded or executed. Anything
//! Compose would transform (quotes, `${…}` interpolation, `export`, an
//! inline comment) is refused with the line number, so a value never means
//! one thing in the container and another to the Bridge.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{ConfigError, one_line};

/// Reads the `KEY=value` lines of a Compose `.env` file.
///
/// # Errors
///
/// [`ConfigError::ReadFile`] when the file cannot be read;
/// [`ConfigError::EnvFileSyntax`] (with the 1-based line) for a line that is
/// not `KEY=value`, a key that is not `[A-Za-z_][A-Za-z0-9_]*`, a key set
/// twice, `export KEY=…`, a quoted value, a value holding `$` (Compose
/// would interpolate it) or ` #` (Compose would cut a comment there).
pub fn read_env_file(path: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|err| ConfigError::ReadFile {
        path: path.to_path_buf(),
        reason: one_line(&err.to_string()),
    })?;
    parse_env_file(&text).map_err(|(line, reason)| ConfigError::EnvFileSyntax {
        path: path.to_path_buf(),
        line,
        reason,
    })
}

/// [`read_env_file`] on a text; the error is the 1-based line and reason.
fn parse_env_file(text: &str) -> Result<BTreeMap<String, String>, (usize, &'static str)> {
    let mut entries = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.starts_with("export ") {
            return Err((line, "`export` is shell syntax: write KEY=value"));
        }
        let Some((key, value)) = trimmed.split_once('=') else {
            return Err((line, "expected KEY=value"));
        };
        if !is_variable_name(key) {
            return Err((
                line,
                "the key must be a variable name ([A-Za-z_][A-Za-z0-9_]*) right before '='",
            ));
        }
        if value.starts_with(['"', '\'']) {
            return Err((line, "write the value bare, without quotes"));
        }
        if value.contains('$') {
            return Err((
                line,
                "a value may not contain '$' (Compose would interpolate it)",
            ));
        }
        if value.contains(" #") || value.contains("\t#") {
            return Err((
                line,
                "no comment after a value: put it on a line of its own",
            ));
        }
        if entries.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err((line, "this key is set twice"));
        }
    }
    Ok(entries)
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_are_read_as_compose_reads_them() {
        let entries = parse_env_file(
            "# a comment\n\nWORKDIR_01_ALIAS=docs\nWORKDIR_01_PATH=/srv/docs\n\
             EMPTY=\n  INDENTED=yes  \nURLISH=a=b#c\n",
        )
        .unwrap();
        let expected: BTreeMap<String, String> = [
            ("WORKDIR_01_ALIAS", "docs"),
            ("WORKDIR_01_PATH", "/srv/docs"),
            ("EMPTY", ""),
            ("INDENTED", "yes"),
            ("URLISH", "a=b#c"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(entries, expected);
    }

    #[test]
    fn lines_compose_would_transform_are_refused_with_their_number() {
        for (text, line, reason) in [
            ("A=1\nexport B=2\n", 2, "`export`"),
            ("A=1\nnot a pair\n", 2, "expected KEY=value"),
            ("A B=1\n", 1, "variable name"),
            ("1A=1\n", 1, "variable name"),
            ("=1\n", 1, "variable name"),
            ("A=\"quoted\"\n", 1, "without quotes"),
            ("A='quoted'\n", 1, "without quotes"),
            ("A=$HOME/x\n", 1, "'$'"),
            ("A=${B}\n", 1, "'$'"),
            ("A=1 # note\n", 1, "comment"),
            ("A=1\nB=2\nA=3\n", 3, "twice"),
        ] {
            let (at, why) = parse_env_file(text).unwrap_err();
            assert_eq!(at, line, "{text:?}");
            assert!(why.contains(reason), "{text:?}: {why}");
        }
    }

    #[test]
    fn an_unreadable_file_names_itself() {
        let error = read_env_file(Path::new("/nonexistent/.env")).unwrap_err();
        assert!(
            matches!(&error, ConfigError::ReadFile { path, .. } if path == Path::new("/nonexistent/.env")),
            "{error:?}"
        );
    }
}
