//! A sparse line index per file revision, so that reading a page by line
//! number costs O(page), not O(offset), once the file has been read past
//! that point.
//!
//! While a page is located or read in line numbers, the reader records
//! *checkpoints*: for every `spacing` bytes of the file, the line number and
//! byte offset of the first line starting at or after that boundary. A
//! later read of line N starts scanning at the last checkpoint at or
//! before N, so it scans at most about `spacing` bytes plus the page. A
//! read that reaches the end of the file also records how many lines the
//! file has, which gives pages read from the end their line numbers.
//!
//! Entries are keyed by the file's identity (device, inode) and belong to
//! one [`Revision`]: an entry met under another revision is dropped, so an
//! edited file is re-indexed from scratch. Only files of at least
//! [`MIN_FILE_BYTES`] are indexed (smaller ones scan in microseconds). The
//! whole index is bounded: at most [`MAX_ENTRIES`] files and
//! [`MAX_CHECKPOINTS`] checkpoints in total (16 bytes each, 1 MiB), the
//! least recently used entries making room; per file the spacing grows
//! with the size so that no file takes more than [`MAX_FILE_CHECKPOINTS`].
//!
//! The revision cannot see a rewrite that keeps size and timestamps (within
//! the filesystem's timestamp granularity); every checkpoint is therefore
//! checked to sit just after a newline before it is used, and an entry
//! that fails the check is dropped.

use std::sync::Mutex;

use rustix::fs::Stat;

use crate::Revision;

/// Smallest file that gets an index.
pub(crate) const MIN_FILE_BYTES: u64 = 1 << 20;
/// Smallest distance between checkpoints.
const MIN_SPACING: u64 = 64 << 10;
/// Most checkpoints per file; larger files get a wider spacing.
const MAX_FILE_CHECKPOINTS: u64 = 4096;
/// Most files indexed at once.
const MAX_ENTRIES: usize = 64;
/// Most checkpoints over all files.
const MAX_CHECKPOINTS: usize = 65_536;

/// The start of one line: its 1-based number and byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub line: u64,
    pub offset: u64,
}

impl Checkpoint {
    /// Line 1 at offset 0, where every scan can start.
    pub(crate) const TOP: Checkpoint = Checkpoint { line: 1, offset: 0 };
}

/// The line indexes of one workdir's files.
#[derive(Debug, Default)]
pub(crate) struct LineIndexes {
    cache: Mutex<Cache>,
}

#[derive(Debug, Default)]
struct Cache {
    entries: Vec<Entry>,
    checkpoints: usize,
    /// A counter standing in for time, for least-recently-used eviction.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    key: FileKey,
    revision: Revision,
    /// Sorted by offset (and so by line), no duplicates.
    points: Vec<Checkpoint>,
    total_lines: Option<u64>,
    used: u64,
}

/// A file's identity on the host, never shown to anyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileKey {
    dev: u64,
    ino: u64,
}

impl FileKey {
    // `as` because the stat field types differ between architectures.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of(stat: &Stat) -> FileKey {
        FileKey {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
        }
    }
}

/// Checkpoints met during one scan, merged into the index afterwards (no
/// lock is held while reading the file).
#[derive(Debug)]
pub(crate) struct Recorder {
    spacing: u64,
    /// The next boundary: a line starting at or after it is a checkpoint.
    next: u64,
    points: Vec<Checkpoint>,
}

impl Recorder {
    /// Notes that line `line` starts at `offset`. Called for every line
    /// start of a scan, in order; costs a comparison unless it records.
    #[inline]
    pub(crate) fn line_start(&mut self, line: u64, offset: u64) {
        if offset >= self.next {
            self.points.push(Checkpoint { line, offset });
            self.next = (offset / self.spacing + 1) * self.spacing;
        }
    }
}

/// The spacing of a file of `size` bytes: a power of two, at least
/// [`MIN_SPACING`], wide enough for [`MAX_FILE_CHECKPOINTS`].
fn spacing_for(size: u64) -> u64 {
    (size / MAX_FILE_CHECKPOINTS)
        .max(MIN_SPACING)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX)
}

impl LineIndexes {
    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        // The cache is plain data, consistent between statements; a panic
        // elsewhere while it was held leaves it usable.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last checkpoint at or before `line` of the file in its current
    /// `revision` ([`Checkpoint::TOP`] when none is known).
    pub(crate) fn nearest(&self, key: FileKey, revision: &Revision, line: u64) -> Checkpoint {
        let mut cache = self.cache();
        let Some(entry) = cache.current(key, revision) else {
            return Checkpoint::TOP;
        };
        let after = entry.points.partition_point(|p| p.line <= line);
        after
            .checked_sub(1)
            .map_or(Checkpoint::TOP, |i| entry.points[i])
    }

