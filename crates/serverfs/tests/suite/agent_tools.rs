//! The ten agent tools end to end: the real `serverfs` and the real
//! `serverfs-agent-bridge` (fake runtime) reading one `serverfs.toml`,
//! driven through rmcp's client (issue 7, spec-agent-bridge.md §1).
//! Results are validated against the tools' published `outputSchema`
//! (`Server::ok`). Lease behaviour is in `agent_lease.rs`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::Server;
use crate::common::agent::{
    AGENT_TOOLS, Listed, SETTLE, all_events, get, is_agent_tool, start_long_task, submit,
    submit_with, types, wait_event, wait_status, wait_until,
};
use crate::common::bridge::AgentEnv;
use crate::common::surface::{BASE_TOOLS, assert_fixture};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn assert_surface(server: &Server, expected: &[Listed<&str>]) {
    let actual: Vec<Listed<String>> = server
        .tools()
        .iter()
        .map(|t| {
            let a = t.annotations.as_ref().expect("annotations");
            assert!(t.output_schema.is_some(), "{} has an outputSchema", t.name);
            assert_eq!(t.input_schema["type"], json!("object"), "{}", t.name);
            (
                t.name.to_string(),
                a.read_only_hint.expect("readOnlyHint"),
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint.expect("openWorldHint"),
            )
        })
        .collect();
    let expected: Vec<Listed<String>> = expected
        .iter()
        .map(|(n, r, d, i, o)| (n.to_string(), *r, *d, *i, *o))
        .collect();
    pretty_assertions::assert_eq!(actual, expected);
}

fn base_surface() -> Vec<Listed<&'static str>> {
    BASE_TOOLS
        .iter()
        .map(|(n, r, d, i)| (*n, *r, *d, *i, false))
        .collect()
}

#[tokio::test]
async fn surface_is_the_base_one_unless_the_bridge_and_a_workdir_enable_agents() {
    // The Bridge is off: no agent tool, whatever else is configured.
    let off = AgentEnv::builder().bridge_disabled().build();
    let server = off.start_server().await;
    assert_surface(&server, &base_surface());

    // The Bridge is on but every workdir disables agents.
    let none = AgentEnv::builder()
        .demo("agent_mode = \"disabled\"")
        .workdir("other", "agent_mode = \"disabled\"")
        .build();
    let server = none.start_server().await;
    assert_surface(&server, &base_surface());
}

#[tokio::test]
async fn surface_with_agents_adds_the_ten_tools_pinned() {
    let env = AgentEnv::builder()
        .workdir(
            "rev",
            "agent_mode = \"review\"\nagent_runtimes = [\"fake\"]",
        )
        .workdir("off", "agent_mode = \"disabled\"")
        .build();
    // Listing needs no Bridge: nothing is started here.
    let server = env.start_server().await;
    let mut expected = base_surface();
    expected.extend_from_slice(AGENT_TOOLS);
    assert_surface(&server, &expected);
    assert_fixture(&server, "tools_list_agent.json");

    // list_workdirs reports each workdir's agent policy.
    let listed = server.ok("list_workdirs", json!({})).await;
    let policies: Vec<Value> = listed["workdirs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| json!([w["alias"], w["agent_mode"], w["agent_runtimes"]]))
        .collect();
    assert_eq!(
        policies,
        [
            json!(["demo", "workspace-write", ["fake"]]),
            json!(["rev", "review", ["fake"]]),
            json!(["off", "disabled", []]),
        ]
    );
}

#[tokio::test]
async fn submit_returns_at_once_and_polling_shows_the_progression() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    // The task cannot finish without an answer, so returning at all shows
    // that submit does not wait for it.
    let started = Instant::now();
    let submitted = server
        .ok(
            "submit_agent_task",
            json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: approval echo hi",
                   "correlation_id": "corr-1"}),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let task = submitted["task_id"].as_str().unwrap().to_owned();
    assert_eq!(
        submitted,
        json!({"task_id": task, "status": "queued", "correlation_id": "corr-1",
               "idempotency_key": null})
    );

    // Polling without wait_seconds answers at once, every time; the states
    // seen follow the task's order.
    let order = ["queued", "starting", "running", "waiting_for_approval"];
    let mut seen: Vec<String> = Vec::new();
    let deadline = Instant::now() + SETTLE;
    let view = loop {
        let asked = Instant::now();
        let view = get(&server, &task).await;
        assert!(asked.elapsed() < Duration::from_secs(2), "no wait asked");
        let status = view["status"].as_str().unwrap().to_owned();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if status == "waiting_for_approval" {
            break view;
        }
        assert!(Instant::now() < deadline, "stuck in {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let positions: Vec<usize> = seen
        .iter()
        .map(|s| order.iter().position(|o| o == s).expect("known state"))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "states out of order: {seen:?}"
    );

    // The pending approval, as a human decides from it: no host path and
    // no provider-native id.
    let request = &view["pending_request"];
    let request_id = view["pending_request_id"].as_str().unwrap().to_owned();
    assert!(request_id.starts_with("req_"));
    assert_eq!(request["request_id"], json!(request_id));
    assert_eq!(request["kind"], "approval");
    assert_eq!(request["status"], "pending");
    assert_eq!(
        request["payload"],
        json!({
            "category": "command",
            "title": "Fake command approval",
            "command_display": "echo hi",
            "relative_cwd": ".",
            "available_decisions": ["approve_once", "approve_session", "deny", "cancel_task"],
        })
    );
    let text = view.to_string();
    assert!(!text.contains(env.root().to_str().unwrap()), "host path");
    assert!(!text.contains("fake-session"), "native id");
    assert_eq!(view["workdir_alias"], "demo");
    assert_eq!(view["relative_cwd"], "");
    assert_eq!(view["profile"], "workspace-write");
    assert_eq!(view["correlation_id"], "corr-1");

    // Answer it; a long poll then follows the task to its end.
    server
        .ok(
            "respond_agent_approval",
            json!({"task_id": task, "request_id": request_id, "decision": "approve_once"}),
        )
        .await;
    let done = wait_until(&server, &task, "a terminal state", |v| {
        v["status"] != "waiting_for_approval" && v["status"] != "running"
    })
    .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["final_response"], "approved: echo hi");
    assert_eq!(done["final_response_truncated"], false);
    assert_eq!(
        done["result"],
        json!({"storage": "inline", "size_bytes": 17, "retrievable": false,
               "sha256": sha256_hex(b"approved: echo hi")})
    );
    assert_eq!(done["pending_request"], Value::Null);
    assert_eq!(done["error_code"], Value::Null);
    assert!(done["completed_at"].is_number());
}

