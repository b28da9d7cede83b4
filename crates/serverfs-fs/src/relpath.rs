//! Parsing caller-supplied paths into normalized workdir-relative paths.
//!
//! This is pure string processing: it never touches the filesystem. It is
//! defence in depth and gives early, precise error codes; confinement itself
//! is enforced by the kernel when the path is resolved beneath the root
//! descriptor (see `resolve`).

use crate::FsError;

/// Longest accepted path, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest accepted component, in bytes (Linux `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// A normalized, workdir-relative path: zero or more components, none of
/// them empty, `.`, `..`, or containing `/`, NUL or `\`.
///
/// The root is the empty list; it displays as `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RelPath {
    components: Vec<String>,
}

impl RelPath {
    /// The workdir root.
    pub fn root() -> RelPath {
        RelPath::default()
    }

    /// Parses a caller's path.
    ///
    /// `/` is the only separator; `""` and `.` are the root; empty and `.`
    /// segments vanish; `..` pops the previous segment.
    ///
    /// # Errors
    ///
    /// - `ACCESS_DENIED` (`FsError::NulInPath`): a NUL byte anywhere.
    /// - `PATH_TOO_LONG`: over [`MAX_PATH_BYTES`], or a component over
    ///   [`MAX_COMPONENT_BYTES`].
    /// - `PATH_OUTSIDE_WORKDIR`: absolute, first component starting with
    ///   `~`, or a `..` with nothing left to pop.
    /// - `INVALID_NAME`: a component contains `\` (a separator on other
    ///   systems, so ambiguous in a path meant to be portable).
    pub fn parse(input: &str) -> Result<RelPath, FsError> {
        if input.contains('\0') {
            return Err(FsError::NulInPath);
        }
        let too_long = FsError::PathTooLong {
            max_path: MAX_PATH_BYTES,
            max_component: MAX_COMPONENT_BYTES,
        };
        if input.len() > MAX_PATH_BYTES {
            return Err(too_long);
        }
        if input.starts_with('/') {
            return Err(FsError::outside_workdir());
        }
        let mut components: Vec<String> = Vec::new();
        for segment in input.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    if components.pop().is_none() {
                        return Err(FsError::outside_workdir());
                    }
                }
                name => {
                    if name.len() > MAX_COMPONENT_BYTES {
                        return Err(too_long);
                    }
                    if name.contains('\\') {
                        return Err(FsError::Backslash);
                    }
                    components.push(name.to_owned());
                }
            }
        }
        // `~` reads as "home directory" to shells and to people: refuse it as
        // the first component however it was reached (`~x`, `a/../~x`).
        if components.first().is_some_and(|c| c.starts_with('~')) {
            return Err(FsError::outside_workdir());
        }
        Ok(RelPath { components })
    }

    /// True for the workdir root.
    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// The components, outermost first.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// The last component, `None` for the root.
    pub fn file_name(&self) -> Option<&str> {
        self.components.last().map(String::as_str)
    }

    /// The parent's components and the final name; `None` for the root.
    pub fn split_last(&self) -> Option<(&[String], &str)> {
        self.components
            .split_last()
            .map(|(name, parent)| (parent, name.as_str()))
    }

    /// This path with one more component. `name` must be a single valid
    /// component (a directory entry name read from the kernel).
    pub fn join(&self, name: &str) -> RelPath {
        let mut components = self.components.clone();
        components.push(name.to_owned());
        RelPath { components }
    }

    /// The normalized form: components joined by `/`, `.` for the root.
    pub fn as_string(&self) -> String {
        if self.components.is_empty() {
            ".".to_owned()
        } else {
            self.components.join("/")
        }
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serverfs_protocol::ErrorCode;

    fn code(input: &str) -> ErrorCode {
        RelPath::parse(input).unwrap_err().code()
    }

    #[test]
    fn root_forms() {
        for input in ["", ".", "./", "./.", ".//", "a/..", "a/b/../..", "./a/../"] {
            assert!(RelPath::parse(input).unwrap().is_root(), "{input:?}");
        }
        assert_eq!(RelPath::root().as_string(), ".");
    }

    #[test]
    fn normalizes() {
        let cases = [
            ("a", "a"),
            ("a/b", "a/b"),
            ("a//b/", "a/b"),
            ("./a/./b", "a/b"),
            ("a/../b", "b"),
            ("a/b/../c", "a/c"),
            ("%2e%2e", "%2e%2e"),
            ("...", "..."),
            ("a/~b", "a/~b"),
            ("a b/ c ", "a b/ c "),
        ];
        for (input, want) in cases {
            assert_eq!(
                RelPath::parse(input).unwrap().as_string(),
                want,
                "{input:?}"
            );
        }
    }

    #[test]
    fn rejects() {
        let cases = [
            ("..", ErrorCode::PathOutsideWorkdir),
            ("../x", ErrorCode::PathOutsideWorkdir),
            ("a/../../x", ErrorCode::PathOutsideWorkdir),
            ("/etc/passwd", ErrorCode::PathOutsideWorkdir),
            ("//etc", ErrorCode::PathOutsideWorkdir),
            ("~", ErrorCode::PathOutsideWorkdir),
            ("~root/.ssh", ErrorCode::PathOutsideWorkdir),
            ("a/../~x", ErrorCode::PathOutsideWorkdir),
            ("a\0b", ErrorCode::AccessDenied),
            ("a\\b", ErrorCode::InvalidName),
            ("..\\..\\etc", ErrorCode::InvalidName),
        ];
        for (input, want) in cases {
            assert_eq!(code(input), want, "{input:?}");
        }
    }

    #[test]
    fn length_limits() {
        let component = "x".repeat(MAX_COMPONENT_BYTES);
        assert!(RelPath::parse(&component).is_ok());
        let long_component = "x".repeat(MAX_COMPONENT_BYTES + 1);
        assert_eq!(code(&long_component), ErrorCode::PathTooLong);
        let long_path = vec!["ab"; MAX_PATH_BYTES / 3 + 1].join("/");
        assert!(long_path.len() > MAX_PATH_BYTES);
        assert_eq!(code(&long_path), ErrorCode::PathTooLong);
    }

    proptest! {
        // Whatever the input, an accepted path has only plain components:
        // none empty, `.`, `..`, or holding a separator, so resolving it
        // component by component beneath a root cannot climb out.
        #[test]
        fn property_accepted_paths_have_only_plain_components(
            segments in proptest::collection::vec(
                prop_oneof!["\\.\\.", "\\.", "", "[a-z.~]{1,4}", "[^/]{0,3}"], 0..12)
        ) {
            let input = segments.join("/");
            if let Ok(path) = RelPath::parse(&input) {
                for c in path.components() {
                    prop_assert!(!c.is_empty());
                    prop_assert!(c != "." && c != "..");
                    prop_assert!(!c.contains('/') && !c.contains('\0') && !c.contains('\\'));
                }
                // The depth never goes negative: replaying the segments as a
                // stack never pops past the start.
                let mut depth: i64 = 0;
                for s in input.split('/') {
                    match s { "" | "." => {}, ".." => depth -= 1, _ => depth += 1 }
                    prop_assert!(depth >= 0);
                }
                // Normalizing is idempotent.
                let again = RelPath::parse(&path.as_string()).unwrap();
                prop_assert_eq!(again, path);
            }
        }
    }
}
