//! A parallel, descriptor-relative directory walk for `find_files` and
//! `search_text`.
//!
//! Every directory is opened beneath the workdir root by the confined
//! resolver (never by a host path string), read with `getdents`, and its
//! entries classified from the directory entry itself: symlinks are never
//! followed or reported, special files are skipped, and hidden, denied and
//! reserved names are neither reported nor descended. Pending work is a
//! list of *relative paths*, not open descriptors, so each worker holds at
//! most one directory descriptor (plus the file its visitor opens) however
//! wide or deep the tree is.
//!
//! Optional ignore-file support mirrors ripgrep's defaults: `.ignore` files
//! apply everywhere, `.gitignore` files only inside a git repository (a
//! directory holding `.git`), each relative to its own directory, deeper
//! files taking precedence; VCS directories themselves can be skipped.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, fstat, openat, statat};
use rustix::io::Errno;

use crate::{Control, FsError, RelPath, Workdir};

/// Largest ignore file read; longer ones are read up to this size.
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn"];

/// How a walk behaves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalkOptions {
    /// Apply `.ignore` / `.gitignore` files.
    pub ignore_files: bool,
    /// Never enter `.git`, `.hg`, `.svn`.
    pub skip_vcs: bool,
    /// Stop after visiting this many entries.
    pub max_entries: u64,
    /// Stop at this instant.
    pub deadline: Option<Instant>,
    /// Worker threads.
    pub threads: usize,
}

/// Why a walk stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The visitor asked to stop.
    Visitor,
    /// `max_entries` was reached.
    WalkLimit,
    /// The deadline passed.
    Timeout,
    /// The caller cancelled through its [`Control`].
    Cancelled,
}

/// What the visitor is told about each regular file.
pub(crate) struct FileVisit<'a> {
    /// The open directory holding the file.
    pub dir: BorrowedFd<'a>,
    /// The directory's workdir-relative path.
    pub parent: &'a RelPath,
    /// The file's name in `dir`.
    pub name: &'a str,
}

impl FileVisit<'_> {
    /// The file's workdir-relative path. Built on demand: most files of a
    /// search are never reported, and a path per file was a measurable
    /// share of the walk.
    pub fn path(&self) -> RelPath {
        self.parent.join(self.name)
    }
}

/// Called from the worker threads for every regular file reached.
pub(crate) trait FileVisitor: Sync {
    /// What one worker thread keeps from file to file (a searcher and its
    /// buffers), made once per thread.
    type Local;

    /// A worker thread's own state.
    fn local(&self) -> Self::Local;

    /// `Ok(false)` stops the whole walk; an error stops it and is returned
    /// by the walk.
    fn visit(&self, local: &mut Self::Local, file: FileVisit<'_>) -> Result<bool, FsError>;
}

/// The outcome of a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WalkReport {
    /// Entries visited (files, directories and skipped objects).
    pub visited: u64,
    /// Set when the walk stopped before covering the tree.
    pub stopped: Option<StopReason>,
}

/// Ignore rules in force for one directory: its own plus its ancestors'.
struct IgnoreChain {
    rules: Vec<Gitignore>,
    parent: Option<Arc<IgnoreChain>>,
}

impl IgnoreChain {
    /// True when the deepest rule that has an opinion says "ignored".
    fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let mut chain = Some(self);
        while let Some(level) = chain {
            // Within one directory `.ignore` (pushed last) wins over
            // `.gitignore`.
            for rules in level.rules.iter().rev() {
                let verdict = rules.matched(path, is_dir);
                if verdict.is_ignore() {
                    return true;
                }
                if verdict.is_whitelist() {
                    return false;
                }
            }
            chain = level.parent.as_deref();
        }
        false
    }
}

struct Job {
    path: RelPath,
    ignore: Option<Arc<IgnoreChain>>,
    in_git: bool,
}

struct Queue {
    jobs: Vec<Job>,
    /// Jobs taken but not finished (they may push more).
    active: usize,
}

struct Shared<'v, V> {
    workdir: &'v Workdir,
    options: WalkOptions,
    visitor: &'v V,
    queue: Mutex<Queue>,
    ready: Condvar,
    stop: AtomicBool,
    stopped: Mutex<Option<StopReason>>,
    /// Counts the entries visited (the walk's progress, and what
    /// `max_entries` bounds) and carries the caller's cancellation.
    control: &'v Control,
    error: Mutex<Option<FsError>>,
}