#[tokio::test]
async fn long_polls_return_early_on_change_and_after_the_wait_otherwise() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = start_long_task(&server).await;
    // Let the turn's start-up writes (native ids) settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = get(&server, &task).await;
    let cursor = all_events(&server, &task).await.last().expect("events")["event_id"].clone();

    // Nothing changes: each long poll answers after about its wait. The
    // bounds are the long poll's contract, with generous margins.
    let asked = Instant::now();
    let view = server
        .ok(
            "get_agent_task",
            json!({"task_id": task, "wait_seconds": 3}),
        )
        .await;
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(2500) && took <= Duration::from_secs(5),
        "get_agent_task(wait_seconds: 3) took {took:?}"
    );
    assert_eq!(view["status"], "running");
    assert_eq!(view["updated_at"], before["updated_at"]);

    let asked = Instant::now();
    let page = server
        .ok(
            "read_agent_task_events",
            json!({"task_id": task, "after_event_id": cursor, "wait_seconds": 2}),
        )
        .await;
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took <= Duration::from_secs(4),
        "read_agent_task_events(wait_seconds: 2) took {took:?}"
    );
    assert_eq!(page["events"], json!([]));
    assert_eq!(page["next_after_event_id"], cursor);

    // wait_seconds 0 answers at once; more than 45 is refused.
    let asked = Instant::now();
    get(&server, &task).await;
    assert!(asked.elapsed() < Duration::from_secs(2));
    assert_eq!(
        server
            .err(
                "get_agent_task",
                json!({"task_id": task, "wait_seconds": 46})
            )
            .await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        server
            .err(
                "read_agent_task_events",
                json!({"task_id": task, "wait_seconds": 46})
            )
            .await,
        "INVALID_ARGUMENT"
    );

    // A change ends both long polls long before their 30 s.
    let asked = Instant::now();
    let (view, page, cancelled) = tokio::join!(
        server.ok(
            "get_agent_task",
            json!({"task_id": task, "wait_seconds": 30})
        ),
        server.ok(
            "read_agent_task_events",
            json!({"task_id": task, "after_event_id": cursor, "wait_seconds": 30})
        ),
        async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            server
                .ok("cancel_agent_task", json!({"task_id": task}))
                .await
        },
    );
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "long polls took {took:?} after a change"
    );
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(view["status"], "cancelled", "{view}");
    let new_types = types(page["events"].as_array().unwrap());
    assert!(
        new_types.iter().any(|t| t == "task.cancelled"),
        "{new_types:?}"
    );
}

/// A task waiting for the client's own answer cannot change by waiting:
/// `get_agent_task` answers at once with the pending request.
#[tokio::test]
async fn a_long_poll_on_a_task_awaiting_the_client_answers_at_once() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = server
        .ok(
            "submit_agent_task",
            json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: approval ls"}),
        )
        .await["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(&server, &task).await["status"] != "waiting_for_approval" {
        assert!(Instant::now() < deadline, "the approval never came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asked = Instant::now();
    let view = server
        .ok(
            "get_agent_task",
            json!({"task_id": task, "wait_seconds": 20}),
        )
        .await;
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "held for {:?}",
        asked.elapsed()
    );
    assert_eq!(view["status"], "waiting_for_approval");
    assert!(view["pending_request"].is_object(), "{view}");
}

#[tokio::test]
async fn events_page_with_cursors() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = submit(&server, "fake: approval echo hi").await;
    let view = wait_status(&server, &task, "waiting_for_approval").await;
    server
        .ok(
            "respond_agent_approval",
            json!({"task_id": task, "request_id": view["pending_request_id"],
                   "decision": "approve_once"}),
        )
        .await;
    wait_status(&server, &task, "succeeded").await;
    let all = all_events(&server, &task).await;
    let all_types = types(&all);
    for expected in [
        "task.started",
        "turn.started",
        "approval.requested",
        "approval.resolved",
        "agent.message",
        "task.completed",
    ] {
        assert!(
            all_types.iter().any(|t| t == expected),
            "{expected} in {all_types:?}"
        );
    }
    assert_eq!(all_types[0], "task.started");
    assert_eq!(all_types.last().unwrap(), "task.completed");

    // Pages of two, each continuing at the previous next_after_event_id,
    // add up to the whole log.
    let mut cursor = json!(0);
    let mut paged = Vec::new();
    loop {
        let page = server
            .ok(
                "read_agent_task_events",
                json!({"task_id": task, "after_event_id": cursor, "limit": 2}),
            )
            .await;
        let events = page["events"].as_array().unwrap().clone();
        assert!(events.len() <= 2);
        if events.is_empty() {
            assert_eq!(
                page["next_after_event_id"], cursor,
                "an empty page keeps the cursor"
            );
            break;
        }
        assert_eq!(
            page["next_after_event_id"],
            events.last().unwrap()["event_id"]
        );
        cursor = page["next_after_event_id"].clone();
        paged.extend(events);
    }
    assert_eq!(paged, all);
    let ids: Vec<i64> = all
        .iter()
        .map(|e| e["event_id"].as_i64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for event in &all {
        assert_eq!(event["task_id"], json!(task));
        assert_eq!(event["schema_version"], 1);
    }
    let resolved = all
        .iter()
        .find(|e| e["event_type"] == "approval.resolved")
        .unwrap();
    assert_eq!(resolved["payload"], json!({"decision": "approve_once"}));

    // Bad pages are refused (by the Bridge, spec §5.2).
    for bad in [
        json!({"task_id": task, "limit": 0}),
        json!({"task_id": task, "limit": 501}),
        json!({"task_id": task, "after_event_id": -1}),
    ] {
        assert_eq!(
            server.err("read_agent_task_events", bad.clone()).await,
            "INVALID_LIMIT",
            "{bad}"
        );
    }
    assert_eq!(
        server
            .err(
                "read_agent_task_events",
                json!({"task_id": "agt_000000000000000000000000"})
            )
            .await,
        "AGENT_TASK_NOT_FOUND"
    );
}

