//! `agent.provider_cgroup`: where the Bridge puts each provider's cgroup.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Where the Bridge creates a cgroup per task and per provider process
/// (`agent.provider_cgroup`, `SERVERFS_AGENT_PROVIDER_CGROUP`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProviderCgroup {
    /// Beneath the Bridge's own cgroup when systemd delegated it
    /// (`Delegate=yes`); otherwise no cgroups (default).
    #[default]
    Auto,
    /// No cgroups: process group, parentage and task marker only.
    Off,
    /// Beneath this cgroup v2 directory, which must take new cgroups; the
    /// Bridge refuses to start otherwise.
    At(PathBuf),
}

impl ProviderCgroup {
    /// What the value must look like, for error messages.
    pub(crate) const EXPECTED: &'static str =
        "\"auto\", \"off\" or an absolute path without \"..\" (a cgroup v2 directory)";

    /// Parses `auto`, `off` or an absolute, `..`-free path.
    pub(crate) fn parse(text: &str) -> Option<ProviderCgroup> {
        match text {
            "auto" => Some(ProviderCgroup::Auto),
            "off" => Some(ProviderCgroup::Off),
            path => {
                let path = Path::new(path);
                let plain = path
                    .components()
                    .all(|part| !matches!(part, Component::ParentDir | Component::CurDir));
                (path.is_absolute() && plain).then(|| ProviderCgroup::At(path.to_path_buf()))
            }
        }
    }
}

impl fmt::Display for ProviderCgroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderCgroup::Auto => f.write_str("auto"),
            ProviderCgroup::Off => f.write_str("off"),
            ProviderCgroup::At(path) => path.display().fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_parse_and_nothing_else() {
        assert_eq!(ProviderCgroup::parse("auto"), Some(ProviderCgroup::Auto));
        assert_eq!(ProviderCgroup::parse("off"), Some(ProviderCgroup::Off));
        assert_eq!(
            ProviderCgroup::parse("/sys/fs/cgroup/bridge"),
            Some(ProviderCgroup::At(PathBuf::from("/sys/fs/cgroup/bridge")))
        );
        for bad in ["", "Auto", "relative/dir", "/sys/fs/cgroup/../etc"] {
            assert_eq!(ProviderCgroup::parse(bad), None, "{bad:?}");
        }
    }
}
