//! The human in the loop of agent tasks through MCP itself (issue 18): the
//! Tasks extension over the Bridge's tasks, `elicitation/create` forms for
//! the plain tools, and the workdir's `approvals` policy — the real
//! `serverfs` and the real Bridge (fake runtime), driven through rmcp's
//! client declaring the extension and form elicitation.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, GetTaskParams,
    RequestMetaObject, UpdateTaskParams,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::common::Server;
use crate::common::agent::{SETTLE, get, submit, wait_event, wait_status};
use crate::common::bridge::AgentEnv;
use crate::common::e2e::toml_path;
use crate::common::human::Human;

/// A `tools/call` of `tool` whose request declares the Tasks extension in
/// its per-request capabilities (SEP-2663).
fn task_augmented(tool: &'static str, args: &Value) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::default();
    meta.set_client_capabilities(ClientCapabilities::builder().enable_tasks().build());
    let mut request =
        CallToolRequestParams::new(tool).with_arguments(args.as_object().expect("object").clone());
    request.meta = Some(meta);
    request
}

/// `submit_agent_task` to the fake runtime in `demo`, task-augmented: the
/// task handle.
async fn submit_as_task(server: &Server, prompt: &str) -> Value {
    let args = json!({"runtime": "fake", "workdir": "demo", "prompt": prompt});
    let request = task_augmented("submit_agent_task", &args);
    match server.client().call_tool_once(request).await {
        Ok(CallToolResponse::Task(created)) => serde_json::to_value(created).expect("encodes"),
        other => panic!("submit_agent_task did not answer with a task: {other:?}"),
    }
}

/// The id of a task-augmented `submit_agent_task`'s handle.
async fn submit_task_id(server: &Server, prompt: &str) -> String {
    let created = submit_as_task(server, prompt).await;
    created["taskId"].as_str().expect("taskId").to_owned()
}

/// A task submitted with `prompt` once it waits for input: its id and the
/// key of its input request.
async fn pending_input(server: &Server, prompt: &str) -> (String, String) {
    let task = submit_task_id(server, prompt).await;
    let (request, _) = input_request(&wait_task(server, &task, "input_required").await);
    (task, request)
}

/// The code of a `tasks/update` that must be refused.
async fn refused_update(server: &Server, task: &str, request: &str, response: Value) -> String {
    let refused = task_update(server, task, request, response)
        .await
        .expect_err("the update must be refused");
    refusal_code(&refused)
}

/// `tasks/get`, as JSON.
async fn task_get(server: &Server, task: &str) -> Result<Value, ServiceError> {
    let got = server.client().get_task(GetTaskParams::new(task)).await?;
    Ok(serde_json::to_value(got).expect("encodes"))
}

