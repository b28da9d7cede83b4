//! Lexical resolution of an absolute path into the host path it names,
//! `/proc` magic links included: the filesystem is never consulted.

/// What an absolute path names.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Resolved<'t> {
    /// The segments of the host path it names (none: `/`).
    Path(Vec<&'t str>),
    /// A place only the kernel knows: a process's working directory, an
    /// open file, an executable image (`/proc/<pid>/cwd`, `/proc/<pid>/fd/3`,
    /// `/dev/fd/3`…). Always outside.
    Opaque,
}

/// Resolves absolute `path` lexically: `//` and `.` vanish, `..` goes up
/// (and stays at `/`, as the kernel does), and
///
/// * `/proc/<pid>/root` or `/proc/<pid>/task/<tid>/root` (`<pid>` a number,
///   `self` or `thread-self`; `<tid>` a number) is `/` again: what follows it
///   is a host path;
/// * `/proc/<pid>/cwd`, `/proc/<pid>/exe`, `/proc/<pid>/fd/<n>`,
///   `/proc/<pid>/map_files/<range>` (and their `task/<tid>` forms) and
///   `/dev/fd/<n>` are [`Resolved::Opaque`], whatever follows.
pub(super) fn resolve(path: &str) -> Resolved<'_> {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            name => {
                segments.push(name);
                match magic(&segments) {
                    Some(Magic::Root) => segments.clear(),
                    Some(Magic::Opaque) => return Resolved::Opaque,
                    None => {}
                }
            }
        }
    }
    Resolved::Path(segments)
}

/// What a magic link the segments end with leads to.
enum Magic {
    Root,
    Opaque,
}

/// Whether `segments` end on a magic link (checked after each push, so the
/// link is always the last segment or the one before).
fn magic(segments: &[&str]) -> Option<Magic> {
    let process = match segments {
        ["dev", "fd", _] => return Some(Magic::Opaque),
        ["proc", pid, rest @ ..] if is_pid(pid) => rest,
        _ => return None,
    };
    let link = match process {
        ["task", tid, rest @ ..] if is_number(tid) => rest,
        rest => rest,
    };
    match link {
        ["root"] => Some(Magic::Root),
        ["cwd" | "exe"] | ["fd" | "map_files", _] => Some(Magic::Opaque),
        _ => None,
    }
}

fn is_pid(segment: &str) -> bool {
    matches!(segment, "self" | "thread-self") || is_number(segment)
}

fn is_number(segment: &str) -> bool {
    !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segments: &[&'static str]) -> Resolved<'static> {
        Resolved::Path(segments.to_vec())
    }

    #[test]
    fn plain_paths_normalise() {
        assert_eq!(resolve("/srv//work/./a/../b"), path(&["srv", "work", "b"]));
        assert_eq!(resolve("/../.."), path(&[]));
        assert_eq!(
            resolve("/proc/self/status"),
            path(&["proc", "self", "status"])
        );
        assert_eq!(resolve("/proc/self/fd"), path(&["proc", "self", "fd"]));
        assert_eq!(
            resolve("/proc/sys/root/x"),
            path(&["proc", "sys", "root", "x"])
        );
    }

    #[test]
    fn proc_root_leads_to_the_host_path() {
        for prefix in [
            "/proc/self/root",
            "/proc/1/root",
            "/proc/thread-self/root",
            "/proc/42/task/43/root",
            "/proc/self/root/proc/self/root",
            "/proc//self/./root",
        ] {
            assert_eq!(
                resolve(&format!("{prefix}/srv/work/a")),
                path(&["srv", "work", "a"]),
                "{prefix}"
            );
            assert_eq!(resolve(prefix), path(&[]), "{prefix}");
        }
        assert_eq!(resolve("/proc/self/root/../../srv"), path(&["srv"]));
    }

    #[test]
    fn cwd_fd_and_exe_are_opaque() {
        for link in [
            "/proc/self/cwd",
            "/proc/self/cwd/..",
            "/proc/7/cwd/src/a.rs",
            "/proc/self/fd/3",
            "/proc/self/fd/3/x",
            "/proc/self/task/9/cwd",
            "/proc/self/task/9/fd/1",
            "/proc/thread-self/exe",
            "/proc/self/map_files/7f00-7f10",
            "/dev/fd/0",
            "/proc/self/root/proc/1/cwd",
        ] {
            assert_eq!(resolve(link), Resolved::Opaque, "{link}");
        }
    }
}
