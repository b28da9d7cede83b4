//! The task service as a library, driven through
//! [`BridgeService::handle`] with typed requests: what the binary cannot
//! show in test time, such as the retention purge (its configured minimum
//! is one hour; here the settings are built by hand with 50 ms).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use serverfs_agent_bridge::rpc::{BridgeService, PeerInfo};
use serverfs_agent_bridge::service::{Policies, Runtimes, ServiceSettings, TaskService};
use serverfs_agent_bridge::store::{StateDir, Store};
use serverfs_agent_runtime::fake::{FAKE_CAPABILITIES, FakeAdapter};
use serverfs_agent_runtime::payload::{approval, catalog_unsupported};
use serverfs_agent_runtime::spawn::spawn_provider;
use serverfs_agent_runtime::turns::{TurnControl, TurnRegistry};
use serverfs_agent_runtime::{
    Adapter, BoxFuture, Capabilities, Host, NativeIds, Probe, ProviderCommand, ProviderState,
    TaskContext, TurnOutcome,
};
use serverfs_config::{Config, select_source};
use serverfs_protocol::bridge::{
    ApprovalCategory, ApprovalDecision, BridgeRequest, ModelCatalog, ReconcileStatus, Request,
    Response, TaskApprovalRespondParams, TaskCancelParams, TaskEventsParams, TaskGetParams,
    TaskSubmitParams,
};

use serverfs_testkit::bridge::{Setup, WAIT, demo_lease, guards, mcp_mutation};

/// How long finished tasks are kept in these tests: longer than the
/// submits and waits a test makes before it lets the retention pass (at
/// 50 ms a loaded machine let an early task expire before the test meant
/// it to, and an intermediate submit purged it).
const RETENTION: Duration = Duration::from_secs(1);

const PEER: PeerInfo = PeerInfo {
    uid: 0,
    gid: 0,
    pid: None,
};

/// A started service over `setup`'s configuration, with `retention`.
async fn start(setup: &Setup, retention: Duration) -> (TaskService, Store) {
    start_with(setup, retention, Arc::new(FakeAdapter::new())).await
}

/// [`start`] with `adapter` serving the `fake` runtime name.
async fn start_with(
    setup: &Setup,
    retention: Duration,
    fake: Arc<dyn Adapter>,
) -> (TaskService, Store) {
    let config_path = setup.write_config();
    let env = BTreeMap::new();
    let source = select_source(Some(config_path), &[], &env).unwrap();
    let config = Config::load(&source, &[], &env).unwrap();
    let mut settings = ServiceSettings::from_agent(&config.agent);
    settings.retention = retention;
    let store = Store::open(
        StateDir::open(setup.state_dir()).unwrap(),
        settings.limits.clone(),
    )
    .unwrap();
    let service = TaskService::start(
        store.clone(),
        Policies::from_config(&config).unwrap(),
        Runtimes::new([fake]),
        settings,
    )
    .await
    .unwrap();
    (service, store)
}

/// Sends one typed request; `Ok(result)` or `Err(code)`.
async fn call(service: &TaskService, call: impl Into<BridgeRequest>) -> Result<Value, String> {
    match service.handle(PEER, Request::new("r", call)).await {
        Response::Success { result, .. } => Ok(Value::Object(result)),
        Response::Failure { error, .. } => Err(error.code.as_str().to_owned()),
    }
}

fn review(prompt: &str, idempotency_key: Option<&str>) -> TaskSubmitParams {
    TaskSubmitParams {
        runtime: "fake".into(),
        workdir: "demo".into(),
        path: String::new(),
        profile: "review".into(),
        prompt: prompt.into(),
        model: None,
        continue_from_task_id: None,
        correlation_id: None,
        idempotency_key: idempotency_key.map(str::to_owned),
    }
}

async fn submit(service: &TaskService, params: TaskSubmitParams) -> String {
    let result = call(service, params).await.unwrap();
    result["task_id"].as_str().unwrap().to_owned()
}

fn get(task_id: &str) -> TaskGetParams {
    TaskGetParams {
        task_id: task_id.to_owned(),
    }
}