/// Polls `tasks/get` until the task's status is `status`.
async fn wait_task(server: &Server, task: &str, status: &str) -> Value {
    let deadline = Instant::now() + SETTLE;
    loop {
        let got = task_get(server, task).await.expect("tasks/get");
        if got["status"] == status {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "task {task} did not reach {status} within {SETTLE:?}: {got}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `tasks/update` answering `request` with an elicitation result.
async fn task_update(
    server: &Server,
    task: &str,
    request: &str,
    response: Value,
) -> Result<(), ServiceError> {
    let responses = serde_json::from_value(json!({ request: response })).expect("responses");
    server
        .client()
        .update_task(UpdateTaskParams::new(task, responses))
        .await
}

/// The stable code a refused `tasks/*` request carries.
fn refusal_code(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => {
            let code = data.data.as_ref().expect("error data")["error"]["code"]
                .as_str()
                .expect("a code")
                .to_owned();
            assert!(data.message.starts_with(&format!("{code}: ")), "{data:?}");
            code
        }
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

/// The single input request of an `input_required` task: its key and form.
fn input_request(got: &Value) -> (String, Value) {
    let requests = got["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{got}");
    let (key, request) = requests.iter().next().expect("one");
    assert_eq!(request["method"], "elicitation/create", "{request}");
    (key.clone(), request["params"].clone())
}

/// The `const` values a schema property offers.
fn choices(property: &Value) -> Vec<String> {
    property["oneOf"]
        .as_array()
        .or_else(|| property["items"]["anyOf"].as_array())
        .expect("choices")
        .iter()
        .map(|choice| choice["const"].as_str().expect("const").to_owned())
        .collect()
}

#[tokio::test]
async fn tasks_extension_approval_round_trip_deny_and_a_second_update() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_tasks()).await;

    // Submit → a handle at once, then working, then the approval's form.
    let created = submit_as_task(&server, "fake: approval echo hi").await;
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].as_str().expect("taskId").to_owned();
    assert!(
        task.starts_with("agt_"),
        "the handle is the Bridge's id: {task}"
    );
    // The handle carries the task's status when `tasks/get` resolved it:
    // still working, or (the fake runtime asks at once) already waiting
    // for the approval. Either way the ServerFS status leads the message.
    let message = created["statusMessage"].as_str().expect("statusMessage");
    let leads: &[&str] = match created["status"].as_str() {
        Some("working") => &["queued: ", "starting: ", "running: "],
        Some("input_required") => &["waiting_for_approval: "],
        _ => panic!("a new task is working or waiting for its approval: {created}"),
    };
    assert!(
        leads.iter().any(|status| message.starts_with(status)),
        "the ServerFS status leads the message: {created}"
    );
    let waiting = wait_task(&server, &task, "input_required").await;
    assert_eq!(waiting["_meta"]["serverfs/status"], "waiting_for_approval");
    let (request, form) = input_request(&waiting);
    let view = get(&server, &task).await;
    assert_eq!(
        view["pending_request_id"],
        json!(request),
        "keyed by request id"
    );
    assert!(
        form["message"].as_str().unwrap().contains("echo hi"),
        "{form}"
    );
    assert_eq!(
        choices(&form["requestedSchema"]["properties"]["decision"]),
        ["approve_once", "approve_session", "deny", "cancel_task"]
    );
    assert_eq!(form["requestedSchema"]["required"], json!(["decision"]));

    task_update(
        &server,
        &task,
        &request,
        json!({"action": "accept", "content": {"decision": "approve_once"}}),
    )
    .await
    .expect("tasks/update");
    let done = wait_task(&server, &task, "completed").await;
    let result = &done["result"];
    assert_eq!(
        result["structuredContent"]["final_response"],
        "approved: echo hi"
    );
    // The result is the one get_agent_task gives.
    assert_eq!(
        result["structuredContent"],
        get(&server, &task).await,
        "{done}"
    );

    // A second answer to the same request, whatever it says.
    for action in [
        json!({"action": "accept", "content": {"decision": "deny"}}),
        json!({"action": "decline"}),
    ] {
        assert_eq!(
            refused_update(&server, &task, &request, action).await,
            "REQUEST_ALREADY_RESOLVED"
        );
    }
    // A request that never existed.
    assert_eq!(
        refused_update(
            &server,
            &task,
            "req_000000000000000000000000",
            json!({"action": "decline"})
        )
        .await,
        "REQUEST_NOT_FOUND"
    );

    // Deny: the human's decline, and an explicit deny.
    for response in [
        json!({"action": "decline"}),
        json!({"action": "accept", "content": {"decision": "deny"}}),
    ] {
        let (task, request) = pending_input(&server, "fake: approval echo hi").await;
        task_update(&server, &task, &request, response.clone())
            .await
            .expect("tasks/update");
        let done = wait_task(&server, &task, "completed").await;
        assert_eq!(
            done["result"]["structuredContent"]["final_response"], "denied: echo hi",
            "{response}"
        );
    }

    // A dismissed input request decides nothing: it stays outstanding,
    // and tasks/cancel is how the human ends the task.
    let (task, request) = pending_input(&server, "fake: approval echo hi").await;
    task_update(&server, &task, &request, json!({"action": "cancel"}))
        .await
        .expect("tasks/update");
    let still = task_get(&server, &task).await.expect("tasks/get");
    assert_eq!(input_request(&still).0, request, "{still}");
    server
        .client()
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    let cancelled = wait_task(&server, &task, "cancelled").await;
    assert_eq!(cancelled["_meta"]["serverfs/status"], "cancelled");

    // An answer that is no decision on offer is refused; the request stays.
    let (task, request) = pending_input(&server, "fake: approval echo hi").await;
    assert_eq!(
        refused_update(
            &server,
            &task,
            &request,
            json!({"action": "accept", "content": {"decision": "maybe"}})
        )
        .await,
        "INVALID_APPROVAL_DECISION"
    );
    assert_eq!(get(&server, &task).await["status"], "waiting_for_approval");
}

#[tokio::test]
async fn tasks_extension_questions_with_options_and_free_text() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_tasks()).await;

    let task = submit_task_id(&server, "fake: question Which colour?").await;
    let waiting = wait_task(&server, &task, "input_required").await;
    assert_eq!(waiting["_meta"]["serverfs/status"], "waiting_for_question");
    let (request, form) = input_request(&waiting);
    assert!(
        form["message"].as_str().unwrap().contains("Which colour?"),
        "{form}"
    );
    let properties = &form["requestedSchema"]["properties"];
    assert_eq!(choices(&properties["q1"]), ["a", "b"]);
    assert_eq!(properties["q1_text"]["type"], "string", "{form}");

    task_update(
        &server,
        &task,
        &request,
        json!({"action": "accept", "content": {"q1": "b", "q1_text": "dark"}}),
    )
    .await
    .expect("tasks/update");
    let done = wait_task(&server, &task, "completed").await;
    let response = done["result"]["structuredContent"]["final_response"]
        .as_str()
        .expect("a final response");
    let answers: Value =
        serde_json::from_str(response.strip_prefix("answers=").expect(response)).unwrap();
    assert_eq!(
        answers,
        json!({"answers": [{"question_id": "q1", "selected_option_ids": ["b"], "text": "dark"}]})
    );
    assert_eq!(
        refused_update(
            &server,
            &task,
            &request,
            json!({"action": "accept", "content": {"q1": "a"}})
        )
        .await,
        "REQUEST_ALREADY_RESOLVED"
    );

    // An option that is not on offer is refused, and the question stays.
    let (task, request) = pending_input(&server, "fake: question Again?").await;
    assert_eq!(
        refused_update(
            &server,
            &task,
            &request,
            json!({"action": "accept", "content": {"q1": "z"}})
        )
        .await,
        "INVALID_QUESTION_ANSWER"
    );
    assert_eq!(get(&server, &task).await["status"], "waiting_for_question");
}