    /// The file's number of lines, when a read has reached its end.
    pub(crate) fn total_lines(&self, key: FileKey, revision: &Revision) -> Option<u64> {
        self.cache().current(key, revision)?.total_lines
    }

    /// A recorder for a scan starting at the line start `from`, or `None`
    /// when the file is too small to index.
    pub(crate) fn recorder(&self, size: u64, from: u64) -> Option<Recorder> {
        if size < MIN_FILE_BYTES {
            return None;
        }
        let spacing = spacing_for(size);
        Some(Recorder {
            spacing,
            next: (from / spacing + 1) * spacing,
            points: Vec::new(),
        })
    }

    /// Merges what a scan of the file (`size` bytes, `revision`) learned:
    /// its checkpoints, and its line count if it reached the end.
    pub(crate) fn learn(
        &self,
        key: FileKey,
        revision: &Revision,
        size: u64,
        recorded: Option<Recorder>,
        total_lines: Option<u64>,
    ) {
        if size < MIN_FILE_BYTES {
            return;
        }
        let points = recorded.map(|r| r.points).unwrap_or_default();
        if points.is_empty() && total_lines.is_none() {
            return;
        }
        let mut cache = self.cache();
        cache.clock += 1;
        let clock = cache.clock;
        let index = match cache.entries.iter().position(|e| e.key == key) {
            Some(i) if cache.entries[i].revision == *revision => i,
            found => {
                if let Some(stale) = found {
                    cache.remove(stale);
                }
                cache.entries.push(Entry {
                    key,
                    revision: revision.clone(),
                    points: Vec::new(),
                    total_lines: None,
                    used: clock,
                });
                cache.entries.len() - 1
            }
        };
        let entry = &mut cache.entries[index];
        entry.used = clock;
        entry.total_lines = entry.total_lines.or(total_lines);
        let before = entry.points.len();
        for point in points {
            if let Err(at) = entry
                .points
                .binary_search_by_key(&point.offset, |p| p.offset)
            {
                entry.points.insert(at, point);
            }
        }
        let added = entry.points.len() - before;
        cache.checkpoints += added;
        cache.evict(key);
    }

    /// Drops the file's entry: a checkpoint turned out not to be a line
    /// start, so the revision did not catch a change.
    pub(crate) fn forget(&self, key: FileKey) {
        let mut cache = self.cache();
        if let Some(i) = cache.entries.iter().position(|e| e.key == key) {
            cache.remove(i);
        }
    }
}

impl Cache {
    /// The entry of `key` if it belongs to `revision`; an entry of another
    /// revision is stale and dropped.
    fn current(&mut self, key: FileKey, revision: &Revision) -> Option<&mut Entry> {
        let i = self.entries.iter().position(|e| e.key == key)?;
        if self.entries[i].revision != *revision {
            self.remove(i);
            return None;
        }
        self.clock += 1;
        let clock = self.clock;
        let entry = &mut self.entries[i];
        entry.used = clock;
        Some(entry)
    }

    fn remove(&mut self, i: usize) {
        let entry = self.entries.swap_remove(i);
        self.checkpoints -= entry.points.len();
    }

    /// Evicts least recently used entries (never `keep`, just updated)
    /// until both bounds hold.
    fn evict(&mut self, keep: FileKey) {
        while self.entries.len() > MAX_ENTRIES || self.checkpoints > MAX_CHECKPOINTS {
            let victim = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.key != keep)
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i);
            match victim {
                Some(i) => self.remove(i),
                // `keep` alone fits: the spacing caps a file's checkpoints
                // far below the total.
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64) -> FileKey {
        FileKey { dev: 1, ino }
    }

    fn revision(n: u8) -> Revision {
        Revision::from_token(format!("v1:{n:016x}"))
    }

    fn scan(indexes: &LineIndexes, size: u64, lines: &[(u64, u64)]) -> Option<Recorder> {
        let mut recorder = indexes.recorder(size, 0)?;
        for &(line, offset) in lines {
            recorder.line_start(line, offset);
        }
        Some(recorder)
    }

