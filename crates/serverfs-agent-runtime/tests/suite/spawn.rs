//! Where and how a provider starts, and what is refused before it does.

use std::os::unix::fs::MetadataExt;

use serverfs_agent_runtime::{
    BridgeErrorCode, CommandProblem, ProcessError, ProviderCommand, ProxyPolicy,
};

use serverfs_testkit::process::stat;

use serverfs_testkit::within;

use super::support::read_stdout;

#[tokio::test]
async fn the_child_runs_in_the_given_directory() {
    let workdir = tempfile::tempdir().unwrap();
    let dir = workdir.path().join("task dir");
    std::fs::create_dir(&dir).unwrap();
    let mut child = ProviderCommand::new("/bin/sh", &dir)
        .args(["-c", "pwd; stat -c %d:%i ."])
        .spawn()
        .unwrap();
    let out = read_stdout(&mut child).await;
    assert!(within("sh to exit", child.wait()).await.unwrap().success());

    let meta = std::fs::metadata(&dir).unwrap();
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(dir.to_str().unwrap()));
    // Compared by identity too, in case the temporary directory sits
    // behind a symlink and `pwd` printed the physical path.
    assert_eq!(
        lines.next(),
        Some(format!("{}:{}", meta.dev(), meta.ino()).as_str())
    );
}

#[tokio::test]
async fn the_child_leads_a_process_group_of_its_own() {
    let workdir = tempfile::tempdir().unwrap();
    let mut child = ProviderCommand::new("/bin/sh", workdir.path())
        .args(["-c", "echo $$; exec cat"])
        .spawn()
        .unwrap();
    let group = child.process_group();
    let (line, _stdout) = super::support::first_line(&mut child).await;
    let pid: u32 = line.trim().parse().unwrap();

    assert_eq!(i32::try_from(pid).unwrap(), group.as_raw());
    assert_eq!(stat(pid).map(|(_, pgid)| pgid), Some(group.as_raw()));
    let own_group = stat(std::process::id()).unwrap().1;
    assert_ne!(own_group, group.as_raw());
    assert!(
        child
            .terminate(std::time::Duration::from_secs(5))
            .await
            .tree_gone
    );
}

fn refusal(command: &ProviderCommand) -> ProcessError {
    command.spawn().expect_err("the command must be refused")
}

#[tokio::test]
async fn relative_paths_are_refused_before_spawning() {
    let workdir = tempfile::tempdir().unwrap();
    let err = refusal(&ProviderCommand::new("sh", workdir.path()));
    assert!(matches!(
        err,
        ProcessError::InvalidCommand(CommandProblem::ExecutableNotAbsolute)
    ));
    assert_eq!(err.code(), BridgeErrorCode::AgentRuntimeUnavailable);

    let err = refusal(&ProviderCommand::new("/bin/sh", "relative/dir"));
    assert!(matches!(
        err,
        ProcessError::InvalidCommand(CommandProblem::WorkingDirectoryNotAbsolute)
    ));
}

#[tokio::test]
async fn missing_executable_or_directory_fails_to_spawn() {
    let workdir = tempfile::tempdir().unwrap();
    let missing_exe = workdir.path().join("no-such-provider");
    let err = refusal(&ProviderCommand::new(&missing_exe, workdir.path()));
    assert!(matches!(err, ProcessError::Spawn(_)), "{err:?}");
    assert_eq!(err.code(), BridgeErrorCode::AgentRuntimeUnavailable);
    // Display never names the host path.
    assert!(!err.to_string().contains("no-such-provider"), "{err}");

    let err = refusal(&ProviderCommand::new(
        "/bin/sh",
        workdir.path().join("gone"),
    ));
    assert!(matches!(err, ProcessError::Spawn(_)), "{err:?}");
}

#[tokio::test]
async fn proxy_required_without_endpoint_is_not_ready() {
    let workdir = tempfile::tempdir().unwrap();
    let err = refusal(
        ProviderCommand::new("/bin/sh", workdir.path()).proxy(ProxyPolicy {
            proxy_url: None,
            no_proxy: Some("corp.example".into()),
            enabled_for_runtime: true,
        }),
    );
    assert!(matches!(err, ProcessError::ProxyEndpointMissing));
    assert_eq!(err.code(), BridgeErrorCode::AgentRuntimeNotReady);
}

#[tokio::test]
async fn an_adapter_cannot_smuggle_a_proxy_variable() {
    let workdir = tempfile::tempdir().unwrap();
    let err = refusal(ProviderCommand::new("/bin/sh", workdir.path()).env("https_proxy", "x"));
    assert!(matches!(
        err,
        ProcessError::InvalidCommand(CommandProblem::ForbiddenEnvironmentName)
    ));
}