impl Workdir {
    /// Walks the directory `start` (already resolved and checked by the
    /// caller) and calls `visitor` for every visible regular file, counting
    /// each entry visited into `control` and stopping when it is cancelled.
    ///
    /// # Errors
    ///
    /// `RESOURCE_EXHAUSTED` when descriptors run out; other per-directory
    /// errors (a directory vanishing or unreadable mid-walk) skip that
    /// directory.
    pub(crate) fn walk<V: FileVisitor>(
        &self,
        start: &RelPath,
        options: WalkOptions,
        visitor: &V,
        control: &Control,
    ) -> Result<WalkReport, FsError> {
        // A VCS directory is never searched, even when named as the start.
        if options.skip_vcs
            && start
                .components()
                .iter()
                .any(|c| VCS_DIRS.contains(&c.as_str()))
        {
            return Ok(WalkReport {
                visited: 0,
                stopped: None,
            });
        }
        let (ignore, in_git) = self.ancestor_rules(start, options.ignore_files)?;
        let shared = Shared {
            workdir: self,
            options,
            visitor,
            queue: Mutex::new(Queue {
                jobs: vec![Job {
                    path: start.clone(),
                    ignore,
                    in_git,
                }],
                active: 0,
            }),
            ready: Condvar::new(),
            stop: AtomicBool::new(false),
            stopped: Mutex::new(None),
            control,
            error: Mutex::new(None),
        };
        std::thread::scope(|scope| {
            for _ in 0..options.threads.max(1) {
                scope.spawn(|| shared.work());
            }
        });
        if let Some(error) = lock(&shared.error).take() {
            return Err(error);
        }
        let stopped = *lock(&shared.stopped);
        Ok(WalkReport {
            visited: control.done(),
            stopped,
        })
    }
}

impl Workdir {
    /// The ignore rules and git-repository state that the ancestors of
    /// `start` (root first) impose on it, so that a scoped walk sees the
    /// same rules as a walk from the root.
    fn ancestor_rules(
        &self,
        start: &RelPath,
        ignore_files: bool,
    ) -> Result<(Option<Arc<IgnoreChain>>, bool), FsError> {
        let (mut chain, mut in_git) = (None, false);
        let mut ancestor = RelPath::root();
        for name in start.components() {
            let dir = self.open_directory(&ancestor)?;
            (chain, in_git) = directory_rules(dir.as_fd(), &ancestor, chain, in_git, ignore_files)?;
            ancestor = ancestor.join(name);
        }
        Ok((chain, in_git))
    }
}

