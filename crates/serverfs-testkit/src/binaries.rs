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
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock, PoisonError};

/// `target/<profile>/<bin>` of `package`, freshly built.
///
/// # Panics
///
/// When the build fails or the test does not run from
/// `target/<profile>/deps/` (that is the test failing: it cannot run the
/// binary it tests).
pub fn workspace_binary(package: &str, bin: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, Result<PathBuf, String>>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    // Held across the build: concurrent tests wait for one build rather
    // than race two cargo processes over the same artifact.
    let mut built = built.lock().unwrap_or_else(PoisonError::into_inner);
    let outcome = built
        .entry(bin.to_owned())
        .or_insert_with(|| build(package, bin));
    match outcome {
        Ok(path) => path.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// The profile directory of the running test (`target/<profile>`).
fn profile_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no test executable: {e}"))?;
    exe.parent()
        .filter(|dir| dir.ends_with("deps"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{} does not run from target/<profile>/deps", exe.display()))
}

fn build(package: &str, bin: &str) -> Result<PathBuf, String> {
    let profile_dir = profile_dir()?;
    let target_dir = profile_dir
        .parent()
        .ok_or("the profile directory has no parent")?;
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or("the profile directory has no name")?;
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
        .map_err(|e| format!("could not run {cargo:?} to build {bin}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building {bin} failed ({status}); the tests need it: run \
             `cargo build -p {package} --bin {bin}` and look at its errors"
        ));
    }
    let path = profile_dir.join(bin);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "cargo built {bin} but {} is missing",
            path.display()
        ))
    }
}