#[tokio::test]
async fn tasks_cancel_mid_turn_frees_the_workdir() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_tasks()).await;

    let task = submit_task_id(&server, "fake: wait 60000").await;
    wait_event(&server, &task, "turn.started").await;
    assert_eq!(
        wait_task(&server, &task, "working").await["_meta"]["serverfs/status"],
        "running"
    );
    server
        .client()
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    wait_task(&server, &task, "cancelled").await;
    assert_eq!(get(&server, &task).await["status"], "cancelled");

    // The workdir's writer lease is free: a new writing task runs.
    let next = submit_task_id(&server, "fake: complete after").await;
    let done = wait_task(&server, &next, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["final_response"],
        "after"
    );
}

#[tokio::test]
async fn a_task_handle_survives_a_serverfs_restart() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_tasks()).await;
    let task = submit_task_id(&server, "fake: approval echo hi").await;
    wait_task(&server, &task, "input_required").await;
    server.shutdown().await;

    let server = env.start_server_as(Human::default().with_tasks()).await;
    let waiting = wait_task(&server, &task, "input_required").await;
    let (request, _) = input_request(&waiting);
    task_update(
        &server,
        &task,
        &request,
        json!({"action": "accept", "content": {"decision": "approve_once"}}),
    )
    .await
    .expect("tasks/update");
    let done = wait_task(&server, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["final_response"],
        "approved: echo hi"
    );
}

