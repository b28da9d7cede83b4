//! Which workdir-relative paths a client may name at all.
//!
//! Three independent rules, checked in this order on every component of a
//! path (so a hidden or denied directory hides everything beneath it):
//!
//! 1. reserved internal names (`.serverfs-tmp-*`, `.serverfs-disabled`) —
//!    always invisible, whatever the configuration;
//! 2. hidden names (leading `.`) unless the workdir allows them;
//! 3. deny globs: the built-in credential rules (unless disabled) and the
//!    operator's extra globs.
//!
//! Deny glob semantics (`*`, `?`, `[...]`, `[!...]`, `{a,b}`, case-sensitive):
//! a glob without `/` matches any single component (`*.pem` denies
//! `keys/a.pem` and everything under a directory named `x.pem`); a glob with
//! `/` matches a leading run of components (`docs/private` denies that
//! directory and its subtree); a trailing `/**` is accepted for
//! compatibility and means the same subtree.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::{FsError, RelPath};

/// Prefix of the temporary names ServerFS creates while publishing files.
pub const RESERVED_TEMP_PREFIX: &str = ".serverfs-tmp-";
/// The sentinel file that marks an empty container slot.
pub const RESERVED_SENTINEL: &str = ".serverfs-disabled";

/// The built-in credential rules, as component globs.
const DEFAULT_DENY: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
];

/// A workdir's naming policy, compiled once at start-up.
#[derive(Debug, Clone)]
pub struct PathPolicy {
    allow_hidden: bool,
    /// Globs matched against each single component.
    component_globs: GlobSet,
    /// Globs matched against each leading run of components joined by `/`.
    prefix_globs: GlobSet,
}

impl PathPolicy {
    /// Compiles a policy.
    ///
    /// # Errors
    ///
    /// A glob that does not compile (configuration validation normally
    /// catches this first).
    pub fn new(
        allow_hidden: bool,
        default_deny: bool,
        extra_deny: &[String],
    ) -> Result<PathPolicy, globset::Error> {
        let mut component = GlobSetBuilder::new();
        let mut prefix = GlobSetBuilder::new();
        if default_deny {
            for glob in DEFAULT_DENY {
                component.add(compile(glob)?);
            }
        }
        for glob in extra_deny {
            let body = glob.strip_suffix("/**").unwrap_or(glob);
            let body = body.trim_end_matches('/');
            if body.is_empty() {
                continue;
            }
            if body.contains('/') {
                prefix.add(compile(body)?);
            } else {
                component.add(compile(body)?);
            }
        }
        Ok(PathPolicy {
            allow_hidden,
            component_globs: component.build()?,
            prefix_globs: prefix.build()?,
        })
    }

    /// Checks every component of `path`.
    ///
    /// # Errors
    ///
    /// `RESERVED_PATH`, then `HIDDEN_PATH_NOT_ALLOWED`, then `DENIED_PATH`:
    /// each rule is checked over all components before the next rule.
    pub fn check(&self, path: &RelPath) -> Result<(), FsError> {
        let components = path.components();
        if components.iter().any(|c| is_reserved(c)) {
            return Err(FsError::Reserved);
        }
        if !self.allow_hidden && components.iter().any(|c| c.starts_with('.')) {
            return Err(FsError::Hidden);
        }
        if components.iter().any(|c| self.component_globs.is_match(c)) {
            return Err(FsError::Denied);
        }
        if !self.prefix_globs.is_empty() {
            let mut prefix = String::new();
            for c in components {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(c);
                if self.prefix_globs.is_match(&prefix) {
                    return Err(FsError::Denied);
                }
            }
        }
        Ok(())
    }

    /// True when the entry `name` of the (already allowed) directory
    /// `parent` may be shown to a client. Used to filter listings.
    pub fn is_visible(&self, parent: &RelPath, name: &str) -> bool {
        if is_reserved(name) || (!self.allow_hidden && name.starts_with('.')) {
            return false;
        }
        if self.component_globs.is_match(name) {
            return false;
        }
        if self.prefix_globs.is_empty() {
            return true;
        }
        let full = if parent.is_root() {
            name.to_owned()
        } else {
            format!("{}/{name}", parent.as_string())
        };
        !self.prefix_globs.is_match(&full)
    }
}

/// True for names ServerFS keeps for itself.
pub fn is_reserved(name: &str) -> bool {
    name.starts_with(RESERVED_TEMP_PREFIX) || name == RESERVED_SENTINEL
}