#[tokio::test]
async fn final_responses_inline_and_spooled_are_read_back_whole() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    // Small: inline in the task view, nothing to read from the spool.
    let small = submit(&server, "fake: complete hello inline").await;
    let view = wait_status(&server, &small, "succeeded").await;
    assert_eq!(view["final_response"], "hello inline");
    assert_eq!(view["result"]["storage"], "inline");
    assert_eq!(
        server
            .err("read_agent_task_result", json!({"task_id": small}))
            .await,
        "AGENT_RESULT_NOT_RETRIEVABLE"
    );

    // About 20 KiB with multi-byte characters, over the 1 KiB spool
    // threshold: the view holds a prefix, the chunks hold the whole.
    let unit = "spooled résumé → ";
    let text: String = (0..)
        .map(|i| format!("{unit}{i} "))
        .take_while({
            let mut len = 0;
            move |piece: &String| {
                len += piece.len();
                len <= 20 * 1024
            }
        })
        .collect::<String>()
        .trim_end()
        .to_owned();
    let large = submit(&server, &format!("fake: complete {text}")).await;
    let view = wait_status(&server, &large, "succeeded").await;
    assert_eq!(view["final_response_truncated"], true);
    let prefix = view["final_response"].as_str().unwrap();
    assert!(
        !prefix.is_empty() && prefix.len() <= 1024,
        "{}",
        prefix.len()
    );
    assert!(text.starts_with(prefix));
    let result = &view["result"];
    assert_eq!(result["storage"], "spool");
    assert_eq!(result["retrievable"], true);
    assert_eq!(result["size_bytes"], json!(text.len()));
    assert_eq!(result["sha256"], json!(sha256_hex(text.as_bytes())));

    // Chunks of 4000 bytes: some end inside a character, which the Bridge
    // trims, so each next offset is where the previous chunk ended.
    let mut offset = 0u64;
    let mut whole = String::new();
    let mut chunks = 0;
    loop {
        let chunk = server
            .ok(
                "read_agent_task_result",
                json!({"task_id": large, "offset_bytes": offset, "max_bytes": 4000}),
            )
            .await;
        let piece = chunk["text"].as_str().unwrap();
        assert!(piece.len() <= 4000);
        assert_eq!(chunk["offset_bytes"], json!(offset));
        assert_eq!(
            chunk["next_offset_bytes"],
            json!(offset + piece.len() as u64)
        );
        whole.push_str(piece);
        offset = chunk["next_offset_bytes"].as_u64().unwrap();
        chunks += 1;
        if chunk["eof"] == true {
            break;
        }
        assert!(chunks < 100, "no eof");
    }
    assert!(chunks >= 5, "{chunks} chunks");
    assert_eq!(
        sha256_hex(whole.as_bytes()),
        result["sha256"].as_str().unwrap()
    );
    assert_eq!(whole, text);

    // One default-sized read returns it all.
    let all = server
        .ok("read_agent_task_result", json!({"task_id": large}))
        .await;
    assert_eq!(all["text"], json!(text));
    assert_eq!(all["eof"], true);
}

#[tokio::test]
async fn approvals_round_trip_and_late_answers_get_their_codes() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    // Returns the task and its pending request id.
    async fn pending(server: &Server) -> (String, String) {
        let task = submit(server, "fake: approval echo hi").await;
        let view = wait_status(server, &task, "waiting_for_approval").await;
        let request = view["pending_request_id"].as_str().unwrap().to_owned();
        (task, request)
    }
    let respond = |task: &str, request: &str, decision: &str| json!({"task_id": task, "request_id": request, "decision": decision});

    let mut answered = Vec::new();
    for (decision, status, response) in [
        ("approve_once", "succeeded", Some("approved: echo hi")),
        ("deny", "succeeded", Some("denied: echo hi")),
        ("cancel_task", "cancelled", None),
    ] {
        let (task, request) = pending(&server).await;
        let resolved = server
            .ok("respond_agent_approval", respond(&task, &request, decision))
            .await;
        assert_eq!(
            resolved,
            json!({"task_id": task, "request_id": request, "resolved": true,
                   "correlation_id": null})
        );
        let view = wait_status(&server, &task, status).await;
        assert_eq!(view["final_response"], json!(response), "{decision}");
        let events = all_events(&server, &task).await;
        let resolved = events
            .iter()
            .find(|e| e["event_type"] == "approval.resolved")
            .expect("approval.resolved");
        assert_eq!(resolved["payload"]["decision"], decision);
        answered.push((task, request));
    }

    // A second answer to a resolved request, whatever it says.
    for (task, request) in &answered {
        for decision in ["approve_once", "deny"] {
            assert_eq!(
                server
                    .err("respond_agent_approval", respond(task, request, decision))
                    .await,
                "REQUEST_ALREADY_RESOLVED"
            );
        }
    }

    // A late answer: the task was cancelled while its request waited.
    let (task, request) = pending(&server).await;
    server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
    assert_eq!(
        server
            .err(
                "respond_agent_approval",
                respond(&task, &request, "approve_once")
            )
            .await,
        "REQUEST_STALE"
    );
    assert_eq!(get(&server, &task).await["status"], "cancelled");

    // Requests that do not exist, and decisions that are not decisions.
    let (task, request) = pending(&server).await;
    assert_eq!(
        server
            .err(
                "respond_agent_approval",
                respond(&task, "req_000000000000000000000000", "deny")
            )
            .await,
        "REQUEST_NOT_FOUND"
    );
    assert_eq!(
        server
            .err("respond_agent_approval", respond(&task, &request, "maybe"))
            .await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        get(&server, &task).await["status"],
        "waiting_for_approval",
        "refused answers leave the request pending"
    );
    server
        .ok("respond_agent_approval", respond(&task, &request, "deny"))
        .await;
    wait_status(&server, &task, "succeeded").await;
}