#[tokio::test]
async fn task_handles_respect_the_current_policy() {
    // `other` keeps agents enabled, so the later server still has them.
    let env = AgentEnv::builder()
        .workdir(
            "other",
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]",
        )
        .build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_tasks()).await;
    let (task, request) = pending_input(&server, "fake: approval echo hi").await;

    // The operator has since disabled agents on `demo`: a server with the
    // new configuration refuses the handle as the tools refuse the task.
    let original = std::fs::read_to_string(env.config()).unwrap();
    let changed = env.root().join("changed.toml");
    std::fs::write(
        &changed,
        original.replacen(
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]",
            "agent_mode = \"disabled\"",
            1,
        ),
    )
    .unwrap();
    assert_ne!(std::fs::read_to_string(&changed).unwrap(), original);
    let later = Server::start_as(
        Human::default().with_tasks(),
        &["--config", changed.to_str().unwrap()],
        &[],
    )
    .await;
    let refused = task_get(&later, &task).await.unwrap_err();
    assert_eq!(refusal_code(&refused), "AGENT_DISABLED");
    assert_eq!(
        refused_update(
            &later,
            &task,
            &request,
            json!({"action": "accept", "content": {"decision": "approve_once"}})
        )
        .await,
        "AGENT_DISABLED"
    );
    // Nothing was answered.
    assert_eq!(
        input_request(&task_get(&server, &task).await.unwrap()).0,
        request
    );
}

#[tokio::test]
async fn without_the_extension_on_the_request_nothing_changes() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    // A client that declares nothing, and one that declares the extension
    // at initialize only (as MCP Inspector's CLI does): plain results.
    for human in [Human::default(), Human::default().with_tasks()] {
        let server = env.start_server_as(human).await;
        let args = json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: complete plain"});
        let request = CallToolRequestParams::new("submit_agent_task")
            .with_arguments(args.as_object().unwrap().clone());
        let Ok(CallToolResponse::Complete(result)) = server.client().call_tool_once(request).await
        else {
            panic!("a plain tool result");
        };
        let task = result.structured_content.expect("structured")["task_id"]
            .as_str()
            .unwrap()
            .to_owned();
        wait_status(&server, &task, "succeeded").await;
    }
    // tasks/* need the extension declared.
    let server = env.start_server().await;
    let task = submit(&server, "fake: complete again").await;
    let refused = task_get(&server, &task).await.unwrap_err();
    let ServiceError::McpError(data) = refused else {
        panic!("a JSON-RPC error: {refused:?}");
    };
    assert_eq!(data.code.0, -32021, "missing client capability: {data:?}");
}

#[tokio::test]
async fn forms_for_the_plain_tools_accept_decline_and_cancel() {
    let env = AgentEnv::builder()
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"human-preferred\"")
        .build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_forms()).await;

    for (action, response) in [
        ("accept", "approved: echo hi"),
        ("decline", "denied: echo hi"),
        ("cancel", "denied: echo hi"),
    ] {
        let task = submit(&server, "fake: approval echo hi").await;
        let form = server.human().next_form().await;
        assert!(form.message().contains("echo hi"), "{}", form.message());
        assert!(form.message().contains(&task), "{}", form.message());
        assert_eq!(
            choices(&form.schema()["properties"]["decision"]),
            ["approve_once", "approve_session", "deny", "cancel_task"]
        );
        // While the form is open, get_agent_task reports the request, and
        // the model may not answer it: this client's human does.
        let view = wait_status(&server, &task, "waiting_for_approval").await;
        assert_eq!(view["answering"]["by"], "user", "{view}");
        assert_eq!(view["answering"]["approvals"], "human-preferred");
        let request = view["pending_request_id"].clone();
        assert_eq!(
            server
                .err(
                    "respond_agent_approval",
                    json!({"task_id": task, "request_id": request, "decision": "approve_once"})
                )
                .await,
            "APPROVAL_REQUIRES_HUMAN"
        );
        let dismissed = match action {
            "accept" => {
                form.accept(json!({"decision": "approve_once"}));
                false
            }
            "decline" => {
                form.decline();
                false
            }
            _ => {
                form.dismiss();
                true
            }
        };
        if dismissed {
            // Dismissed: nothing decided; the request stays pending, and
            // the model's next look at the task puts it to the human again.
            let view = get(&server, &task).await;
            assert_eq!(view["status"], "waiting_for_approval", "{view}");
            assert_eq!(view["pending_request_id"], request);
            let again = server.human().next_form().await;
            assert!(again.message().contains(&task), "{}", again.message());
            again.decline();
        }
        let done = wait_status(&server, &task, "succeeded").await;
        assert_eq!(done["final_response"], response, "{action}");
    }

    // A question through a form.
    let task = submit(&server, "fake: question Which colour?").await;
    let form = server.human().next_form().await;
    assert_eq!(choices(&form.schema()["properties"]["q1"]), ["a", "b"]);
    form.accept(json!({"q1": "a"}));
    let done = wait_status(&server, &task, "succeeded").await;
    assert_eq!(
        done["final_response"],
        r#"answers={"answers":[{"question_id":"q1","selected_option_ids":["a"]}]}"#
    );
}