async fn wait_status(service: &TaskService, task_id: &str, status: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let view = call(service, get(task_id)).await.unwrap();
        if view["status"] == status {
            return view;
        }
        assert!(Instant::now() < deadline, "never {status}: {view}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_retention_purges_finished_tasks_at_the_next_submit() {
    let setup = Setup::new();
    let (service, store) = start(&setup, RETENTION).await;

    // Unfinished tasks are never purged, however old.
    let waiting = submit(&service, review("fake: approval", None)).await;
    wait_status(&service, &waiting, "waiting_for_approval").await;
    // The finished ones end last, each just before the next submit, so no
    // submit before the one below can find them past the retention.
    let cancelled = submit(&service, review("fake: wait 60000", None)).await;
    wait_status(&service, &cancelled, "running").await;
    call(
        &service,
        TaskCancelParams {
            task_id: cancelled.clone(),
        },
    )
    .await
    .unwrap();
    let done = submit(&service, review("fake: complete old", Some("key-1"))).await;
    wait_status(&service, &done, "succeeded").await;

    // Past the retention now; a read does not purge.
    tokio::time::sleep(RETENTION * 3).await;
    call(&service, get(&done)).await.unwrap();

    // The next submit purges what finished before now − retention.
    let fresh = submit(&service, review("fake: complete new", None)).await;
    for purged in [&done, &cancelled] {
        assert_eq!(
            call(&service, get(purged)).await.unwrap_err(),
            "AGENT_TASK_NOT_FOUND"
        );
        assert_eq!(
            call(
                &service,
                TaskEventsParams {
                    task_id: purged.to_string(),
                    after_event_id: None,
                    limit: None,
                },
            )
            .await
            .unwrap_err(),
            "AGENT_TASK_NOT_FOUND"
        );
    }
    assert_eq!(
        call(&service, get(&waiting)).await.unwrap()["status"],
        "waiting_for_approval"
    );
    wait_status(&service, &fresh, "succeeded").await;

    // The purged task's idempotency key is free again: a new task.
    let again = submit(&service, review("fake: complete old", Some("key-1"))).await;
    assert_ne!(again, done);
    wait_status(&service, &again, "succeeded").await;

    service.shutdown().await;
    store.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_keeps_finished_tasks_within_retention() {
    let setup = Setup::new();
    let (service, store) = start(&setup, Duration::from_secs(3600)).await;
    let done = submit(&service, review("fake: complete kept", None)).await;
    wait_status(&service, &done, "succeeded").await;
    tokio::time::sleep(RETENTION * 3).await;
    let other = submit(&service, review("fake: complete other", None)).await;
    let view = call(&service, get(&done)).await.unwrap();
    assert_eq!(view["final_response"], "kept");
    wait_status(&service, &other, "succeeded").await;
    service.shutdown().await;
    store.close().unwrap();
}

/// A test adapter serving the `fake` runtime name whose turn is `run`;
/// everything else answers as a runtime that is always there and never
/// active (its turn registry stays empty: the contract's default
/// steering, cancel and close find nothing).
struct TestAdapter {
    run: fn(TaskContext, Arc<dyn Host>) -> BoxFuture<'static, TurnOutcome>,
    turns: TurnRegistry<()>,
}

impl TestAdapter {
    fn new(run: fn(TaskContext, Arc<dyn Host>) -> BoxFuture<'static, TurnOutcome>) -> Self {
        TestAdapter {
            run,
            turns: TurnRegistry::new("fake"),
        }
    }
}

impl Adapter for TestAdapter {
    fn name(&self) -> &str {
        "fake"
    }

    fn capabilities(&self) -> Capabilities {
        FAKE_CAPABILITIES
    }

    fn turns(&self) -> &dyn TurnControl {
        &self.turns
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        Box::pin(async {
            Probe {
                available: true,
                version: None,
            }
        })
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async { catalog_unsupported("fake", "fake") })
    }

    fn run(&self, ctx: TaskContext, host: Arc<dyn Host>) -> BoxFuture<'_, TurnOutcome> {
        (self.run)(ctx, host)
    }

    fn reconcile<'a>(
        &'a self,
        _task_id: &'a str,
        _native: &'a NativeIds,
    ) -> BoxFuture<'a, ProviderState> {
        Box::pin(async {
            ProviderState {
                status: ReconcileStatus::NotRecoverable,
                provider_active: Some(false),
            }
        })
    }
}