    #[test]
    fn checkpoints_are_the_first_line_starts_past_each_boundary() {
        let indexes = LineIndexes::default();
        let size = 4 << 20;
        assert_eq!(spacing_for(size), MIN_SPACING);
        // Lines of 40,000 bytes: line n starts at (n - 1) * 40,000.
        let lines: Vec<(u64, u64)> = (1..=100).map(|n| (n, (n - 1) * 40_000)).collect();
        let recorded = scan(&indexes, size, &lines).unwrap();
        // The first line starts at or past 64 Ki, 128 Ki, 192 Ki, 256 Ki, …
        // (line 6, at 200,000, is the first past both 128 Ki and 192 Ki).
        let got: Vec<u64> = recorded.points.iter().take(6).map(|p| p.line).collect();
        assert_eq!(got, vec![3, 5, 6, 8, 10, 11]);
        indexes.learn(key(1), &revision(1), size, Some(recorded), Some(100));
        assert_eq!(
            indexes.nearest(key(1), &revision(1), 4),
            Checkpoint {
                line: 3,
                offset: 80_000
            }
        );
        assert_eq!(
            indexes.nearest(key(1), &revision(1), 2),
            Checkpoint::TOP,
            "nothing before line 3"
        );
        assert_eq!(indexes.total_lines(key(1), &revision(1)), Some(100));
    }

    #[test]
    fn another_revision_drops_the_entry() {
        let indexes = LineIndexes::default();
        let size = 2 << 20;
        let recorded = scan(&indexes, size, &[(1, 0), (9, 70_000)]);
        indexes.learn(key(1), &revision(1), size, recorded, Some(9));
        assert_eq!(indexes.nearest(key(1), &revision(1), 9).line, 9);
        assert_eq!(indexes.nearest(key(1), &revision(2), 9), Checkpoint::TOP);
        // Gone for the old revision too: it was dropped, not shadowed.
        assert_eq!(indexes.total_lines(key(1), &revision(1)), None);
        assert_eq!(indexes.cache().checkpoints, 0);
    }

    #[test]
    fn small_files_are_not_indexed() {
        let indexes = LineIndexes::default();
        assert!(indexes.recorder(MIN_FILE_BYTES - 1, 0).is_none());
        indexes.learn(key(1), &revision(1), MIN_FILE_BYTES - 1, None, Some(3));
        assert_eq!(indexes.total_lines(key(1), &revision(1)), None);
    }

    #[test]
    fn memory_stays_bounded_and_recent_entries_survive() {
        let indexes = LineIndexes::default();
        // Each file: the most checkpoints a file can have.
        let size = MAX_FILE_CHECKPOINTS * MIN_SPACING;
        let per_file = MAX_FILE_CHECKPOINTS as usize;
        let files = MAX_CHECKPOINTS / per_file + 3;
        for ino in 0..files as u64 {
            let lines: Vec<(u64, u64)> = (0..MAX_FILE_CHECKPOINTS)
                .map(|i| (i + 1, i * MIN_SPACING))
                .collect();
            let recorded = scan(&indexes, size, &lines);
            indexes.learn(key(ino), &revision(1), size, recorded, None);
            let cache = indexes.cache();
            assert!(cache.checkpoints <= MAX_CHECKPOINTS);
            assert!(cache.entries.len() <= MAX_ENTRIES);
            let counted: usize = cache.entries.iter().map(|e| e.points.len()).sum();
            assert_eq!(counted, cache.checkpoints);
        }
        let last = files as u64 - 1;
        assert_ne!(
            indexes.nearest(key(last), &revision(1), 100),
            Checkpoint::TOP
        );
        assert_eq!(
            indexes.nearest(key(0), &revision(1), 100),
            Checkpoint::TOP,
            "the oldest entry made room"
        );
        // Entry count bound with many small entries.
        for ino in 1000..1000 + 2 * MAX_ENTRIES as u64 {
            indexes.learn(key(ino), &revision(1), MIN_FILE_BYTES, None, Some(1));
        }
        assert!(indexes.cache().entries.len() <= MAX_ENTRIES);
    }

    #[test]
    fn forget_removes_the_entry() {
        let indexes = LineIndexes::default();
        let size = 2 << 20;
        let recorded = scan(&indexes, size, &[(9, 70_000)]);
        indexes.learn(key(1), &revision(1), size, recorded, None);
        indexes.forget(key(1));
        assert_eq!(indexes.nearest(key(1), &revision(1), 9), Checkpoint::TOP);
        assert_eq!(indexes.cache().checkpoints, 0);
    }
}
