//! Which storage a workdir's calls can reach: the mount its root
//! descriptor is on and every mount beneath the root, read from the mount
//! table.
//!
//! A call on local storage (a disk or memory filesystem served by this
//! kernel) ends in bounded time. A call that reaches a network or
//! user-space filesystem (NFS, SMB, FUSE, autofs, 9p, …) can wait as long
//! as that filesystem's server does, forever when it is gone. The server
//! uses the difference to decide where a small call runs.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// Filesystem types (as the mount table names them) served by the local
/// kernel from a disk or memory. Anything else counts as possibly remote:
/// an unknown type is never assumed to be local, nor are the kernel's
/// pseudo-filesystems (a read in `/proc` can wait on another process).
const LOCAL_TYPES: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "bcachefs", "tmpfs", "ramfs", "overlay",
];

/// The mounts of this process's mount namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountTable {
    mounts: Vec<Mount>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    id: u64,
    point: PathBuf,
    fs_type: String,
}

impl MountTable {
    /// Where Linux lists the mounts this process sees.
    pub const PROC_PATH: &'static str = "/proc/self/mountinfo";

    /// Parses `/proc/self/mountinfo` (see proc(5)); its bytes, since a
    /// mount point need not be UTF-8. A line without the fields this needs
    /// is skipped: that cannot make storage count as local.
    pub fn parse(mountinfo: &[u8]) -> MountTable {
        let mounts = mountinfo
            .split(|byte| *byte == b'\n')
            .filter_map(|line| {
                let mut fields = line.split(|byte| *byte == b' ');
                let id = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
                let point = fields.nth(3)?;
                // Optional fields end with a lone "-"; the type follows it.
                let fs_type = fields.skip_while(|field| *field != b"-").nth(1)?;
                Some(Mount {
                    id,
                    point: PathBuf::from(OsString::from_vec(unescape(point))),
                    fs_type: String::from_utf8_lossy(fs_type).into_owned(),
                })
            })
            .collect();
        MountTable { mounts }
    }

    /// True when a workdir's calls can reach local storage only: the mount
    /// its root descriptor is on (`root_mount`, its mount ID) and every
    /// mount at or beneath `root` (where the root is now) have local types.
    /// The holding mount goes by ID, not by path, because the descriptor
    /// stays on the mount it was opened on whatever is mounted over its
    /// path later.
    pub fn local_beneath(&self, root_mount: u64, root: &Path) -> bool {
        let Some(holding) = self.mounts.iter().find(|mount| mount.id == root_mount) else {
            return false;
        };
        is_local(holding)
            && self
                .mounts
                .iter()
                .filter(|mount| mount.id != root_mount && mount.point.starts_with(root))
                .all(is_local)
    }
}

fn is_local(mount: &Mount) -> bool {
    LOCAL_TYPES.contains(&mount.fs_type.as_str())
}

/// Undoes the table's octal escapes (`\040` for a space, `\011` tab,
/// `\012` newline, `\134` backslash); anything else is kept as it is.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut at = 0;
    while at < field.len() {
        let octal = field
            .get(at + 1..at + 4)
            .filter(|digits| field[at] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .map(|digits| digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0')));
        match octal.and_then(|value| u8::try_from(value).ok()) {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(field[at]);
                at += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's table: root on ext4 (mount 22), a tmpfs, an NFS share
    /// under /srv and an autofs point under /home.
    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw
24 22 0:22 / /tmp rw shared:5 - tmpfs tmpfs rw
30 22 8:2 / /srv rw shared:7 - xfs /dev/sdb1 rw
31 30 0:40 / /srv/shared rw master:3 - nfs4 fileserver:/export rw
32 22 0:41 / /home rw shared:9 - autofs auto.home rw
33 30 8:3 / /srv/my\\040data rw - ext4 /dev/sdc1 rw
";

    fn local(mount: u64, root: &str) -> bool {
        MountTable::parse(TABLE.as_bytes()).local_beneath(mount, Path::new(root))
    }

    #[test]
    fn a_local_root_without_remote_mounts_beneath_is_local() {
        assert!(local(30, "/srv/project"));
        assert!(local(24, "/tmp/work"));
        assert!(
            local(33, "/srv/my data"),
            "escaped mount points are unescaped"
        );
    }

    #[test]
    fn a_remote_mount_holding_or_beneath_the_root_is_not_local() {
        assert!(!local(30, "/srv"), "/srv/shared is NFS");
        assert!(!local(22, "/"), "/proc, /home and /srv/shared are beneath");
        assert!(!local(31, "/srv/shared"));
        assert!(!local(31, "/srv/shared/deep/dir"));
        assert!(!local(32, "/home/alice"), "autofs may mount anything");
    }

    #[test]
    fn the_holding_mount_goes_by_id_not_by_path() {
        // The root was opened on the NFS share; an ext4 mounted over its
        // path later does not change where its descriptor leads.
        let over = format!("{TABLE}40 31 8:4 / /srv/shared rw - ext4 /dev/sdd1 rw\n");
        let table = MountTable::parse(over.as_bytes());
        assert!(!table.local_beneath(31, Path::new("/srv/shared")));
        // A root opened on that ext4 is local, but an NFS mount over it
        // (reachable by path beneath the root) is not.
        let table = MountTable::parse(over.as_bytes());
        assert!(table.local_beneath(40, Path::new("/srv/shared/sub")));
        let nfs_over = format!("{over}41 40 0:50 / /srv/shared/sub rw - nfs4 f:/x rw\n");
        let table = MountTable::parse(nfs_over.as_bytes());
        assert!(!table.local_beneath(40, Path::new("/srv/shared/sub")));
    }

    #[test]
    fn mount_points_match_whole_components() {
        // "/srv/sharedness" is not under "/srv/shared".
        assert!(local(30, "/srv/sharedness"));
    }

    #[test]
    fn an_unknown_mount_or_a_garbled_table_makes_nothing_local() {
        assert!(!local(99, "/srv/project"), "no such mount");
        assert!(!MountTable::parse(b"").local_beneath(22, Path::new("/srv")));
        assert!(!MountTable::parse(b"nonsense\n1 2 3\n").local_beneath(1, Path::new("/srv")));
    }

    #[test]
    fn mount_points_need_not_be_utf8() {
        let table = MountTable::parse(b"5 1 8:1 / /srv/\xff rw - ext4 /dev/sda1 rw\n");
        let point = PathBuf::from(OsString::from_vec(b"/srv/\xff/w".to_vec()));
        assert!(table.local_beneath(5, &point));
    }

    #[test]
    fn unescape_decodes_octal_and_keeps_the_rest() {
        assert_eq!(unescape(br"a\040b\011c\012d\134e"), b"a b\tc\nd\\e");
        assert_eq!(unescape(br"plain\x\04"), br"plain\x\04");
        assert_eq!(unescape(br"\777"), br"\777", "not a byte: kept");
    }

    #[test]
    fn this_machine_s_table_parses() {
        let Ok(text) = std::fs::read(MountTable::PROC_PATH) else {
            return; // not Linux, or no /proc: nothing to check
        };
        let table = MountTable::parse(&text);
        assert!(
            table.mounts.iter().any(|m| m.point == Path::new("/")),
            "{}",
            String::from_utf8_lossy(&text)
        );
    }
}