/// A turn that raises an approval, leaves it unanswered (the request is
/// still open, its waiter alive) and completes anyway, as a provider may
/// when it withdraws a request on its own.
fn completes_while_asking(
    _ctx: TaskContext,
    host: Arc<dyn Host>,
) -> BoxFuture<'static, TurnOutcome> {
    Box::pin(async move {
        let asking = Arc::clone(&host);
        let pending = tokio::spawn(async move {
            let mut payload = approval(
                ApprovalCategory::Command,
                "never answered",
                vec![ApprovalDecision::ApproveOnce],
            );
            payload.command_display = Some("true".to_owned());
            let _ = asking.request_approval(payload).await;
        });
        // Let the request be stored and presented, then finish without
        // its answer. The waiter stays alive until after the turn.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let outcome = TurnOutcome::completed("done without the answer", NativeIds::default());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            pending.abort();
        });
        outcome
    })
}

/// A turn that starts a provider tree, records its group and returns
/// while its child is dropped a moment later (SIGKILL on drop, not
/// awaited), as when an adapter's turn is cut short mid-start: the group
/// is still alive when the turn ends, and dead shortly after.
fn drops_its_provider(ctx: TaskContext, host: Arc<dyn Host>) -> BoxFuture<'static, TurnOutcome> {
    Box::pin(async move {
        let mut command = ProviderCommand::new("/bin/sh", &ctx.cwd);
        command.args(["-c", "sleep 300 & sleep 300 & wait"]);
        let child = spawn_provider(&command, Some(host.as_ref()), "the test tree")
            .await
            .expect("the test tree starts");
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            drop(child);
        });
        TurnOutcome::completed("dropped", NativeIds::default())
    })
}

/// A turn that completes while its own request is still presented ends
/// `succeeded` with its answer; the open request goes stale. (It used to
/// stay `waiting_for_approval` forever, its result lost.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_a_turn_completing_while_asking_still_succeeds() {
    let setup = Setup::new();
    let (service, _store) = start_with(
        &setup,
        Duration::from_secs(3600),
        Arc::new(TestAdapter::new(completes_while_asking)),
    )
    .await;
    let task = submit(&service, review("anything", None)).await;
    // The request is presented for only a moment; its id comes from the
    // stored approval.requested event below, not from a poll that could
    // miss that moment.
    let done = wait_status(&service, &task, "succeeded").await;
    assert_eq!(done["final_response"], "done without the answer");
    assert_eq!(done["pending_request_id"], Value::Null);
    let events = call(
        &service,
        TaskEventsParams {
            task_id: task.clone(),
            after_event_id: None,
            limit: None,
        },
    )
    .await
    .unwrap();
    let events = events["events"].as_array().unwrap();
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"interaction.stale"), "{types:?}");
    assert_eq!(types.last(), Some(&"task.completed"), "{types:?}");
    let request = events
        .iter()
        .find(|e| e["event_type"] == "approval.requested")
        .and_then(|e| e["payload"]["request_id"].as_str())
        .unwrap_or_else(|| panic!("no approval.requested event: {types:?}"))
        .to_owned();
    // A late answer finds the request stale.
    let late = call(
        &service,
        TaskApprovalRespondParams {
            task_id: task,
            request_id: request,
            decision: "approve_once".to_owned(),
            granted_permission_ids: None,
            option_id: None,
        },
    )
    .await;
    assert_eq!(late, Err("REQUEST_STALE".to_owned()));
}

/// A provider the adapter dropped instead of stopping is killed a moment
/// before the turn ends; its guard must not outlive it. (The guard used to
/// be judged at once, found the group still dying and stay, blocking every
/// ServerFS mutation of the workdir until the next reconciliation.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_a_dropped_provider_does_not_keep_the_workdir_blocked() {
    let setup = Setup::new();
    // The daemon prepares the lease artifacts at start-up; the library
    // does not.
    serverfs_lease::prepare_artifacts(
        &setup.lock_dir(),
        serverfs_lease::ArtifactAccess::Private,
        &[demo_lease()],
    )
    .unwrap();
    let (service, _store) = start_with(
        &setup,
        Duration::from_secs(3600),
        Arc::new(TestAdapter::new(drops_its_provider)),
    )
    .await;
    let mut params = review("anything", None);
    params.profile = "workspace-write".into();
    let task = submit(&service, params).await;
    wait_status(&service, &task, "succeeded").await;
    // The lease is released once the runner judged the guard: the first
    // writer after that gets the workdir, with nothing left to reconcile.
    let deadline = Instant::now() + WAIT;
    loop {
        match mcp_mutation(&setup) {
            Ok(()) => break,
            Err("WORKDIR_BUSY") if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            other => panic!("the workdir stayed blocked: {other:?}"),
        }
    }
    assert_eq!(guards(&setup), Vec::new());
}