#[tokio::test]
async fn clients_without_forms_are_never_sent_one_and_model_policy_sends_none() {
    let env = AgentEnv::builder()
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"human-preferred\"")
        .workdir(
            "modeled",
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"model\"",
        )
        .build();
    let _bridge = env.start_bridge();

    // human-preferred, a client that cannot reach its human: the model
    // answers, and the client is never sent a form.
    let plain = env.start_server().await;
    let task = submit(&plain, "fake: approval echo hi").await;
    let view = wait_status(&plain, &task, "waiting_for_approval").await;
    assert_eq!(view["answering"]["by"], "model", "{view}");
    plain
        .ok(
            "respond_agent_approval",
            json!({"task_id": task, "request_id": view["pending_request_id"], "decision": "approve_once"}),
        )
        .await;
    wait_status(&plain, &task, "succeeded").await;
    assert_eq!(plain.human().forms_received(), 0);

    // approvals = model: a client that takes forms gets none either.
    let forms = env.start_server_as(Human::default().with_forms()).await;
    let mut args =
        json!({"runtime": "fake", "workdir": "modeled", "prompt": "fake: approval echo hi"});
    let submitted = forms.ok("submit_agent_task", args.take()).await;
    let task = submitted["task_id"].as_str().unwrap().to_owned();
    let view = wait_status(&forms, &task, "waiting_for_approval").await;
    assert_eq!(view["answering"]["by"], "model", "{view}");
    forms
        .ok(
            "respond_agent_approval",
            json!({"task_id": task, "request_id": view["pending_request_id"], "decision": "deny"}),
        )
        .await;
    wait_status(&forms, &task, "succeeded").await;
    assert_eq!(forms.human().forms_received(), 0);
}

#[tokio::test]
async fn policy_human_refuses_the_model_and_the_humans_form_resolves() {
    let env = AgentEnv::builder()
        .demo(
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"human\"",
        )
        .build();
    let _bridge = env.start_bridge();

    let listed = {
        let model = env.start_server().await;
        let workdirs = model.ok("list_workdirs", json!({})).await;
        assert_eq!(workdirs["workdirs"][0]["approvals"], "human", "{workdirs}");
        let runtimes = model.ok("list_agent_runtimes", json!({})).await;
        assert_eq!(
            runtimes["approvals"],
            json!([{"workdir": "demo", "approvals": "human", "answered_by": "user"}])
        );
        model
    };
    let model = listed;
    let task = submit(&model, "fake: approval echo hi").await;
    let view = wait_status(&model, &task, "waiting_for_approval").await;
    let request = view["pending_request_id"].clone();
    assert_eq!(view["answering"]["by"], "user", "{view}");
    let refusal = model
        .call(
            "respond_agent_approval",
            json!({"task_id": task, "request_id": request, "decision": "approve_once"}),
        )
        .await;
    let error = &refusal.structured_content.expect("structured")["error"];
    assert_eq!(error["code"], "APPROVAL_REQUIRES_HUMAN");
    assert!(
        error["message"].as_str().unwrap().contains("Ask your user"),
        "the refusal tells the model to ask its user: {error}"
    );
    let view = get(&model, &task).await;
    assert_eq!(
        view["status"], "waiting_for_approval",
        "the request stays pending"
    );
    assert_eq!(view["pending_request_id"], request);
    assert_eq!(model.human().forms_received(), 0, "no capability, no form");

    // The human's client: looking at the task puts the request to them.
    let human = env.start_server_as(Human::default().with_forms()).await;
    get(&human, &task).await;
    let form = human.human().next_form().await;
    form.accept(json!({"decision": "approve_once"}));
    let done = wait_status(&model, &task, "succeeded").await;
    assert_eq!(done["final_response"], "approved: echo hi");

    // A question is the human's too.
    let task = submit(&model, "fake: question Which colour?").await;
    let view = wait_status(&model, &task, "waiting_for_question").await;
    assert_eq!(
        model
            .err(
                "answer_agent_question",
                json!({"task_id": task, "request_id": view["pending_request_id"],
                       "answers": [{"question_id": "q1", "selected_option_ids": ["a"]}]})
            )
            .await,
        "APPROVAL_REQUIRES_HUMAN"
    );
    assert_eq!(get(&model, &task).await["status"], "waiting_for_question");
    get(&human, &task).await;
    human.human().next_form().await.accept(json!({"q1": "b"}));
    wait_status(&model, &task, "succeeded").await;
}