/// The rules in force inside the directory `path` (open as `dir`): the
/// inherited chain plus its own `.gitignore` (inside a git repository) and
/// `.ignore`; and whether it is inside a git repository.
fn directory_rules(
    dir: BorrowedFd<'_>,
    path: &RelPath,
    inherited: Option<Arc<IgnoreChain>>,
    in_git: bool,
    ignore_files: bool,
) -> Result<(Option<Arc<IgnoreChain>>, bool), FsError> {
    let in_git = in_git || entry_exists(dir, ".git");
    if !ignore_files {
        return Ok((None, in_git));
    }
    let names: &[&str] = if in_git {
        &[".gitignore", ".ignore"]
    } else {
        &[".ignore"]
    };
    let base = virtual_path(path);
    let mut rules = Vec::new();
    for name in names {
        let Some(text) = read_small_file(dir, name)? else {
            continue;
        };
        let mut builder = GitignoreBuilder::new(&base);
        for line in text.lines() {
            // A malformed line is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
        if let Some(built) = builder.build().ok().filter(|g| !g.is_empty()) {
            rules.push(built);
        }
    }
    if rules.is_empty() {
        return Ok((inherited, in_git));
    }
    let chain = IgnoreChain {
        rules,
        parent: inherited,
    };
    Ok((Some(Arc::new(chain)), in_git))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A worker that panicked leaves plain data behind; keep going.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl<V: FileVisitor> Shared<'_, V> {
    fn work(&self) {
        let mut local = self.visitor.local();
        while let Some(job) = self.next_job() {
            self.directory(job, &mut local);
            let mut queue = lock(&self.queue);
            queue.active -= 1;
            if queue.jobs.is_empty() && queue.active == 0 {
                self.ready.notify_all();
            }
        }
    }

    /// The next directory to read, or `None` when the walk is over.
    fn next_job(&self) -> Option<Job> {
        let mut queue = lock(&self.queue);
        loop {
            if self.stop.load(Ordering::Relaxed) {
                self.ready.notify_all();
                return None;
            }
            if let Some(job) = queue.jobs.pop() {
                queue.active += 1;
                return Some(job);
            }
            if queue.active == 0 {
                return None;
            }
            queue = self.ready.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn halt(&self, reason: StopReason) {
        lock(&self.stopped).get_or_insert(reason);
        self.stop.store(true, Ordering::Relaxed);
        self.ready.notify_all();
    }

    fn fail(&self, error: FsError) {
        lock(&self.error).get_or_insert(error);
        self.stop.store(true, Ordering::Relaxed);
        self.ready.notify_all();
    }

    fn directory(&self, job: Job, local: &mut V::Local) {
        let dir_fd = match self.workdir.open_directory(&job.path) {
            Ok(fd) => fd,
            Err(FsError::ResourceExhausted) => return self.fail(FsError::ResourceExhausted),
            Err(_) => return, // vanished or unreadable mid-walk: skip it
        };
        let dir = dir_fd.as_fd();
        let rules = directory_rules(
            dir,
            &job.path,
            job.ignore,
            job.in_git,
            self.options.ignore_files,
        );
        let (ignore, in_git) = match rules {
            Ok(rules) => rules,
            Err(error) => return self.fail(error),
        };
        let mut entries = match Dir::read_from(dir) {
            Ok(entries) => entries,
            Err(Errno::MFILE | Errno::NFILE) => return self.fail(FsError::ResourceExhausted),
            Err(_) => return,
        };
        let mut subdirs = Vec::new();
        // The directory's path as the ignore rules see it, once.
        let base = ignore.as_ref().map(|_| virtual_path(&job.path));
        while let Some(entry) = entries.read() {
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let Ok(entry) = entry else { break };
            let Ok(name) = entry.file_name().to_str() else {
                continue; // not UTF-8: no client could name it
            };
            if name == "." || name == ".." {
                continue;
            }
            if self.control.advance(1) >= self.options.max_entries {
                return self.halt(StopReason::WalkLimit);
            }
            if self
                .options
                .deadline
                .is_some_and(|deadline| Instant::now() >= deadline)
            {
                return self.halt(StopReason::Timeout);
            }
            if self.control.is_cancelled() {
                return self.halt(StopReason::Cancelled);
            }
            if !self.workdir.policy().is_visible(&job.path, name)
                || (self.options.skip_vcs && VCS_DIRS.contains(&name))
            {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                    Err(_) => continue,
                },
                known => known,
            };
            let is_dir = match kind {
                FileType::Directory => true,
                FileType::RegularFile => false,
                _ => continue, // symlinks never followed; special files never read
            };
            if let (Some(chain), Some(base)) = (&ignore, &base)
                && chain.is_ignored(&base.join(name), is_dir)
            {
                continue;
            }
            if is_dir {
                subdirs.push(Job {
                    path: job.path.join(name),
                    ignore: ignore.clone(),
                    in_git,
                });
            } else {
                let file = FileVisit {
                    dir,
                    parent: &job.path,
                    name,
                };
                match self.visitor.visit(local, file) {
                    Ok(true) => {}
                    Ok(false) => return self.halt(StopReason::Visitor),
                    Err(error) => return self.fail(error),
                }
            }
        }
        if !subdirs.is_empty() {
            let mut queue = lock(&self.queue);
            queue.jobs.extend(subdirs);
            self.ready.notify_all();
        }
    }
}

/// Paths given to the ignore matchers: absolute-looking (`/a/b`) so that
/// the root directory has a non-empty base to strip.
fn virtual_path(path: &RelPath) -> std::path::PathBuf {
    Path::new("/").join(path.components().join("/"))
}

fn entry_exists(dir: BorrowedFd<'_>, name: &str) -> bool {
    statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
}

/// Reads a regular file beneath `dir` (no symlinks, no special files) up
/// to [`MAX_IGNORE_FILE_BYTES`], as UTF-8 (lossy). Absent or unreadable is
/// `None`; running out of descriptors is an error, never a silent skip
/// (which would drop rules and search ignored files).
fn read_small_file(dir: BorrowedFd<'_>, name: &str) -> Result<Option<String>, FsError> {
    // The type is checked before opening, so a FIFO or device planted as
    // `.ignore` is never opened (the fstat below catches a swap).
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {}
        _ => return Ok(None),
    }
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::MFILE | Errno::NFILE) => return Err(FsError::ResourceExhausted),
        Err(_) => return Ok(None),
    };
    match fstat(&fd) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {}
        _ => return Ok(None),
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::from(fd)
        .take(MAX_IGNORE_FILE_BYTES)
        .read_to_end(&mut bytes);
    Ok(read
        .ok()
        .map(|_| String::from_utf8_lossy(&bytes).into_owned()))
}
