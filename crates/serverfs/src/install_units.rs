//! `serverfs install-units`: writes the two systemd user units
//! (`serverfs.service`, `serverfs-agent-bridge.service`) with this
//! machine's real binary and configuration paths, and prints the
//! `systemctl --user` commands that start them.
//!
//! The units are the committed templates under `deploy/systemd/` (compiled
//! in), with only their `ExecStart=` programs and configuration path
//! replaced, so the hardening reviewed there is exactly what is installed.
//! A unit that exists with other content is never overwritten without
//! `--force`, and every check runs before the first write: a refusal
//! leaves the directory as it was.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clap::Args;

/// The committed templates, and the `ExecStart=` line each one carries.
const UNITS: [UnitTemplate; 2] = [
    UnitTemplate {
        name: "serverfs-agent-bridge.service",
        text: include_str!("../../../deploy/systemd/serverfs-agent-bridge.service"),
        exec_start: "ExecStart=%h/.local/bin/serverfs-agent-bridge serve \
                     --config %h/.config/serverfs/serverfs.toml",
    },
    UnitTemplate {
        name: "serverfs.service",
        text: include_str!("../../../deploy/systemd/serverfs.service"),
        exec_start: "ExecStart=%h/.local/bin/serverfs serve \
                     --config %h/.config/serverfs/serverfs.toml --http 127.0.0.1:8765",
    },
];

/// The Bridge's executable name, looked for next to this one.
const BRIDGE_BINARY: &str = "serverfs-agent-bridge";

struct UnitTemplate {
    name: &'static str,
    text: &'static str,
    exec_start: &'static str,
}

#[derive(Debug, Args)]
pub(crate) struct InstallUnitsArgs {
    /// The configuration both services read (serverfs.toml); it must
    /// exist. Relative paths are taken from the current directory.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Where to write the units. Default: $XDG_CONFIG_HOME/systemd/user,
    /// else ~/.config/systemd/user.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The serverfs-agent-bridge executable. Default: the one next to this
    /// serverfs.
    #[arg(long, value_name = "PATH")]
    bridge: Option<PathBuf>,
    /// The HTTP address serverfs.service listens on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    http: std::net::SocketAddr,
    /// Replace units that exist with other content.
    #[arg(long)]
    force: bool,
}

/// Why nothing was installed. Each has a stable code, printed first
/// (docs/deploy.md §3.1 lists them).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    /// The configuration file does not exist.
    #[error("CONFIG_NOT_FOUND: {0:?} is not a file; pass --config with your serverfs.toml")]
    ConfigNotFound(PathBuf),
    /// The Bridge executable is not where it was looked for.
    #[error(
        "BRIDGE_NOT_FOUND: {0:?} is not an executable file; install serverfs-agent-bridge next \
         to serverfs or pass --bridge PATH"
    )]
    BridgeNotFound(PathBuf),
    /// This process cannot find its own executable.
    #[error("BINARY_UNKNOWN: the path of this serverfs executable cannot be found ({0})")]
    BinaryUnknown(String),
    /// A path systemd would split or expand in `ExecStart=`.
    #[error(
        "UNIT_PATH_UNSAFE: {0:?} contains whitespace, a quote, '\\\\', '%' or '$', which \
         systemd would split or expand in ExecStart=; move it to a plain path"
    )]
    UnsafePath(PathBuf),
    /// No directory for user units.
    #[error("NO_UNIT_DIR: neither XDG_CONFIG_HOME nor HOME is an absolute path; pass --dir DIR")]
    NoUnitDir,
    /// A unit exists with other content.
    #[error(
        "UNIT_EXISTS: {0:?} exists with other content; compare it with the new one, then \
         rerun with --force to replace it"
    )]
    UnitExists(PathBuf),
    /// Writing failed.
    #[error("UNIT_WRITE_FAILED: {path:?}: {reason}")]
    WriteFailed {
        /// What could not be written.
        path: PathBuf,
        /// The OS's reason.
        reason: String,
    },
}