#[tokio::test]
async fn instructions_tell_the_model_whose_decision_it_is() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let info = server.client().peer_info().expect("server info");
    let instructions = info.instructions.as_deref().expect("instructions");
    assert!(
        instructions.contains("belongs to your user"),
        "{instructions}"
    );
    assert!(instructions.contains("get_agent_task"), "{instructions}");

    let task = submit(&server, "fake: approval echo hi").await;
    let view = wait_status(&server, &task, "waiting_for_approval").await;
    assert_eq!(view["answering"]["approvals"], "model");
    assert_eq!(view["answering"]["by"], "model");
    let said = view["answering"]["instructions"].as_str().unwrap();
    assert!(
        said.contains("your user's decision") && said.contains("Never decide"),
        "{said}"
    );
}

/// An environment whose `demo` runs the `codex` runtime on the mock App
/// Server (serverfs-testkit's `mock-codex`, stdio transport).
fn mock_codex_env() -> AgentEnv {
    let env = AgentEnv::builder()
        .agent(&format!(
            "codex_bin = {}",
            toml_path(&serverfs_testkit::mock_codex::binary())
        ))
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\"]")
        .build();
    let home = env.root().join("ch");
    std::fs::create_dir(&home).expect("codex home");
    env.with_agent_line(&format!("codex_home = {}", toml_path(&home)))
}

/// `submit_agent_task` to `codex` in `demo`, task-augmented: the task id.
/// The Codex adapter lets go of the workdir's writer lease a moment after
/// its task's end, so a submission refused `WORKDIR_BUSY` is retried
/// (as the Bridge's own Codex suite does) until it is accepted.
async fn submit_codex_task(server: &Server, prompt: &str) -> String {
    let args = json!({"runtime": "codex", "workdir": "demo", "prompt": prompt});
    let deadline = Instant::now() + SETTLE;
    loop {
        let request = task_augmented("submit_agent_task", &args);
        match server.client().call_tool_once(request).await {
            Ok(CallToolResponse::Task(created)) => return created.task.task_id,
            Ok(CallToolResponse::Complete(refused))
                if refused
                    .structured_content
                    .as_ref()
                    .is_some_and(|error| error["error"]["code"] == "WORKDIR_BUSY")
                    && Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("submit_agent_task({prompt}) did not answer with a task: {other:?}"),
        }
    }
}

