//! The task service as a library, driven through
//! [`BridgeService::handle`] with typed requests: what the binary cannot
//! show in test time, such as the retention purge (its configured minimum
//! is one hour; here the settings are built by hand with 50 ms).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use serverfs_agent_bridge::adapter::Adapter;
use serverfs_agent_bridge::adapter::fake::FakeAdapter;
use serverfs_agent_bridge::rpc::{BridgeService, PeerInfo};
use serverfs_agent_bridge::service::{Policies, Runtimes, ServiceSettings, TaskService};
use serverfs_agent_bridge::store::{StateDir, Store};
use serverfs_config::{Config, select_source};
use serverfs_protocol::bridge::{
    BridgeRequest, Request, Response, TaskCancelParams, TaskEventsParams, TaskGetParams,
    TaskSubmitParams,
};

use super::daemon::{Setup, WAIT};

/// How long finished tasks are kept in these tests.
const RETENTION: Duration = Duration::from_millis(50);

const PEER: PeerInfo = PeerInfo {
    uid: 0,
    gid: 0,
    pid: None,
};

/// A started service over `setup`'s configuration, with `retention`.
async fn start(setup: &Setup, retention: Duration) -> (TaskService, Store) {
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
    let fake: Arc<dyn Adapter> = Arc::new(FakeAdapter::new());
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

    let done = submit(&service, review("fake: complete old", Some("key-1"))).await;
    wait_status(&service, &done, "succeeded").await;
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
    // Unfinished tasks are never purged, however old.
    let waiting = submit(&service, review("fake: approval", None)).await;
    wait_status(&service, &waiting, "waiting_for_approval").await;

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