#[tokio::test]
async fn exact_options_round_trip_through_respond_agent_approval() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    let task = submit(&server, "fake: options").await;
    let view = wait_status(&server, &task, "waiting_for_approval").await;
    let request = view["pending_request_id"].as_str().unwrap().to_owned();
    let payload = &view["pending_request"]["payload"];
    assert_eq!(
        payload["options"],
        json!([
            { "option_id": "opt-allow-once", "label": "Allow once", "kind": "allow_once" },
            { "option_id": "opt-allow-always", "label": "Always allow", "kind": "allow_always" },
            { "option_id": "opt-reject", "label": "Reject", "kind": "reject_once" }
        ]),
        "{view}"
    );
    let respond = |decision: &str, option: Option<&str>| {
        let mut args = json!({"task_id": task, "request_id": request, "decision": decision});
        if let Some(option) = option {
            args["option_id"] = json!(option);
        }
        args
    };

    // A bare approve_session never stands in for the provider's
    // allow-always; nor does a forged option or a mismatched decision.
    for args in [
        respond("approve_session", None),
        respond("approve_once", Some("opt-forged")),
        respond("approve_once", Some("opt-allow-always")),
    ] {
        assert_eq!(
            server.err("respond_agent_approval", args.clone()).await,
            "INVALID_APPROVAL_DECISION",
            "{args}"
        );
    }
    assert_eq!(get(&server, &task).await["status"], "waiting_for_approval");

    let resolved = server
        .ok(
            "respond_agent_approval",
            respond("approve_session", Some("opt-allow-always")),
        )
        .await;
    assert_eq!(
        resolved,
        json!({"task_id": task, "request_id": request, "resolved": true,
               "correlation_id": null})
    );
    let view = wait_status(&server, &task, "succeeded").await;
    assert_eq!(view["final_response"], "option=opt-allow-always", "{view}");
    let events = all_events(&server, &task).await;
    let observed = events
        .iter()
        .find(|e| e["event_type"] == "approval.observed")
        .expect("approval.observed");
    assert_eq!(
        observed["payload"],
        json!({"decision": "approve_session", "granted_permission_ids": [],
               "option_id": "opt-allow-always"})
    );
}

#[tokio::test]
async fn questions_round_trip_and_late_answers_get_their_codes() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    let task = submit(&server, "fake: question Which colour?").await;
    let view = wait_status(&server, &task, "waiting_for_question").await;
    let request = view["pending_request_id"].as_str().unwrap().to_owned();
    assert_eq!(view["pending_request"]["kind"], "question");
    assert_eq!(
        view["pending_request"]["payload"],
        json!({"questions": [{
            "question_id": "q1",
            "prompt": "Which colour?",
            "options": [{"option_id": "a", "label": "A"}, {"option_id": "b", "label": "B"}],
            "multi_select": false,
            "allow_free_text": true,
        }]})
    );

    // An invalid answer is refused and the question stays open.
    assert_eq!(
        server
            .err(
                "answer_agent_question",
                json!({"task_id": task, "request_id": request,
                       "answers": [{"question_id": "q1", "selected_option_ids": ["z"]}]}),
            )
            .await,
        "INVALID_QUESTION_ANSWER"
    );
    // An approval decision is not an answer.
    assert_eq!(
        server
            .err(
                "respond_agent_approval",
                json!({"task_id": task, "request_id": request, "decision": "approve_once"}),
            )
            .await,
        "INVALID_APPROVAL_DECISION"
    );
    let answer = json!({"task_id": task, "request_id": request,
        "answers": [{"question_id": "q1", "selected_option_ids": ["b"], "text": "dark"}]});
    let resolved = server.ok("answer_agent_question", answer.clone()).await;
    assert_eq!(
        resolved,
        json!({"task_id": task, "request_id": request, "resolved": true, "correlation_id": null})
    );
    let done = wait_status(&server, &task, "succeeded").await;
    let response = done["final_response"].as_str().unwrap();
    let resolution: Value =
        serde_json::from_str(response.strip_prefix("answers=").expect(response)).unwrap();
    assert_eq!(
        resolution,
        json!({"answers": [{"question_id": "q1", "selected_option_ids": ["b"], "text": "dark"}]})
    );
    let events = all_events(&server, &task).await;
    assert!(
        types(&events).contains(&"question.answered".to_owned()),
        "{:?}",
        types(&events)
    );

    // Duplicate, then late.
    assert_eq!(
        server.err("answer_agent_question", answer).await,
        "REQUEST_ALREADY_RESOLVED"
    );
    let task = submit(&server, "fake: question Again?").await;
    let view = wait_status(&server, &task, "waiting_for_question").await;
    let request = view["pending_request_id"].clone();
    server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
    assert_eq!(
        server
            .err(
                "answer_agent_question",
                json!({"task_id": task, "request_id": request,
                       "answers": [{"question_id": "q1", "selected_option_ids": ["a"]}]}),
            )
            .await,
        "REQUEST_STALE"
    );
}