#[tokio::test]
async fn tasks_extension_over_the_codex_runtime() {
    let env = mock_codex_env();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_tasks()).await;

    // Approve: the form shows the command and why; the final response is
    // what the agent said after the approval.
    let task = submit_codex_task(&server, "approval please").await;
    let waiting = wait_task(&server, &task, "input_required").await;
    let (request, form) = input_request(&waiting);
    let message = form["message"].as_str().unwrap();
    assert!(
        message.contains("pytest -q") && message.contains("run tests"),
        "{message}"
    );
    assert_eq!(
        choices(&form["requestedSchema"]["properties"]["decision"]),
        ["approve_once", "approve_session", "deny", "cancel_task"]
    );
    task_update(
        &server,
        &task,
        &request,
        json!({"action": "accept", "content": {"decision": "approve_once"}}),
    )
    .await
    .expect("tasks/update");
    let done = wait_task(&server, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["final_response"],
        "approval:accept"
    );
    assert_eq!(
        refused_update(&server, &task, &request, json!({"action": "decline"})).await,
        "REQUEST_ALREADY_RESOLVED"
    );

    // Deny.
    let task = submit_codex_task(&server, "approval again").await;
    let (request, _) = input_request(&wait_task(&server, &task, "input_required").await);
    task_update(&server, &task, &request, json!({"action": "decline"}))
        .await
        .expect("tasks/update");
    let done = wait_task(&server, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["final_response"],
        "approval:decline"
    );

    // A question with options and free text.
    let task = submit_codex_task(&server, "question").await;
    let (request, form) = input_request(&wait_task(&server, &task, "input_required").await);
    assert!(
        form["message"].as_str().unwrap().contains("Pick one"),
        "{form}"
    );
    let q1 = &form["requestedSchema"]["properties"]["q1"];
    let b = q1["oneOf"]
        .as_array()
        .expect("options")
        .iter()
        .find(|choice| choice["title"] == "B")
        .expect("option B")["const"]
        .clone();
    assert_eq!(
        form["requestedSchema"]["properties"]["q1_text"]["type"],
        "string"
    );
    task_update(
        &server,
        &task,
        &request,
        json!({"action": "accept", "content": {"q1": b, "q1_text": "because"}}),
    )
    .await
    .expect("tasks/update");
    let done = wait_task(&server, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["final_response"],
        "question:B,because"
    );

    // tasks/cancel mid-turn frees the workdir.
    let task = submit_codex_task(&server, "wait").await;
    wait_event(&server, &task, "turn.started").await;
    server
        .client()
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    wait_task(&server, &task, "cancelled").await;
    let next = submit_codex_task(&server, "plain work").await;
    let done = wait_task(&server, &next, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["final_response"],
        "done:plain work"
    );
}

/// The official Python SDK's elicitation callback as the human: accept
/// approves, decline denies, cancel (dismissed) decides nothing and the
/// form comes back.
#[tokio::test]
async fn the_python_sdks_elicitation_callback_answers_the_forms() {
    if !crate::common::python_mcp_sdk() {
        return;
    }
    let env = AgentEnv::builder()
        .demo(
            "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"human\"",
        )
        .build();
    let _bridge = env.start_bridge();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/elicitation_client.py"
    );
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("python3")
            .arg(script)
            .arg(crate::common::binary())
            .arg(env.config())
            .output(),
    )
    .await
    .expect("the python client timed out")
    .expect("python3 runs");
    assert!(
        out.status.success(),
        "python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    // A dismissed form decides nothing: it comes back at the client's next
    // look at the task, and the callback then declines.
    assert_eq!(
        lines,
        [
            json!({"action": "accept", "status": "succeeded", "forms": 1,
                   "final_response": "approved: echo hi", "form_names_the_command": true}),
            json!({"action": "decline", "status": "succeeded", "forms": 1,
                   "final_response": "denied: echo hi", "form_names_the_command": true}),
            json!({"action": "cancel", "status": "succeeded", "forms": 2,
                   "final_response": "denied: echo hi", "form_names_the_command": true}),
        ]
    );
}

/// A form nobody answers: the request stays pending and `get_agent_task`
/// keeps reporting it, until it lapses exactly as without elicitation.
#[tokio::test]
async fn an_unanswered_form_leaves_the_request_pending_until_it_lapses() {
    let env = AgentEnv::builder()
        .agent("interaction_timeout_seconds = 8")
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"human-preferred\"")
        .build();
    let _bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_forms()).await;

    let task = submit(&server, "fake: approval echo hi").await;
    let form = server.human().next_form().await;
    let view = get(&server, &task).await;
    assert_eq!(view["status"], "waiting_for_approval", "{view}");
    assert!(view["pending_request"].is_object(), "{view}");

    let lapsed = wait_status(&server, &task, "interrupted").await;
    assert_eq!(
        lapsed["error_code"], "AGENT_INTERACTION_TIMED_OUT",
        "{lapsed}"
    );
    // The human's answer after the lapse changes nothing.
    form.accept(json!({"decision": "approve_once"}));
    let events = crate::common::agent::all_events(&server, &task).await;
    assert!(
        !crate::common::agent::types(&events).contains(&"approval.resolved".to_owned()),
        "{events:?}"
    );
    assert_eq!(get(&server, &task).await["status"], "interrupted");
    assert_eq!(server.human().forms_received(), 1, "one form per request");
}