/// A unit ready to be written, and whether it already is.
struct PlannedUnit {
    path: PathBuf,
    text: String,
    state: UnitState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum UnitState {
    New,
    Unchanged,
    Replaced,
}

/// Installs the units and returns what to print.
///
/// # Errors
///
/// [`InstallError`]; nothing is written then.
pub(crate) fn run(
    args: &InstallUnitsArgs,
    env: &BTreeMap<String, String>,
) -> Result<String, InstallError> {
    let cwd = std::env::current_dir().map_err(|e| InstallError::BinaryUnknown(e.to_string()))?;
    let config = absolute(&cwd, &args.config);
    if !config.is_file() {
        return Err(InstallError::ConfigNotFound(config));
    }
    let serverfs =
        std::env::current_exe().map_err(|e| InstallError::BinaryUnknown(e.to_string()))?;
    let bridge = match &args.bridge {
        Some(path) => absolute(&cwd, path),
        None => serverfs.with_file_name(BRIDGE_BINARY),
    };
    if !is_executable(&bridge) {
        return Err(InstallError::BridgeNotFound(bridge));
    }
    for path in [&config, &serverfs, &bridge] {
        if !is_plain(path) {
            return Err(InstallError::UnsafePath(path.clone()));
        }
    }
    let dir = match &args.dir {
        Some(dir) => absolute(&cwd, dir),
        None => default_unit_dir(env).ok_or(InstallError::NoUnitDir)?,
    };
    if !is_plain(&dir) {
        return Err(InstallError::UnsafePath(dir));
    }

    let config = config.display().to_string();
    let exec_starts = [
        format!("ExecStart={} serve --config {config}", bridge.display()),
        format!(
            "ExecStart={} serve --config {config} --http {}",
            serverfs.display(),
            args.http
        ),
    ];
    let mut planned = Vec::new();
    for (unit, exec_start) in UNITS.iter().zip(exec_starts) {
        let text = unit.text.replace(unit.exec_start, &exec_start);
        let path = dir.join(unit.name);
        let state = match std::fs::read_to_string(&path) {
            Ok(existing) if existing == text => UnitState::Unchanged,
            Ok(_) if args.force => UnitState::Replaced,
            Ok(_) => return Err(InstallError::UnitExists(path)),
            Err(_) if path.exists() => return Err(InstallError::UnitExists(path)),
            Err(_) => UnitState::New,
        };
        planned.push(PlannedUnit { path, text, state });
    }

    std::fs::create_dir_all(&dir).map_err(|e| write_failed(&dir, &e))?;
    let mut out = String::new();
    for unit in &planned {
        let verb = match unit.state {
            UnitState::Unchanged => "unchanged",
            UnitState::New => {
                write_unit(&unit.path, &unit.text)?;
                "wrote"
            }
            UnitState::Replaced => {
                write_unit(&unit.path, &unit.text)?;
                "replaced"
            }
        };
        let _ = writeln!(out, "{verb} {}", unit.path.display());
    }
    let _ = write!(
        out,
        "\nStart them (the Bridge first; skip it while [agent] is off):\n\
         \x20   systemctl --user daemon-reload\n\
         \x20   systemctl --user enable --now serverfs-agent-bridge.service\n\
         \x20   systemctl --user enable --now serverfs.service\n\
         Keep them running after you log out:\n\
         \x20   loginctl enable-linger \"$USER\"\n\
         Roll back to the base deployment (no agents):\n\
         \x20   systemctl --user disable --now serverfs-agent-bridge.service\n\
         \x20   then set [agent] enabled = false and systemctl --user restart serverfs.service\n"
    );
    Ok(out)
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

fn default_unit_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let absolute_var = |name: &str| {
        env.get(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute_var("XDG_CONFIG_HOME")
        .or_else(|| absolute_var("HOME").map(|home| home.join(".config")))
        .map(|config| config.join("systemd").join("user"))
}

/// Nothing systemd's command-line parser would split, unquote or expand.
fn is_plain(path: &Path) -> bool {
    path.to_str().is_some_and(|text| {
        !text
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "\"'\\%$;".contains(c))
    })
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Writes through a temporary file renamed into place, so a unit is never
/// seen half-written.
fn write_unit(path: &Path, text: &str) -> Result<(), InstallError> {
    let tmp = path.with_extension("service.tmp");
    let result = std::fs::File::create(&tmp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    result.map_err(|error| {
        let _ = std::fs::remove_file(&tmp);
        write_failed(path, &error)
    })
}

fn write_failed(path: &Path, error: &std::io::Error) -> InstallError {
    InstallError::WriteFailed {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_carries_the_exec_start_it_replaces() {
        for unit in &UNITS {
            assert_eq!(
                unit.text.matches(unit.exec_start).count(),
                1,
                "{}",
                unit.name
            );
        }
    }

    #[test]
    fn paths_systemd_would_split_or_expand_are_not_plain() {
        assert!(is_plain(Path::new("/opt/serverfs/bin/serverfs")));
        for bad in [
            "/a b", "/a%h", "/a$HOME", "/a\"b", "/a'b", "/a\\b", "/a;b", "/a\tb",
        ] {
            assert!(!is_plain(Path::new(bad)), "{bad}");
        }
    }
}