#[tokio::test]
async fn steering_and_cancel() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;

    // The fake turn waits for guidance; the message reaches it.
    let task = submit(&server, "fake: steer").await;
    wait_event(&server, &task, "turn.started").await;
    let accepted = server
        .ok(
            "send_agent_message",
            json!({"task_id": task, "message": "turn left"}),
        )
        .await;
    assert_eq!(
        accepted,
        json!({"task_id": task, "accepted": true, "correlation_id": null})
    );
    let done = wait_status(&server, &task, "succeeded").await;
    assert_eq!(done["final_response"], "steered=turn left");
    let events = all_events(&server, &task).await;
    let message = events
        .iter()
        .find(|e| e["event_type"] == "user.message")
        .expect("user.message");
    assert_eq!(
        message["payload"],
        json!({"bytes": 9}),
        "size, never the text"
    );
    assert_eq!(
        server
            .err(
                "send_agent_message",
                json!({"task_id": task, "message": "too late"})
            )
            .await,
        "AGENT_TASK_TERMINAL"
    );

    // Cancel: terminal at once, safe to repeat, and final.
    let task = start_long_task(&server).await;
    let cancelled = server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
    assert_eq!(
        cancelled,
        json!({"task_id": task, "status": "cancelled", "correlation_id": null})
    );
    let view = get(&server, &task).await;
    assert_eq!(view["status"], "cancelled");
    assert!(view["completed_at"].is_number());
    assert_eq!(view["final_response"], Value::Null);
    assert_eq!(
        server
            .ok("cancel_agent_task", json!({"task_id": task}))
            .await,
        cancelled
    );
    wait_event(&server, &task, "task.cancelled").await;
    // A finished task keeps its status when cancelled again.
    let finished = submit(&server, "fake: complete done").await;
    wait_status(&server, &finished, "succeeded").await;
    assert_eq!(
        server
            .ok("cancel_agent_task", json!({"task_id": finished}))
            .await["status"],
        "succeeded"
    );
}

#[tokio::test]
async fn continue_from_task_id_creates_a_new_task_on_the_same_session() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let first = submit(&server, "fake: complete first").await;
    wait_status(&server, &first, "succeeded").await;

    // The follow-up waits for an approval so that its recovery guard (which
    // records the provider session) can be looked at while it runs.
    let second = submit_with(
        &server,
        json!({"prompt": "fake: approval echo again", "continue_from_task_id": first}),
    )
    .await;
    assert_ne!(second, first);
    let view = wait_status(&server, &second, "waiting_for_approval").await;
    assert_eq!(view["continue_from_task_id"], json!(first));
    assert_eq!(
        view["manifest"]["continuation"]["from_task_id"],
        json!(first)
    );
    let guard = serverfs_lease::read_guard(
        &env.lock_dir(),
        &serverfs_lease::LeaseId::alias("demo").unwrap(),
    )
    .unwrap()
    .expect("a running workspace-write task has a recovery guard");
    assert_eq!(guard.task_id, second);
    assert_eq!(
        guard.native_session_id.as_deref(),
        Some(format!("fake-session-{first}").as_str()),
        "the follow-up continues the first task's provider session"
    );
    server
        .ok(
            "respond_agent_approval",
            json!({"task_id": second, "request_id": view["pending_request_id"],
                   "decision": "approve_once"}),
        )
        .await;
    let done = wait_status(&server, &second, "succeeded").await;
    assert_eq!(done["final_response"], "approved: echo again");
    // The first task is untouched.
    let first_view = get(&server, &first).await;
    assert_eq!(first_view["status"], "succeeded");
    assert_eq!(first_view["final_response"], "first");
}

