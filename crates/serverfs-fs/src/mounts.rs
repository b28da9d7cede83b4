//! Which storage a workdir's calls can reach: the filesystem its root lies
//! on and every mount beneath it, read from the mount table.
//!
//! A call on local storage (a disk or memory filesystem served by this
//! kernel) ends in bounded time. A call that reaches a network or
//! user-space filesystem (NFS, SMB, FUSE, autofs, 9p, …) can wait as long
//! as that filesystem's server does, forever when it is gone. The server
//! uses the difference to decide where a small call runs.

use std::path::{Path, PathBuf};

/// Filesystem types (as the mount table names them) served by the local
/// kernel from a disk or memory. Anything else counts as possibly remote:
/// an unknown type is never assumed to be local.
const LOCAL_TYPES: &[&str] = &[
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "f2fs",
    "zfs",
    "bcachefs",
    "tmpfs",
    "ramfs",
    "overlay",
    // Kernel pseudo-filesystems: answered from memory.
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "mqueue",
    "cgroup",
    "cgroup2",
    "securityfs",
    "debugfs",
    "tracefs",
    "bpf",
    "pstore",
    "hugetlbfs",
    "configfs",
    "efivarfs",
    "nsfs",
];

/// The mounts of this process's mount namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountTable {
    /// In the table's order: a later mount on the same point hides an
    /// earlier one.
    mounts: Vec<Mount>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    point: PathBuf,
    fs_type: String,
}

impl MountTable {
    /// Where Linux lists the mounts this process sees.
    pub const PROC_PATH: &'static str = "/proc/self/mountinfo";

    /// Parses `/proc/self/mountinfo` text (see proc(5)). A line without
    /// the fields this needs is skipped: it cannot make storage count as
    /// local, because a path under no known mount is not local.
    pub fn parse(mountinfo: &str) -> MountTable {
        let mounts = mountinfo
            .lines()
            .filter_map(|line| {
                let mut fields = line.split(' ');
                let point = fields.nth(4)?;
                // Optional fields end with a lone "-"; the type follows it.
                let fs_type = fields.skip_while(|field| *field != "-").nth(1)?;
                Some(Mount {
                    point: PathBuf::from(unescape(point)),
                    fs_type: fs_type.to_owned(),
                })
            })
            .collect();
        MountTable { mounts }
    }

    /// True when every path at or beneath `root` (an absolute path with
    /// symbolic links resolved) lies on local storage: the mount holding
    /// `root` and every mount beneath it have a local type.
    pub fn local_beneath(&self, root: &Path) -> bool {
        let holding = self
            .mounts
            .iter()
            .filter(|mount| root.starts_with(&mount.point))
            // The deepest point holds `root`; of equal ones, the last
            // mounted is on top (`max_by_key` keeps the last maximum).
            .max_by_key(|mount| mount.point.components().count());
        let Some(holding) = holding else {
            return false;
        };
        is_local(&holding.fs_type)
            && self
                .mounts
                .iter()
                .filter(|mount| mount.point != root && mount.point.starts_with(root))
                .all(|mount| is_local(&mount.fs_type))
    }
}

fn is_local(fs_type: &str) -> bool {
    LOCAL_TYPES.contains(&fs_type)
}

/// Undoes the table's octal escapes (`\040` for a space, `\011` tab,
/// `\012` newline, `\134` backslash); anything else is kept as it is.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes
            .get(at + 1..at + 4)
            .filter(|digits| bytes[at] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .map(|digits| digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0')));
        match octal.and_then(|value| u8::try_from(value).ok()) {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's table: root on ext4, a tmpfs, an NFS share under /srv and
    /// an autofs point under /home.
    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw
24 22 0:22 / /tmp rw shared:5 - tmpfs tmpfs rw
30 22 8:2 / /srv rw shared:7 - xfs /dev/sdb1 rw
31 30 0:40 / /srv/shared rw master:3 - nfs4 fileserver:/export rw
32 22 0:41 / /home rw shared:9 - autofs auto.home rw
33 30 8:3 / /srv/my\\040data rw - ext4 /dev/sdc1 rw
";

    fn local(root: &str) -> bool {
        MountTable::parse(TABLE).local_beneath(Path::new(root))
    }

    #[test]
    fn a_local_root_without_remote_mounts_beneath_is_local() {
        assert!(local("/srv/project"));
        assert!(local("/tmp/work"));
        assert!(local("/srv/my data"), "escaped mount points are unescaped");
    }

    #[test]
    fn a_remote_mount_at_or_beneath_the_root_is_not_local() {
        assert!(!local("/srv"), "/srv/shared is NFS");
        assert!(!local("/"));
        assert!(!local("/srv/shared"));
        assert!(!local("/srv/shared/deep/dir"));
        assert!(!local("/home/alice"), "autofs may mount anything");
    }

    #[test]
    fn mount_points_match_whole_components() {
        // "/srv/sharedness" is not under "/srv/shared".
        assert!(local("/srv/sharedness"));
    }

    #[test]
    fn the_last_mount_on_a_point_is_the_one_in_effect() {
        let stacked = format!("{TABLE}40 30 0:50 / /srv/project rw - fuse.sshfs host: rw\n");
        let table = MountTable::parse(&stacked);
        assert!(!table.local_beneath(Path::new("/srv/project/src")));
        let unstacked = format!("{stacked}41 40 8:4 / /srv/project rw - ext4 /dev/sdd1 rw\n");
        assert!(MountTable::parse(&unstacked).local_beneath(Path::new("/srv/project/src")));
    }

    #[test]
    fn an_empty_or_garbled_table_makes_nothing_local() {
        assert!(!MountTable::parse("").local_beneath(Path::new("/srv")));
        assert!(!MountTable::parse("nonsense\n1 2 3\n").local_beneath(Path::new("/srv")));
    }

    #[test]
    fn unescape_decodes_octal_and_keeps_the_rest() {
        assert_eq!(unescape(r"a\040b\011c\012d\134e"), "a b\tc\nd\\e");
        assert_eq!(unescape(r"plain\x\04"), r"plain\x\04");
        assert_eq!(unescape(r"\777"), r"\777", "not a byte: kept");
    }

    #[test]
    fn this_machine_s_table_parses() {
        let Ok(text) = std::fs::read_to_string(MountTable::PROC_PATH) else {
            return; // not Linux, or no /proc: nothing to check
        };
        let table = MountTable::parse(&text);
        assert!(
            table.mounts.iter().any(|m| m.point == Path::new("/")),
            "{text}"
        );
    }
}
