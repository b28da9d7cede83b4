//! The quick-start source: `--workdir ALIAS=PATH[:rw|:ro]`.

use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::raw::{RawWorkdir, Val};

/// One parsed `--workdir` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkdirSpec<'a> {
    pub alias: &'a str,
    pub path: &'a str,
    pub read_only: Option<bool>,
}

/// Splits `ALIAS=PATH`, `ALIAS=PATH:ro` or `ALIAS=PATH:rw`.
///
/// The alias ends at the first `=` (aliases cannot contain one); a final
/// `:rw` or `:ro` is the access suffix, so a directory whose name really
/// ends in `:rw` must be given with a trailing `:ro`/`:rw` of its own.
/// Other colons are part of the path.
pub(crate) fn parse_spec(spec: &str) -> Result<WorkdirSpec<'_>, ConfigError> {
    let malformed = |reason| ConfigError::CliSpec {
        spec: spec.to_owned(),
        reason,
    };
    let (alias, rest) = spec.split_once('=').ok_or(malformed("missing '='"))?;
    if alias.is_empty() {
        return Err(malformed("missing alias before '='"));
    }
    let (path, read_only) = if let Some(path) = rest.strip_suffix(":rw") {
        (path, Some(false))
    } else if let Some(path) = rest.strip_suffix(":ro") {
        (path, Some(true))
    } else {
        (rest, None)
    };
    if path.is_empty() {
        return Err(malformed("missing path after '='"));
    }
    Ok(WorkdirSpec {
        alias,
        path,
        read_only,
    })
}

/// A raw workdir from a spec. A relative path is made absolute against the
/// current directory without resolving symlinks (the root's own kind is
/// checked with `lstat`; canonicalizing would hide a symlinked root).
pub(crate) fn raw_workdir(spec: &str) -> Result<RawWorkdir, ConfigError> {
    let parsed = parse_spec(spec)?;
    let key = format!("--workdir {spec:?}");
    let root: PathBuf =
        std::path::absolute(Path::new(parsed.path)).map_err(|_| ConfigError::CliSpec {
            spec: spec.to_owned(),
            reason: "the path cannot be made absolute (is the current directory gone?)",
        })?;
    Ok(RawWorkdir::new(
        Val::set(parsed.alias.to_owned(), key.clone()),
        Val::set(root, key.clone()),
        Val::or_default(parsed.read_only, true, key),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn spec(
        alias: &'static str,
        path: &'static str,
        read_only: Option<bool>,
    ) -> WorkdirSpec<'static> {
        WorkdirSpec {
            alias,
            path,
            read_only,
        }
    }

    #[test]
    fn plain_rw_and_ro_specs() {
        assert_eq!(
            parse_spec("docs=/srv/docs"),
            Ok(spec("docs", "/srv/docs", None))
        );
        assert_eq!(
            parse_spec("docs=/srv/docs:rw"),
            Ok(spec("docs", "/srv/docs", Some(false)))
        );
        assert_eq!(
            parse_spec("docs=/srv/docs:ro"),
            Ok(spec("docs", "/srv/docs", Some(true)))
        );
        assert_eq!(parse_spec("d=./rel"), Ok(spec("d", "./rel", None)));
    }

    #[test]
    fn only_the_last_suffix_is_the_access_mode_and_other_colons_stay() {
        assert_eq!(parse_spec("d=/a:b/c"), Ok(spec("d", "/a:b/c", None)));
        assert_eq!(parse_spec("d=/x:rw:ro"), Ok(spec("d", "/x:rw", Some(true))));
        assert_eq!(parse_spec("d=/x:RW"), Ok(spec("d", "/x:RW", None)));
        assert_eq!(parse_spec("d=/a=b"), Ok(spec("d", "/a=b", None)));
    }

    #[test]
    fn malformed_specs_quote_the_spec() {
        for (bad, reason) in [
            ("docs", "missing '='"),
            ("", "missing '='"),
            ("=/srv", "missing alias before '='"),
            ("docs=", "missing path after '='"),
            ("docs=:rw", "missing path after '='"),
            ("docs=:ro", "missing path after '='"),
        ] {
            let err = parse_spec(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "--workdir {bad:?}: {reason} (expected ALIAS=PATH, ALIAS=PATH:ro or ALIAS=PATH:rw)"
                )
            );
        }
    }

    #[test]
    fn relative_paths_become_absolute_without_resolving() {
        let raw = raw_workdir("d=some/dir:rw").unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(raw.root.value, cwd.join("some/dir"));
        assert!(!raw.read_only.value);
        assert_eq!(raw.alias.value, "d");
        assert_eq!(raw.alias.key, "--workdir \"d=some/dir:rw\"");
        let ro = raw_workdir("d=/abs").unwrap();
        assert_eq!(ro.root.value, PathBuf::from("/abs"));
        assert!(ro.read_only.value);
        assert!(!ro.read_only.explicit);
    }
}
