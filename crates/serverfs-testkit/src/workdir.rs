//! Temporary workdirs with hostile trees.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// The content of `outside/secret.txt`, next to every [`TempWorkdir`]'s
/// root. A test that ever sees this string read through ServerFS has found
/// a sandbox escape.
pub const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-7f3a9c";

/// A temporary directory laid out as
///
/// ```text
/// <tmp>/root/          the workdir root (what tests hand to ServerFS)
/// <tmp>/outside/secret.txt
/// ```
///
/// Removed when dropped.
pub struct TempWorkdir {
    dir: tempfile::TempDir,
}

impl TempWorkdir {
    /// Creates the layout.
    pub fn new() -> TempWorkdir {
        let dir = tempfile::Builder::new()
            .prefix("serverfs-test-")
            .tempdir()
            .unwrap_or_else(|e| panic!("creating a temp dir: {e}"));
        std::fs::create_dir(dir.path().join("root")).unwrap_or_else(|e| panic!("mkdir root: {e}"));
        std::fs::create_dir(dir.path().join("outside"))
            .unwrap_or_else(|e| panic!("mkdir outside: {e}"));
        std::fs::write(dir.path().join("outside/secret.txt"), OUTSIDE_SECRET)
            .unwrap_or_else(|e| panic!("writing the outside secret: {e}"));
        TempWorkdir { dir }
    }

    /// The workdir root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// The directory beside the root that must stay unreachable.
    pub fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    /// Host path of a root-relative path.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes a file (creating parent directories).
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir -p {rel}: {e}"));
        }
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {rel}: {e}"));
        self
    }

    /// Creates a directory (and its parents).
    pub fn dir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.path(rel)).unwrap_or_else(|e| panic!("mkdir {rel}: {e}"));
        self
    }

    /// Creates a symlink at `rel` pointing at `target` (taken literally:
    /// relative targets are relative to the link's directory).
    pub fn symlink(&self, rel: &str, target: impl AsRef<Path>) -> &Self {
        symlink(target.as_ref(), self.path(rel)).unwrap_or_else(|e| panic!("symlink {rel}: {e}"));
        self
    }

    /// Creates a FIFO at `rel`.
    pub fn fifo(&self, rel: &str) -> &Self {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            self.path(rel),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap_or_else(|e| panic!("mkfifo {rel}: {e}"));
        self
    }

    /// Binds a Unix socket at `rel` and keeps it bound for the fixture's
    /// life (the returned guard closes it).
    pub fn socket(&self, rel: &str) -> std::os::unix::net::UnixListener {
        std::os::unix::net::UnixListener::bind(self.path(rel))
            .unwrap_or_else(|e| panic!("bind socket {rel}: {e}"))
    }

    /// Creates a hard link `rel` to the existing `existing`.
    pub fn hardlink(&self, existing: &str, rel: &str) -> &Self {
        std::fs::hard_link(self.path(existing), self.path(rel))
            .unwrap_or_else(|e| panic!("link {existing} -> {rel}: {e}"));
        self
    }
}

impl Default for TempWorkdir {
    fn default() -> Self {
        TempWorkdir::new()
    }
}
