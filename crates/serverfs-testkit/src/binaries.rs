//! The one way tests in any crate find a workspace binary they run as a
//! black box (the Agent Bridge, `mock-codex`, fake provider CLIs).
//!
//! Cargo hands `CARGO_BIN_EXE_<name>` to a package's own integration tests
//! only, and a binary of another package may be missing or stale when only
//! one package's tests run. So [`workspace_binary`] builds it once per
//! test process with the cargo that runs the tests, in the same profile
//! and target directory (a no-op when it is fresh), and returns its path.
//! A failed build fails the test, never skips it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Why a workspace binary could not be provided; the test fails with this
/// text.
#[derive(Debug, thiserror::Error)]
enum BuildError {
    /// The running test's own path is unknown.
    #[error("no test executable: {0}")]
    NoTestExecutable(#[source] std::io::Error),
    /// The test does not run from `target/<profile>/deps`.
    #[error("{} does not run from target/<profile>/deps", .0.display())]
    NotInDeps(PathBuf),
    /// `target/<profile>` has no parent (the target directory).
    #[error("the profile directory has no parent")]
    NoTargetDir,
    /// `target/<profile>` has no (UTF-8) name.
    #[error("the profile directory has no name")]
    NoProfileName,
    /// Cargo could not be run.
    #[error("could not run {cargo:?} to build {bin}: {source}")]
    CargoDidNotRun {
        cargo: OsString,
        bin: String,
        source: std::io::Error,
    },
    /// The build failed.
    #[error(
        "building {bin} failed ({status}); the tests need it: run \
         `cargo build -p {package} --bin {bin}` and look at its errors"
    )]
    BuildFailed {
        package: String,
        bin: String,
        status: ExitStatus,
    },
    /// The build succeeded without the binary.
    #[error("cargo built {bin} but {} is missing", path.display())]
    Missing { bin: String, path: PathBuf },
}

/// `target/<profile>/<bin>` of `package`, freshly built.
///
/// # Panics
///
/// When the build fails or the test does not run from
/// `target/<profile>/deps/` (that is the test failing: it cannot run the
/// binary it tests).
pub fn workspace_binary(package: &str, bin: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, Result<PathBuf, BuildError>>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    // Held across the build: concurrent tests wait for one build rather
    // than race two cargo processes over the same artifact.
    let mut built = built.lock().unwrap_or_else(PoisonError::into_inner);
    let outcome = built
        .entry(bin.to_owned())
        .or_insert_with(|| build(package, bin));
    match outcome {
        Ok(path) => path.clone(),
        Err(error) => panic!("{error}"),
    }
}

/// The profile directory of the running test (`target/<profile>`).
fn profile_dir() -> Result<PathBuf, BuildError> {
    let exe = std::env::current_exe().map_err(BuildError::NoTestExecutable)?;
    exe.parent()
        .filter(|dir| dir.ends_with("deps"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or(BuildError::NotInDeps(exe))
}

fn build(package: &str, bin: &str) -> Result<PathBuf, BuildError> {
    let profile_dir = profile_dir()?;
    let target_dir = profile_dir.parent().ok_or(BuildError::NoTargetDir)?;
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or(BuildError::NoProfileName)?;
    let cargo = std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(Into::into))
        .unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = Command::new(&cargo);
    command
        .current_dir(workspace)
        .args([
            "build",
            "--quiet",
            "-p",
            package,
            "--bin",
            bin,
            "--target-dir",
        ])
        .arg(target_dir);
    // `debug` is the dev profile's directory; any other is named after its
    // profile.
    match profile {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    let status = command
        .status()
        .map_err(|source| BuildError::CargoDidNotRun {
            cargo: cargo.clone(),
            bin: bin.to_owned(),
            source,
        })?;
    if !status.success() {
        return Err(BuildError::BuildFailed {
            package: package.to_owned(),
            bin: bin.to_owned(),
            status,
        });
    }
    let path = profile_dir.join(bin);
    if path.is_file() {
        Ok(path)
    } else {
        Err(BuildError::Missing {
            bin: bin.to_owned(),
            path,
        })
    }
}
