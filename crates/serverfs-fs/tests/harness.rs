//! `fs_test!`: run one test body against both resolvers.

use serverfs_fs::{PathPolicy, Resolver, Workdir};
use serverfs_testkit::TempWorkdir;

/// Expands to one `#[test]` that runs `$body(&TempWorkdir, Resolver)` on a
/// fresh fixture once with `openat2` (when the kernel has it) and once with
/// the `O_NOFOLLOW` walker.
macro_rules! fs_test {
    ($name:ident, $body:expr) => {
        #[test]
        fn $name() {
            for resolver in $crate::harness::resolvers() {
                let fixture = serverfs_testkit::TempWorkdir::new();
                let body: fn(&serverfs_testkit::TempWorkdir, serverfs_fs::Resolver) = $body;
                body(&fixture, resolver);
            }
        }
    };
}

/// The resolvers to test: always the walker; `Auto` only where it really
/// means `openat2` (otherwise it would silently test the walker twice).
pub fn resolvers() -> Vec<Resolver> {
    let mut list = vec![Resolver::Walk];
    if serverfs_fs::openat2_available() {
        list.insert(0, Resolver::Auto);
    } else {
        eprintln!("openat2 unavailable on this kernel: testing the walker only");
    }
    list
}

/// Opens the fixture's root with hidden names allowed and default deny on.
pub fn open(fixture: &TempWorkdir, resolver: Resolver) -> Workdir {
    open_with(fixture, resolver, PathPolicy::new(true, true, &[]).unwrap())
}

/// Opens the fixture's root with the given policy.
pub fn open_with(fixture: &TempWorkdir, resolver: Resolver, policy: PathPolicy) -> Workdir {
    Workdir::open(&fixture.root(), policy, resolver).unwrap()
}