#[tokio::test]
async fn authorization_refusals_never_reach_the_bridge() {
    let env = AgentEnv::builder()
        .workdir("off", "agent_mode = \"disabled\"")
        .workdir(
            "rev",
            "agent_mode = \"review\"\nagent_runtimes = [\"fake\"]",
        )
        .build();
    let work = env.work();
    std::fs::create_dir(work.join("sub")).unwrap();
    std::fs::write(work.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink("sub", work.join("link")).unwrap();
    std::os::unix::fs::symlink(env.root(), work.join("up")).unwrap();
    // No Bridge runs yet: a refusal that needed it would answer
    // AGENT_BRIDGE_UNAVAILABLE instead of its own code.
    let server = env.start_server().await;
    let cases = [
        (json!({"workdir": "off"}), "AGENT_DISABLED"),
        (json!({"runtime": "codex"}), "AGENT_RUNTIME_NOT_ALLOWED"),
        (json!({"runtime": "claude"}), "AGENT_RUNTIME_NOT_ALLOWED"),
        (json!({"workdir": "rev"}), "AGENT_PROFILE_NOT_ALLOWED"),
        (
            json!({"workdir": "rev", "profile": "workspace-write"}),
            "AGENT_PROFILE_NOT_ALLOWED",
        ),
        (json!({"path": "../work"}), "PATH_OUTSIDE_WORKDIR"),
        (json!({"path": "sub/../.."}), "PATH_OUTSIDE_WORKDIR"),
        (
            json!({"path": work.join("sub").to_str().unwrap()}),
            "PATH_OUTSIDE_WORKDIR",
        ),
        (json!({"path": "link"}), "SYMLINK_NOT_ALLOWED"),
        (json!({"path": "up"}), "SYMLINK_NOT_ALLOWED"),
        (json!({"path": "link/inner"}), "SYMLINK_NOT_ALLOWED"),
        (json!({"path": "missing"}), "PATH_NOT_FOUND"),
        (json!({"path": "sub/missing"}), "PATH_NOT_FOUND"),
        (json!({"path": "file.txt"}), "NOT_A_DIRECTORY"),
        (json!({"workdir": "nope"}), "WORKDIR_NOT_FOUND"),
    ];
    let refuse_all = || async {
        for (extra, code) in &cases {
            let mut args =
                json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: complete x"});
            for (key, value) in extra.as_object().unwrap() {
                args[key] = value.clone();
            }
            assert_eq!(
                &server.err("submit_agent_task", args.clone()).await,
                code,
                "{args}"
            );
        }
        // Model advice runs the same checks.
        assert_eq!(
            server
                .err(
                    "list_agent_models",
                    json!({"runtime": "fake", "workdir": "demo", "task_prompt": "x",
                           "path": "link"}),
                )
                .await,
            "SYMLINK_NOT_ALLOWED"
        );
        assert_eq!(
            server
                .err("list_agent_models", json!({"runtime": "codex"}))
                .await,
            "AGENT_RUNTIME_NOT_ALLOWED"
        );
    };
    refuse_all().await;

    // With the Bridge up, the same refusals leave its task store empty.
    let bridge = env.start_bridge();
    refuse_all().await;

    // Nothing reached the Bridge's task store.
    let summary = env.inspect();
    assert!(
        summary.starts_with("tasks: 0 shown, 0 unfinished\n"),
        "{summary}"
    );

    // The same server and Bridge accept what is allowed.
    let review = submit_with(
        &server,
        json!({"workdir": "rev", "profile": "review", "prompt": "fake: complete r"}),
    )
    .await;
    let in_sub = submit_with(
        &server,
        json!({"path": "./sub/", "prompt": "fake: complete s"}),
    )
    .await;
    assert_eq!(
        wait_status(&server, &review, "succeeded").await["profile"],
        "review"
    );
    let view = wait_status(&server, &in_sub, "succeeded").await;
    assert_eq!(view["relative_cwd"], "sub");
    let summary = env.inspect();
    assert!(
        summary.starts_with("tasks: 2 shown, 0 unfinished\n"),
        "{summary}"
    );
    assert!(summary.contains(&format!(
        "{review} succeeded runtime=fake workdir=rev cwd=. profile=review"
    )));
    drop(bridge);
}

#[tokio::test]
async fn task_tools_recheck_the_workdir_against_the_current_configuration() {
    let env = AgentEnv::builder()
        .workdir(
            "other",
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]",
        )
        .build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = submit(&server, "fake: approval echo hi").await;
    let view = wait_status(&server, &task, "waiting_for_approval").await;
    let request = view["pending_request_id"].clone();

    // A second MCP server on the same Bridge whose configuration has since
    // disabled agents on `demo` (the operator's change).
    let later = server_with_changed_config(
        &env,
        "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]",
        "agent_mode = \"disabled\"",
    )
    .await;
    let calls = [
        ("get_agent_task", json!({"task_id": task})),
        ("read_agent_task_events", json!({"task_id": task})),
        ("read_agent_task_result", json!({"task_id": task})),
        (
            "respond_agent_approval",
            json!({"task_id": task, "request_id": request, "decision": "approve_once"}),
        ),
        (
            "answer_agent_question",
            json!({"task_id": task, "request_id": request,
                   "answers": [{"question_id": "q1", "text": "x"}]}),
        ),
        (
            "send_agent_message",
            json!({"task_id": task, "message": "x"}),
        ),
    ];
    for (tool, args) in calls {
        assert_eq!(later.err(tool, args).await, "AGENT_DISABLED", "{tool}");
    }
    // Nothing was changed through the refused calls.
    let view = get(&server, &task).await;
    assert_eq!(view["status"], "waiting_for_approval");
    assert_eq!(view["pending_request_id"], request);
    // Stopping stays possible while the workdir is configured.
    let cancelled = later
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

#[tokio::test]
async fn task_tools_recheck_the_task_profile_against_a_downgraded_workdir() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = submit(&server, "fake: approval echo hi").await;
    let view = wait_status(&server, &task, "waiting_for_approval").await;
    let request = view["pending_request_id"].clone();
    let review = submit_with(
        &server,
        json!({"prompt": "fake: complete read only", "profile": "review"}),
    )
    .await;
    wait_status(&server, &review, "succeeded").await;

    // A second MCP server on the same Bridge whose configuration has since
    // downgraded `demo` to review (the operator's change).
    let later = server_with_changed_config(
        &env,
        "agent_mode = \"workspace-write\"",
        "agent_mode = \"review\"",
    )
    .await;
    let calls = [
        ("get_agent_task", json!({"task_id": task})),
        ("read_agent_task_events", json!({"task_id": task})),
        ("read_agent_task_result", json!({"task_id": task})),
        (
            "respond_agent_approval",
            json!({"task_id": task, "request_id": request, "decision": "approve_once"}),
        ),
        (
            "send_agent_message",
            json!({"task_id": task, "message": "x"}),
        ),
    ];
    for (tool, args) in calls {
        assert_eq!(
            later.err(tool, args).await,
            "AGENT_PROFILE_NOT_ALLOWED",
            "{tool}"
        );
    }
    // A review task still passes the same checks there.
    assert_eq!(
        later.ok("get_agent_task", json!({"task_id": review})).await["status"],
        "succeeded"
    );
    // Nothing was changed through the refused calls.
    let view = get(&server, &task).await;
    assert_eq!(view["status"], "waiting_for_approval");
    assert_eq!(view["pending_request_id"], request);
    // Stopping is always allowed.
    let cancelled = later
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(get(&server, &task).await["status"], "cancelled");
}

