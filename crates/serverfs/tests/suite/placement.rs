//! Where small calls run (issue 15): inline on local storage, on the
//! blocking pool as soon as a workdir can reach storage that hangs, so a
//! call stuck there never stalls the connection's other calls.
//!
//! The hanging storage is a FUSE mount that nobody serves: the kernel waits
//! for a daemon's answer to every access beneath it, until the test closes
//! the device. Mounting needs privilege; where this machine has none the
//! tests say so and end.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags, open};
use rustix::mount::{MountFlags, UnmountFlags, mount, unmount};
use serde_json::json;
use serverfs_testkit::TempWorkdir;

use crate::common::Server;

/// How long a call on local storage may take while another call hangs.
const ANSWER_BOUND: Duration = Duration::from_secs(10);
/// How long the hung call is watched to make sure it is really hung.
const HUNG_FOR: Duration = Duration::from_millis(1500);

/// A FUSE filesystem mounted at `point` with no daemon behind it. Dropping
/// it closes the device, which fails every waiting access, then detaches
/// the mount.
struct DeadFuseMount {
    point: PathBuf,
    device: Option<OwnedFd>,
}

impl DeadFuseMount {
    /// `None` (with a note) when this machine cannot mount FUSE.
    fn at(point: &Path) -> Option<DeadFuseMount> {
        let device = match open("/dev/fuse", OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()) {
            Ok(device) => device,
            Err(e) => {
                eprintln!("skipped: /dev/fuse: {e}");
                return None;
            }
        };
        let options = CString::new(format!(
            "fd={},rootmode=40000,user_id=0,group_id=0",
            device.as_raw_fd()
        ))
        .unwrap();
        if let Err(e) = mount(
            "serverfs-dead",
            point,
            "fuse",
            MountFlags::empty(),
            Some(options.as_c_str()),
        ) {
            eprintln!("skipped: cannot mount FUSE here: {e}");
            return None;
        }
        Some(DeadFuseMount {
            point: point.to_owned(),
            device: Some(device),
        })
    }
}

impl Drop for DeadFuseMount {
    fn drop(&mut self) {
        drop(self.device.take());
        let _ = unmount(&self.point, UnmountFlags::DETACH);
    }
}

fn workdir() -> TempWorkdir {
    let t = TempWorkdir::new();
    t.file("ok.txt", "local\n").dir("mnt");
    t
}

/// The `inline` value of the last `kernel_placement` line for `workdir`.
fn placement_logged(server: &Server, workdir: &str) -> Option<bool> {
    server
        .log_events("kernel_placement")
        .iter()
        .rfind(|log| log["workdir"] == workdir)
        .and_then(|log| log["inline"].as_bool())
}

/// Waits until `workdir`'s placement is logged as `inline` (any value
/// when `None`); the value.
async fn wait_for_placement(server: &Server, workdir: &str, inline: Option<bool>) -> bool {
    let started = Instant::now();
    loop {
        match placement_logged(server, workdir) {
            Some(logged) if inline.is_none_or(|wanted| wanted == logged) => return logged,
            _ => {}
        }
        assert!(
            started.elapsed() < ANSWER_BOUND,
            "no kernel_placement for {workdir} ({inline:?}): {:?}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts a `stat_file` of `mnt` (which hangs), checks that it is still
/// waiting after [`HUNG_FOR`] while calls on local paths answer, then ends
/// the mount and checks that the hung call is answered too.
async fn local_calls_answer_while_one_hangs(server: Arc<Server>, dead: DeadFuseMount) {
    let hung = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .call("stat_file", json!({"workdir": "w", "path": "mnt"}))
                .await
        }
    });
    let started = Instant::now();
    while started.elapsed() < HUNG_FOR {
        let call = server.ok("read_text_file", json!({"workdir": "w", "path": "ok.txt"}));
        let read = tokio::time::timeout(ANSWER_BOUND, call)
            .await
            .expect("a local read waited on the hung call");
        assert_eq!(read["content"], "local\n");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !hung.is_finished(),
        "the stat into the dead mount did not hang"
    );
    drop(dead);
    let answered = tokio::time::timeout(ANSWER_BOUND, hung)
        .await
        .expect("the hung call was not answered once the mount died")
        .unwrap();
    assert_eq!(answered.is_error, Some(true), "{answered:?}");
}

#[tokio::test]
async fn a_workdir_with_a_fuse_mount_beneath_runs_small_calls_on_the_pool() {
    let t = workdir();
    let Some(dead) = DeadFuseMount::at(&t.path("mnt")) else {
        return;
    };
    let plain = TempWorkdir::new();
    let server = Server::start(
        &[
            "--workdir",
            &format!("w={}", t.root().display()),
            "--workdir",
            &format!("plain={}", plain.root().display()),
        ],
        &[],
    )
    .await;
    if !wait_for_placement(&server, "plain", None).await {
        eprintln!("skipped: the temp directory is not on local storage");
        return;
    }
    assert!(!wait_for_placement(&server, "w", None).await);
    local_calls_answer_while_one_hangs(Arc::new(server), dead).await;
}

#[tokio::test]
async fn a_fuse_mount_appearing_beneath_a_workdir_moves_its_calls_to_the_pool() {
    let t = workdir();
    let server = Server::with_workdir("w", &t.root()).await;
    if !wait_for_placement(&server, "w", None).await {
        eprintln!("skipped: the temp directory is not on local storage");
        return;
    }
    let Some(dead) = DeadFuseMount::at(&t.path("mnt")) else {
        return;
    };
    // The mount watcher sees the change and says so.
    wait_for_placement(&server, "w", Some(false)).await;
    local_calls_answer_while_one_hangs(Arc::new(server), dead).await;
}

#[tokio::test]
async fn a_directory_too_big_to_list_inline_is_listed_whole() {
    // More names than the inline budget (4,096): the listing falls back to
    // the pool and still sees every one.
    let t = TempWorkdir::new();
    for n in 0..4100 {
        t.file(&format!("big/f{n:05}"), "");
    }
    let server = Server::with_workdir("w", &t.root()).await;
    let page = server
        .ok(
            "list_directory",
            json!({"workdir": "w", "path": "big", "offset": 4095, "limit": 10}),
        )
        .await;
    let names: Vec<&str> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["f04095", "f04096", "f04097", "f04098", "f04099"]);
    assert_eq!(page["has_more"], false);
    let small = server
        .ok(
            "list_directory",
            json!({"workdir": "w", "path": "", "limit": 10}),
        )
        .await;
    assert_eq!(small["entries"][0]["name"], "big");
}