fn compile(glob: &str) -> Result<Glob, globset::Error> {
    // `literal_separator` keeps `*` inside one component, as fnmatch does
    // for the upstream rules; a component never contains `/` anyway.
    GlobBuilder::new(glob).literal_separator(true).build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serverfs_protocol::ErrorCode;

    fn policy(allow_hidden: bool, default_deny: bool, extra: &[&str]) -> PathPolicy {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        PathPolicy::new(allow_hidden, default_deny, &extra).unwrap()
    }

    fn verdict(p: &PathPolicy, path: &str) -> Option<ErrorCode> {
        p.check(&RelPath::parse(path).unwrap())
            .err()
            .map(|e| e.code())
    }

    #[test]
    fn reserved_beats_everything() {
        let p = policy(true, false, &[]);
        for path in [
            ".serverfs-tmp-x",
            "a/.serverfs-tmp-1/b",
            ".serverfs-disabled",
        ] {
            assert_eq!(verdict(&p, path), Some(ErrorCode::ReservedPath), "{path}");
        }
        let strict = policy(false, true, &["*"]);
        assert_eq!(
            verdict(&strict, ".serverfs-tmp-x"),
            Some(ErrorCode::ReservedPath)
        );
    }

    #[test]
    fn hidden_axis() {
        let p = policy(false, false, &[]);
        assert_eq!(
            verdict(&p, ".git/config"),
            Some(ErrorCode::HiddenPathNotAllowed)
        );
        assert_eq!(verdict(&p, "a/.b/c"), Some(ErrorCode::HiddenPathNotAllowed));
        assert_eq!(verdict(&p, "a/b.c"), None);
        let open = policy(true, false, &[]);
        assert_eq!(verdict(&open, ".git/config"), None);
    }

    #[test]
    fn default_credential_rules_on_every_component() {
        let p = policy(true, true, &[]);
        for path in [
            ".ssh",
            "home/.ssh/known_hosts",
            ".aws/credentials",
            ".gnupg",
            "x/.kube/config",
            ".env",
            "app/.env.local",
            "prod.env",
            "tls/server.pem",
            "server.key",
            "id_rsa",
            "keys/id_ed25519",
            "backup.pem/notes.txt",
        ] {
            assert_eq!(verdict(&p, path), Some(ErrorCode::DeniedPath), "{path}");
        }
        for path in [
            "id_rsa.pub",
            "environment",
            "key.txt",
            "pem",
            "docs/readme.md",
        ] {
            assert_eq!(verdict(&p, path), None, "{path}");
        }
        let off = policy(true, false, &[]);
        assert_eq!(verdict(&off, "server.key"), None);
    }

    #[test]
    fn hidden_checked_before_deny() {
        let p = policy(false, true, &[]);
        assert_eq!(verdict(&p, ".env"), Some(ErrorCode::HiddenPathNotAllowed));
    }

    #[test]
    fn extra_globs() {
        let p = policy(
            true,
            false,
            &["*.log", "internal/**", "logs_*/**", "docs/private", "[!a]x"],
        );
        assert_eq!(verdict(&p, "a/b/c.log"), Some(ErrorCode::DeniedPath));
        assert_eq!(verdict(&p, "internal"), Some(ErrorCode::DeniedPath));
        assert_eq!(
            verdict(&p, "src/internal/x.rs"),
            Some(ErrorCode::DeniedPath)
        );
        assert_eq!(verdict(&p, "logs_2024/a.txt"), Some(ErrorCode::DeniedPath));
        assert_eq!(
            verdict(&p, "docs/private/a.md"),
            Some(ErrorCode::DeniedPath)
        );
        assert_eq!(verdict(&p, "docs/public/a.md"), None);
        assert_eq!(verdict(&p, "bx"), Some(ErrorCode::DeniedPath));
        assert_eq!(verdict(&p, "ax"), None);
        assert_eq!(verdict(&p, "other/docs/private"), None);
        // Extra globs stay active with the default rules disabled, and are
        // case-sensitive.
        assert_eq!(verdict(&p, "A.LOG"), None);
    }

    #[test]
    fn visibility_matches_check() {
        let p = policy(false, true, &["docs/private", "*.tmp"]);
        let docs = RelPath::parse("docs").unwrap();
        let root = RelPath::root();
        for (parent, name) in [
            (&docs, "private"),
            (&docs, "public"),
            (&root, ".git"),
            (&root, "a.tmp"),
            (&root, "id_rsa"),
            (&root, ".serverfs-tmp-1"),
            (&root, "ok.txt"),
        ] {
            let full = parent.join(name);
            assert_eq!(p.is_visible(parent, name), p.check(&full).is_ok(), "{full}");
        }
    }
}