#[tokio::test]
async fn audit_records_carry_ids_and_outcomes_never_prompts_answers_or_responses() {
    const PROMPT_WORD: &str = "PROMPTWORD-marmoset";
    const RESPONSE_WORD: &str = "RESPONSEWORD-okapi";
    const ANSWER_WORD: &str = "ANSWERWORD-quagga";
    const STEER_WORD: &str = "STEERWORD-narwhal";
    let env = AgentEnv::builder().build();
    let bridge = env.start_bridge();
    let server = env.start_server().await;

    // An approval (approved), then a duplicate answer.
    let task = submit(
        &server,
        &format!("{PROMPT_WORD}\nfake: approval echo hi\nfake: complete {RESPONSE_WORD}"),
    )
    .await;
    let view = wait_status(&server, &task, "waiting_for_approval").await;
    let request = view["pending_request_id"].clone();
    let respond = json!({"task_id": task, "request_id": request, "decision": "approve_once"});
    server.ok("respond_agent_approval", respond.clone()).await;
    let done = wait_status(&server, &task, "succeeded").await;
    assert!(
        done["final_response"]
            .as_str()
            .unwrap()
            .contains(RESPONSE_WORD)
    );
    all_events(&server, &task).await;
    assert_eq!(
        server.err("respond_agent_approval", respond).await,
        "REQUEST_ALREADY_RESOLVED"
    );
    // A question answered in free text, and steering.
    let asked = submit(&server, "fake: question Q?").await;
    let view = wait_status(&server, &asked, "waiting_for_question").await;
    server
        .ok(
            "answer_agent_question",
            json!({"task_id": asked, "request_id": view["pending_request_id"],
                   "answers": [{"question_id": "q1", "text": ANSWER_WORD}]}),
        )
        .await;
    wait_status(&server, &asked, "succeeded").await;
    let steered = submit(&server, "fake: steer").await;
    wait_event(&server, &steered, "turn.started").await;
    server
        .ok(
            "send_agent_message",
            json!({"task_id": steered, "message": STEER_WORD}),
        )
        .await;
    wait_status(&server, &steered, "succeeded").await;
    server
        .ok("cancel_agent_task", json!({"task_id": steered}))
        .await;
    server.ok("list_agent_runtimes", json!({})).await;
    let lines = server.shutdown().await;

    let calls: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .filter(|e| e["event"] == "tool_call" && is_agent_tool(e["tool"].as_str().unwrap()))
        .collect();
    let pick = |e: &Value| {
        json!({
            "tool": e["tool"], "task_id": e["task_id"], "runtime": e["runtime"],
            "workdir": e["workdir"], "decision": e["decision"], "status": e["status"],
            "success": e["success"], "error_code": e["error_code"],
        })
    };
    let first = |tool: &str, task: &str| {
        calls
            .iter()
            .find(|e| e["tool"] == tool && e["task_id"] == task)
            .map(pick)
            .unwrap_or_else(|| panic!("no {tool} record for {task}: {calls:#?}"))
    };
    let rec = |tool: &str, task: &str, decision: Value, status: &str| {
        json!({"tool": tool, "task_id": task, "runtime": "fake", "workdir": "demo",
               "decision": decision, "status": status, "success": true, "error_code": null})
    };
    assert_eq!(
        first("submit_agent_task", &task),
        rec("submit_agent_task", &task, Value::Null, "queued")
    );
    assert_eq!(
        first("respond_agent_approval", &task),
        rec(
            "respond_agent_approval",
            &task,
            json!("approve_once"),
            "waiting_for_approval"
        )
    );
    // The refused duplicate keeps who tried what, and its code.
    let duplicate = calls
        .iter()
        .filter(|e| e["tool"] == "respond_agent_approval")
        .nth(1)
        .map(pick)
        .expect("second respond record");
    assert_eq!(
        duplicate,
        json!({"tool": "respond_agent_approval", "task_id": task, "runtime": "fake",
               "workdir": "demo", "decision": "approve_once", "status": null,
               "success": false, "error_code": "REQUEST_ALREADY_RESOLVED"})
    );
    let polled = calls
        .iter()
        .rfind(|e| e["tool"] == "get_agent_task" && e["task_id"] == json!(task))
        .map(pick)
        .unwrap();
    assert_eq!(
        polled,
        rec("get_agent_task", &task, Value::Null, "succeeded")
    );
    assert_eq!(first("answer_agent_question", &asked)["success"], true);
    assert_eq!(
        first("send_agent_message", &steered)["task_id"],
        json!(steered)
    );
    assert_eq!(
        first("cancel_agent_task", &steered),
        rec("cancel_agent_task", &steered, Value::Null, "succeeded")
    );
    assert!(calls.iter().any(|e| e["tool"] == "list_agent_runtimes"));
    for call in &calls {
        assert!(call["duration_ms"].is_number(), "{call}");
    }

    // Nothing of what was said, in any line of either process.
    let serverfs_log = lines.join("\n");
    let bridge_log = bridge.stderr();
    for word in [PROMPT_WORD, RESPONSE_WORD, ANSWER_WORD, STEER_WORD] {
        assert!(!serverfs_log.contains(word), "{word} in the serverfs log");
        assert!(!bridge_log.contains(word), "{word} in the Bridge log");
    }
    assert!(
        !serverfs_log.contains(env.root().to_str().unwrap()),
        "host path in the serverfs log"
    );
}

/// A relay between `serverfs` and the Bridge that can hold requests of one
/// method back before forwarding them: a slow Bridge, on demand.
struct SlowRelay {
    hold: Arc<Mutex<Option<Hold>>>,
    accept: tokio::task::JoinHandle<()>,
}

/// Which requests the relay holds back, and for how long.
struct Hold {
    method: &'static str,
    /// Requests of `method` still let through at once.
    skip: usize,
    delay: Duration,
}

impl SlowRelay {
    /// Listens on `listen`, relaying each connection to the Bridge at
    /// `bridge`.
    fn start(listen: &std::path::Path, bridge: &std::path::Path) -> SlowRelay {
        let listener = tokio::net::UnixListener::bind(listen).expect("bind the relay");
        let hold: Arc<Mutex<Option<Hold>>> = Arc::default();
        let shared = Arc::clone(&hold);
        let bridge = bridge.to_path_buf();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, bridge.clone(), Arc::clone(&shared)));
            }
        });
        SlowRelay { hold, accept }
    }

    /// From now on, lets `skip` requests of `method` through, then holds
    /// each further one `delay` before forwarding it.
    fn hold(&self, method: &'static str, skip: usize, delay: Duration) {
        *self.hold.lock().unwrap() = Some(Hold {
            method,
            skip,
            delay,
        });
    }
}