/// A turn that takes `hold` to end and ignores the runner's cancel (the
/// test adapter has no turn to interrupt), as a provider slow to stop.
fn slow_to_stop(hold: Duration) -> BoxFuture<'static, TurnOutcome> {
    Box::pin(async move {
        tokio::time::sleep(hold).await;
        TurnOutcome::completed("stopped at last", NativeIds::default())
    })
}

/// Stops 3 s after it starts, within the submission's wait (5 s).
fn stops_in_three_seconds(
    _ctx: TaskContext,
    _host: Arc<dyn Host>,
) -> BoxFuture<'static, TurnOutcome> {
    slow_to_stop(Duration::from_secs(3))
}

/// Stops 9 s after it starts, past the submission's wait (5 s) and within
/// the runner's interrupt bound (10 s).
fn stops_in_nine_seconds(
    _ctx: TaskContext,
    _host: Arc<dyn Host>,
) -> BoxFuture<'static, TurnOutcome> {
    slow_to_stop(Duration::from_secs(9))
}

/// A service whose `fake` turns are `run`, over lease artifacts prepared
/// as the daemon would, with one running workspace-write task just
/// cancelled: the service and the cancelled task's id.
async fn just_cancelled_writer(
    setup: &Setup,
    run: fn(TaskContext, Arc<dyn Host>) -> BoxFuture<'static, TurnOutcome>,
) -> (TaskService, Store, String) {
    serverfs_lease::prepare_artifacts(
        &setup.lock_dir(),
        serverfs_lease::ArtifactAccess::Private,
        &[demo_lease()],
    )
    .unwrap();
    let (service, store) = start_with(
        setup,
        Duration::from_secs(3600),
        Arc::new(TestAdapter::new(run)),
    )
    .await;
    let task = submit(&service, writer("first")).await;
    wait_status(&service, &task, "running").await;
    let cancelled = call(
        &service,
        TaskCancelParams {
            task_id: task.clone(),
        },
    )
    .await
    .unwrap();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    (service, store, task)
}

/// A workspace-write submission of `prompt` to `demo`.
fn writer(prompt: &str) -> TaskSubmitParams {
    let mut params = review(prompt, None);
    params.profile = "workspace-write".into();
    params
}

/// Cancel, then submit at once: the cancellation is stored before the
/// provider stops (terminal-first), and the submission waits for the
/// stopping task to let go of the workdir instead of answering
/// `WORKDIR_BUSY` to a client that was just told the task is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_a_submission_right_after_a_cancel_waits_for_the_stopping_writer() {
    let setup = Setup::new();
    let (service, store, cancelled) = just_cancelled_writer(&setup, stops_in_three_seconds).await;
    // The provider is still stopping: the lease is held for ServerFS's
    // mutations, which do not wait.
    assert_eq!(mcp_mutation(&setup), Err("WORKDIR_BUSY"));

    let next = submit(&service, writer("second")).await;
    assert_eq!(
        call(&service, get(&cancelled)).await.unwrap()["status"],
        "cancelled"
    );
    let done = wait_status(&service, &next, "succeeded").await;
    assert_eq!(done["final_response"], "stopped at last");
    service.shutdown().await;
    store.close().unwrap();
}

/// A provider slower to stop than the submission's wait: `WORKDIR_BUSY`,
/// saying which ended task still holds the workdir; once it has stopped,
/// the next submission is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_a_writer_slower_to_stop_than_the_wait_is_named_in_workdir_busy() {
    let setup = Setup::new();
    let (service, store, cancelled) = just_cancelled_writer(&setup, stops_in_nine_seconds).await;

    let refused = match service
        .handle(PEER, Request::new("r", writer("second")))
        .await
    {
        Response::Failure { error, .. } => error,
        Response::Success { result, .. } => panic!("accepted while the writer stops: {result:?}"),
    };
    assert_eq!(refused.code.as_str(), "WORKDIR_BUSY");
    assert!(
        refused.message.contains(&cancelled) && refused.message.contains("still stopping"),
        "{}",
        refused.message
    );

    let deadline = Instant::now() + WAIT;
    let next = loop {
        match call(&service, writer("third")).await {
            Ok(result) => break result["task_id"].as_str().unwrap().to_owned(),
            Err(code) if code == "WORKDIR_BUSY" && Instant::now() < deadline => {}
            Err(code) => panic!("the workdir stayed blocked: {code}"),
        }
    };
    wait_status(&service, &next, "succeeded").await;
    service.shutdown().await;
    store.close().unwrap();
}