impl Drop for SlowRelay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Relays one connection, request by request (the Bridge protocol answers
/// in order, one frame per line).
async fn relay(
    client: tokio::net::UnixStream,
    bridge: std::path::PathBuf,
    hold: Arc<Mutex<Option<Hold>>>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let Ok(upstream) = tokio::net::UnixStream::connect(&bridge).await else {
        return;
    };
    let (client_read, mut client_write) = client.into_split();
    let (upstream_read, mut upstream_write) = upstream.into_split();
    let mut client_read = BufReader::new(client_read);
    let mut upstream_read = BufReader::new(upstream_read);
    loop {
        let mut request = String::new();
        if !matches!(client_read.read_line(&mut request).await, Ok(n) if n > 0) {
            return;
        }
        let method = serde_json::from_str::<Value>(&request)
            .ok()
            .and_then(|frame| frame["method"].as_str().map(str::to_owned));
        let delay = match hold.lock().unwrap().as_mut() {
            Some(hold) if method.as_deref() == Some(hold.method) => {
                if hold.skip > 0 {
                    hold.skip -= 1;
                    None
                } else {
                    Some(hold.delay)
                }
            }
            Some(_) | None => None,
        };
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let mut answer = String::new();
        if upstream_write.write_all(request.as_bytes()).await.is_err()
            || !matches!(upstream_read.read_line(&mut answer).await, Ok(n) if n > 0)
            || client_write.write_all(answer.as_bytes()).await.is_err()
        {
            return;
        }
    }
}

/// The Bridge, a [`SlowRelay`] in front of it and an MCP server talking to
/// the relay.
async fn behind_a_relay(env: &AgentEnv) -> (SlowRelay, Server) {
    let bridge_socket = env.root().join("run/bridge.sock");
    let relay_socket = env.root().join("run/relay.sock");
    let relay = SlowRelay::start(&relay_socket, &bridge_socket);
    let original = std::fs::read_to_string(env.root().join("serverfs.toml")).unwrap();
    let quoted = |path: &std::path::Path| format!("{:?}", path.to_str().unwrap());
    let direct = format!("socket = {}", quoted(&bridge_socket));
    assert!(original.contains(&direct), "{original}");
    let config = env.root().join("relayed.toml");
    std::fs::write(
        &config,
        original.replacen(&direct, &format!("socket = {}", quoted(&relay_socket)), 1),
    )
    .unwrap();
    let server = Server::start(&["--config", config.to_str().unwrap()], &[]).await;
    (relay, server)
}

/// How long the relay holds a request back: far beyond the waits asked
/// for, well within the call timeout (30 s).
const SLOW_BRIDGE: Duration = Duration::from_secs(8);

#[tokio::test]
async fn long_polls_answer_within_their_wait_however_slow_the_bridge() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let (relay, server) = behind_a_relay(&env).await;
    let task = start_long_task(&server).await;
    // Let the turn's start-up writes (native ids) settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cursor = all_events(&server, &task).await.last().expect("events")["event_id"].clone();

    // The first read (the authorization) is quick; every poll after it
    // takes the Bridge SLOW_BRIDGE.
    relay.hold("task.get", 1, SLOW_BRIDGE);
    let asked = Instant::now();
    let view = server
        .ok(
            "get_agent_task",
            json!({"task_id": task, "wait_seconds": 2}),
        )
        .await;
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(5),
        "get_agent_task(wait_seconds: 2) took {took:?}"
    );
    assert_eq!(view["status"], "running");

    relay.hold("task.events", 1, SLOW_BRIDGE);
    let asked = Instant::now();
    let page = server
        .ok(
            "read_agent_task_events",
            json!({"task_id": task, "after_event_id": cursor, "wait_seconds": 2}),
        )
        .await;
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(5),
        "read_agent_task_events(wait_seconds: 2) took {took:?}"
    );
    assert_eq!(page["events"], json!([]));
    assert_eq!(page["next_after_event_id"], cursor);

    relay.hold("task.get", usize::MAX, Duration::ZERO);
    server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
}

#[tokio::test]
async fn an_events_long_poll_that_sees_the_task_end_returns_its_terminal_events() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let (relay, server) = behind_a_relay(&env).await;
    let task = submit(&server, "fake: wait 3000").await;
    wait_event(&server, &task, "turn.started").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cursor = all_events(&server, &task).await.last().expect("events")["event_id"].clone();

    // The long poll's status check (the second `task.get`) reaches the
    // Bridge only after the turn ended: the empty page read before it is
    // stale by then.
    relay.hold("task.get", 1, Duration::from_secs(5));
    let page = server
        .ok(
            "read_agent_task_events",
            json!({"task_id": task, "after_event_id": cursor, "wait_seconds": 20}),
        )
        .await;
    let returned = types(page["events"].as_array().expect("events"));
    assert_eq!(
        returned.last().map(String::as_str),
        Some("task.completed"),
        "{returned:?}"
    );
}

/// A second `serverfs` on the same Bridge, started from the shared
/// configuration with `from` replaced by `to` once (an operator's later
/// change of policy).
async fn server_with_changed_config(env: &AgentEnv, from: &str, to: &str) -> Server {
    let original = std::fs::read_to_string(env.root().join("serverfs.toml")).unwrap();
    assert!(original.contains(from), "the configuration has no {from:?}");
    let changed = env.root().join("changed.toml");
    std::fs::write(&changed, original.replacen(from, to, 1)).unwrap();
    Server::start(&["--config", changed.to_str().unwrap()], &[]).await
}
