//! The mock model endpoint, driven with raw HTTP as an agent CLI would.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serverfs_testkit::{MockModel, RecordedRequest, Reply, Rule, Script};

use crate::common::{HttpResponse, SseEvent, get, parse_sse, post, send_raw};

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn call(id: &str) -> Value {
    json!({"type": "function_call", "call_id": id, "name": "exec_command", "arguments": "{}"})
}

fn output(id: &str) -> Value {
    json!({"type": "function_call_output", "call_id": id, "output": "ok"})
}

fn responses(input: Vec<Value>) -> Value {
    json!({"model": "mock-model", "stream": true, "input": input, "tools": []})
}

fn messages(messages: Value, stream: bool) -> Value {
    json!({"model": "claude-test", "max_tokens": 64000, "stream": stream, "messages": messages})
}

/// The events as (name, JSON data) pairs, for whole-value asserts.
fn pairs(events: &[SseEvent]) -> Vec<(String, Value)> {
    events.iter().map(|e| (e.event.clone(), e.json())).collect()
}

fn names(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

fn make_file_script() -> Script {
    Script::new().on(
        "make-file",
        Reply::tool_call(
            "exec_command",
            json!({"cmd": "echo hi > created_by_mock.txt"}),
        ),
        Reply::text("DONE"),
    )
}

#[test]
fn responses_text_reply_is_the_measured_event_sequence() {
    let model = MockModel::start(Script::new()).unwrap();
    let response = post(
        model.addr(),
        "/v1/responses",
        &responses(vec![user("hello")]),
    );
    // `post` returning at all means the server closed the connection.
    assert_eq!(
        pairs(&response.events()),
        vec![
            (
                "response.created".to_owned(),
                json!({"type": "response.created", "response": {"id": "resp_1"}})
            ),
            (
                "response.output_item.added".to_owned(),
                json!({"type": "response.output_item.added", "item": {"type": "message",
                    "role": "assistant", "id": "msg_1", "content": []}})
            ),
            (
                "response.output_text.delta".to_owned(),
                json!({"type": "response.output_text.delta", "delta": "MOCK_DONE",
                    "item_id": "msg_1", "output_index": 0, "content_index": 0})
            ),
            (
                "response.output_item.done".to_owned(),
                json!({"type": "response.output_item.done", "item": {"type": "message",
                    "role": "assistant", "id": "msg_1",
                    "content": [{"type": "output_text", "text": "MOCK_DONE"}]}})
            ),
            (
                "response.completed".to_owned(),
                json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
                    "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
                    "output_tokens_details": null, "total_tokens": 2}}})
            ),
        ]
    );
}

#[test]
fn responses_tool_call_first_then_text_after_its_output() {
    let model = MockModel::start(make_file_script()).unwrap();
    let first = post(
        model.addr(),
        "/v1/responses",
        &responses(vec![
            user("<environment_context/>"),
            user("please make-file"),
        ]),
    )
    .events();
    assert_eq!(
        pairs(&first),
        vec![
            (
                "response.created".to_owned(),
                json!({"type": "response.created", "response": {"id": "resp_1"}})
            ),
            (
                "response.output_item.done".to_owned(),
                json!({"type": "response.output_item.done", "item": {"type": "function_call",
                    "call_id": "call_1", "name": "exec_command",
                    "arguments": "{\"cmd\":\"echo hi > created_by_mock.txt\"}"}})
            ),
            (
                "response.completed".to_owned(),
                json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
                    "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
                    "output_tokens_details": null, "total_tokens": 2}}})
            ),
        ]
    );

    let second = post(
        model.addr(),
        "/v1/responses",
        &responses(vec![
            user("please make-file"),
            call("call_1"),
            output("call_1"),
        ]),
    )
    .events();
    assert_eq!(
        names(&second),
        [
            "response.created",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(second[2].json()["delta"], "DONE");
    assert_eq!(second[0].json()["response"]["id"], "resp_2");

    // A new user message after the tool result starts a new exchange.
    let third = post(
        model.addr(),
        "/v1/responses",
        &responses(vec![
            user("please make-file"),
            call("call_1"),
            output("call_1"),
            user("again make-file"),
        ]),
    )
    .events();
    assert_eq!(third[1].json()["item"]["call_id"], "call_3");
}

fn chat(messages: Value, stream: bool) -> Value {
    json!({"model": "mock-model", "stream": stream, "messages": messages, "tools": []})
}

/// Chat Completions streams are `data:` lines only, ended by `[DONE]`:
/// the data of every event, the terminator checked and dropped.
fn chat_chunks(response: &HttpResponse) -> Vec<Value> {
    let events = response.events();
    assert!(events.iter().all(|e| e.event == "message"), "{events:?}");
    let (last, chunks) = events.split_last().expect("a chunk");
    assert_eq!(last.data, "[DONE]");
    chunks.iter().map(SseEvent::json).collect()
}

#[test]
fn chat_completions_tool_call_then_text_after_the_tool_result() {
    let model = MockModel::start(make_file_script()).unwrap();
    let first = post(
        model.addr(),
        "/v1/chat/completions",
        &chat(
            json!([{"role": "system", "content": "be brief"},
                     {"role": "user", "content": [{"type": "text", "text": "please make-file"}]}]),
            true,
        ),
    );
    let chunks = chat_chunks(&first);
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "exec_command", "arguments": ""}}]})
    );
    assert_eq!(
        chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
        "{\"cmd\":\"echo hi > created_by_mock.txt\"}"
    );
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chunks[3]["choices"], json!([]), "the usage chunk");
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == "chatcmpl_1")
    );

    let second = post(
        model.addr(),
        "/v1/chat/completions",
        &chat(
            json!([{"role": "user", "content": "please make-file"},
                     {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "exec_command", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]),
            true,
        ),
    );
    let chunks = chat_chunks(&second);
    assert_eq!(chunks[1]["choices"][0]["delta"], json!({"content": "DONE"}));
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");

    // Not streamed: one completion; a failure is an HTTP error.
    let plain = post(
        model.addr(),
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "hi"}]), false),
    );
    assert_eq!(plain.status, 200);
    assert_eq!(
        plain.json()["choices"][0]["message"],
        json!({"role": "assistant", "content": "MOCK_DONE"})
    );
    let failing =
        MockModel::start(Script::new().fallback(Reply::fail("rate_limit_exceeded", "slow down")))
            .unwrap();
    let refused = post(
        failing.addr(),
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "x"}]), true),
    );
    assert_eq!(refused.status, 429);
    assert_eq!(refused.json()["error"]["message"], "slow down");
}

#[test]
fn multi_step_rule_walks_its_steps_by_tool_result_count() {
    let script = Script::new().rule(Rule::steps(
        "steps",
        vec![
            Reply::tool_call("exec_command", json!({"cmd": "ls"})),
            Reply::tool_call("exec_command", json!({"cmd": "pwd"})),
            Reply::text("STEPS_DONE"),
        ],
    ));
    let model = MockModel::start(script).unwrap();
    let mut input = vec![user("run steps")];
    let mut seen = Vec::new();
    for i in 0..4 {
        let events = post(model.addr(), "/v1/responses", &responses(input.clone())).events();
        let item = events
            .iter()
            .map(SseEvent::json)
            .find(|data| data["type"] == "response.output_item.done")
            .unwrap()["item"]
            .clone();
        seen.push(match item["type"].as_str().unwrap() {
            "function_call" => item["arguments"].as_str().unwrap().to_owned(),
            _ => item["content"][0]["text"].as_str().unwrap().to_owned(),
        });
        let id = format!("call_{}", i + 1);
        input.push(call(&id));
        input.push(output(&id));
    }
    assert_eq!(
        seen,
        [
            r#"{"cmd":"ls"}"#,
            r#"{"cmd":"pwd"}"#,
            "STEPS_DONE",
            // Past the last step: the fallback, so an agent loop ends.
            "MOCK_DONE",
        ]
    );
}

#[test]
fn responses_failure_is_response_failed() {
    let model =
        MockModel::start(Script::new().fallback(Reply::fail("rate_limit_exceeded", "slow down")))
            .unwrap();
    let events = post(model.addr(), "/v1/responses", &responses(vec![user("x")])).events();
    assert_eq!(
        pairs(&events),
        vec![
            (
                "response.created".to_owned(),
                json!({"type": "response.created", "response": {"id": "resp_1"}})
            ),
            (
                "response.failed".to_owned(),
                json!({"type": "response.failed", "response": {"id": "resp_1",
                    "error": {"code": "rate_limit_exceeded", "message": "slow down"}}})
            ),
        ]
    );
}

#[test]
fn delayed_reply_waits_but_the_request_is_recorded_at_once() {
    // Long enough that a loaded machine still records the request well
    // before the reply can have been sent.
    let delay = Duration::from_secs(3);
    let model =
        MockModel::start(Script::new().fallback(Reply::text("SLOW").delayed(delay))).unwrap();
    let addr = model.addr();
    let started = Instant::now();
    let client =
        thread::spawn(move || post(addr, "/v1/responses", &responses(vec![user("x")])).events());
    let seen = model.wait_for_requests(1, Duration::from_secs(5));
    assert_eq!(seen.len(), 1);
    assert!(
        !client.is_finished(),
        "the request is visible before its reply"
    );
    let events = client.join().unwrap();
    assert!(started.elapsed() >= delay, "{:?}", started.elapsed());
    assert_eq!(events[2].json()["delta"], "SLOW");
}

#[test]
fn anthropic_text_stream() {
    let model = MockModel::start(Script::new()).unwrap();
    let body = messages(json!([{"role": "user", "content": "hello"}]), true);
    let events = post(model.addr(), "/v1/messages?beta=true", &body).events();
    assert_eq!(
        pairs(&events),
        vec![
            (
                "message_start".to_owned(),
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                    "role": "assistant", "model": "claude-test", "content": [],
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}})
            ),
            (
                "content_block_start".to_owned(),
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})
            ),
            (
                "content_block_delta".to_owned(),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": "MOCK_DONE"}})
            ),
            (
                "content_block_stop".to_owned(),
                json!({"type": "content_block_stop", "index": 0})
            ),
            (
                "message_delta".to_owned(),
                json!({"type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                    "usage": {"output_tokens": 1}})
            ),
            ("message_stop".to_owned(), json!({"type": "message_stop"})),
        ]
    );
    let recorded = &model.requests()[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.query.as_deref(), Some("beta=true"));
}

#[test]
fn anthropic_tool_use_then_text_after_tool_result() {
    let script = Script::new().on(
        "make-file",
        Reply::tool_call("Bash", json!({"command": "echo hi > f.txt"})),
        Reply::text("DONE"),
    );
    let model = MockModel::start(script).unwrap();
    let prompt = json!({"role": "user", "content": [{"type": "text", "text": "make-file please"}]});
    let first = post(
        model.addr(),
        "/v1/messages?beta=true",
        &messages(json!([prompt]), true),
    )
    .events();
    assert_eq!(
        names(&first),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        first[1].json()["content_block"],
        json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}})
    );
    let delta = first[2].json()["delta"].clone();
    assert_eq!(delta["type"], "input_json_delta");
    let args: Value = serde_json::from_str(delta["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"command": "echo hi > f.txt"}));
    assert_eq!(first[4].json()["delta"]["stop_reason"], "tool_use");

    let history = json!([
        prompt,
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": args}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
    ]);
    let second = post(
        model.addr(),
        "/v1/messages?beta=true",
        &messages(history, true),
    )
    .events();
    assert_eq!(
        second[2].json()["delta"],
        json!({"type": "text_delta", "text": "DONE"})
    );
    assert_eq!(second[4].json()["delta"]["stop_reason"], "end_turn");
    assert_eq!(second[0].json()["message"]["id"], "msg_2");
}

#[test]
fn an_mcp_tool_call_is_named_as_each_client_names_it() {
    let script = Script::new().on(
        "read-it",
        Reply::mcp_tool_call("serverfs", "read_text_file", json!({"path": "a"})),
        Reply::text("DONE"),
    );
    let model = MockModel::start(script).unwrap();
    // Codex: the server's namespace beside the tool's own name.
    let codex = post(
        model.addr(),
        "/v1/responses",
        &responses(vec![user("read-it")]),
    )
    .events();
    assert_eq!(
        codex[1].json()["item"],
        json!({"type": "function_call", "call_id": "call_1", "name": "read_text_file",
            "namespace": "mcp__serverfs", "arguments": "{\"path\":\"a\"}"})
    );
    // Claude Code: one name, `mcp__<server>__<tool>`.
    let prompt = json!({"role": "user", "content": "read-it"});
    let claude = post(
        model.addr(),
        "/v1/messages",
        &messages(json!([prompt]), true),
    )
    .events();
    assert_eq!(
        claude[1].json()["content_block"]["name"],
        "mcp__serverfs__read_text_file"
    );
    let reply = post(
        model.addr(),
        "/v1/messages",
        &messages(json!([prompt]), false),
    )
    .json();
    assert_eq!(reply["content"][0]["name"], "mcp__serverfs__read_text_file");
}

#[test]
fn anthropic_failure_is_an_error_event_or_status() {
    let model =
        MockModel::start(Script::new().fallback(Reply::fail("overloaded_error", "busy"))).unwrap();
    let body = |stream| messages(json!([{"role": "user", "content": "x"}]), stream);
    let events = post(model.addr(), "/v1/messages", &body(true)).events();
    assert_eq!(
        pairs(&events),
        vec![(
            "error".to_owned(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        )]
    );
    let response = post(model.addr(), "/v1/messages", &body(false));
    assert_eq!(response.status, 529);
    assert_eq!(
        response.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    );
}

#[test]
fn anthropic_side_endpoints() {
    let model = MockModel::start(make_file_script()).unwrap();
    let body = messages(json!([{"role": "user", "content": "count me"}]), false);
    let count = post(model.addr(), "/v1/messages/count_tokens", &body);
    assert_eq!(count.status, 200);
    let tokens = count.json()["input_tokens"].as_u64().unwrap();
    assert!(tokens >= 1);

    let models = get(model.addr(), "/v1/models");
    assert_eq!(models.status, 200);
    assert_eq!(models.json(), json!({"data": [], "has_more": false}));

    let reply = post(model.addr(), "/v1/messages", &body);
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "MOCK_DONE"}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}})
    );
    let body = messages(json!([{"role": "user", "content": "make-file"}]), false);
    let reply = post(model.addr(), "/v1/messages", &body).json();
    assert_eq!(
        reply["content"],
        json!([{"type": "tool_use", "id": "toolu_2", "name": "exec_command",
            "input": {"cmd": "echo hi > created_by_mock.txt"}}])
    );
    assert_eq!(reply["stop_reason"], "tool_use");
}

#[test]
fn unknown_routes_are_404_with_a_json_error_and_recorded() {
    let model = MockModel::start(Script::new()).unwrap();
    let response = post(model.addr(), "/v1/completions", &json!({"x": 1}));
    assert_eq!(response.status, 404);
    assert_eq!(response.header("connection"), Some("close"));
    assert_eq!(
        response.json(),
        json!({"type": "error", "error": {"type": "not_found_error", "code": "not_found",
            "message": "mock model: no route for POST /v1/completions"}})
    );
    // The right path with the wrong method is unknown too.
    assert_eq!(get(model.addr(), "/v1/responses").status, 404);
    let paths: Vec<_> = model
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path, r.body))
        .collect();
    assert_eq!(
        paths,
        [
            (
                "POST".to_owned(),
                "/v1/completions".to_owned(),
                json!({"x": 1})
            ),
            ("GET".to_owned(), "/v1/responses".to_owned(), Value::Null),
        ]
    );
}

#[test]
fn bad_bodies_are_400_and_still_recorded() {
    let model = MockModel::start(Script::new()).unwrap();
    let raw = b"POST /v1/responses HTTP/1.1\r\ncontent-length: 5\r\n\r\n{nope";
    let response = send_raw(model.addr(), raw);
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    assert_eq!(model.requests()[0].body, json!("{nope"));

    let response = send_raw(model.addr(), b"NOT HTTP\r\n\r\n");
    assert_eq!(response.status, 400);
    assert_eq!(
        model.requests().len(),
        1,
        "an unparsable head is not a request"
    );
}

#[test]
fn chunked_request_bodies_are_decoded() {
    let model = MockModel::start(make_file_script()).unwrap();
    let body = responses(vec![user("make-file")]).to_string();
    let (a, rest) = body.split_at(10);
    let (b, c) = rest.split_at(rest.len() / 2);
    let raw = format!(
        "POST /v1/responses HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n\
         {:x}\r\n{a}\r\n{:X};name=value\r\n{b}\r\n{:x}\r\n{c}\r\n0\r\n\r\n",
        a.len(),
        b.len(),
        c.len()
    );
    let events = send_raw(model.addr(), raw.as_bytes()).events();
    // The trigger was only readable from the decoded body.
    assert_eq!(events[1].json()["item"]["type"], "function_call");
    let recorded = &model.requests()[0];
    assert_eq!(recorded.body, responses(vec![user("make-file")]));
    assert_eq!(recorded.header("Transfer-Encoding"), Some("chunked"));
}

#[test]
fn expect_continue_is_honoured() {
    let model = MockModel::start(Script::new()).unwrap();
    let body = responses(vec![user("x")]).to_string();
    let raw = format!(
        "POST /v1/responses HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let response = send_raw(model.addr(), raw.as_bytes());
    assert_eq!(names(&response.events()).len(), 5);
}

#[test]
fn concurrent_requests_are_served_in_parallel() {
    // Every request is recorded while every reply is still held back: a
    // server that took one connection at a time would record the second
    // only after the first reply, seconds later.
    let delay = Duration::from_secs(3);
    let model = MockModel::start(Script::new().fallback(Reply::text("P").delayed(delay))).unwrap();
    let addr = model.addr();
    let clients: Vec<_> = (0..8)
        .map(|i| {
            thread::spawn(move || {
                post(
                    addr,
                    "/v1/responses",
                    &responses(vec![user(&format!("client {i}"))]),
                )
                .events()
            })
        })
        .collect();
    assert_eq!(model.wait_for_requests(8, delay).len(), 8);
    assert!(
        clients.iter().all(|client| !client.is_finished()),
        "a reply came before every request was in"
    );
    let mut ids: Vec<String> = clients
        .into_iter()
        .map(|c| {
            c.join().unwrap()[0].json()["response"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 8, "every response has its own id");
    assert_eq!(model.requests().len(), 8);
}

#[test]
fn requests_are_recorded_in_order_with_headers_and_bodies() {
    let model = MockModel::start(Script::new()).unwrap();
    let first = responses(vec![user("one")]);
    let second = messages(json!([{"role": "user", "content": "two"}]), true);
    post(model.addr(), "/v1/responses", &first);
    post(model.addr(), "/v1/messages", &second);
    let requests = model.requests();
    let addr = model.addr().to_string();
    let expected = |path: &str, body: &Value| RecordedRequest {
        method: "POST".to_owned(),
        path: path.to_owned(),
        query: None,
        headers: vec![
            ("host".to_owned(), addr.clone()),
            ("content-type".to_owned(), "application/json".to_owned()),
            ("authorization".to_owned(), "Bearer dummy".to_owned()),
            (
                "content-length".to_owned(),
                body.to_string().len().to_string(),
            ),
        ],
        body: body.clone(),
    };
    assert_eq!(
        requests,
        [
            expected("/v1/responses", &first),
            expected("/v1/messages", &second)
        ]
    );
    assert_eq!(requests[0].header("Authorization"), Some("Bearer dummy"));
}

#[test]
fn base_urls_point_at_the_server() {
    let model = MockModel::start(Script::new()).unwrap();
    let port = model.addr().port();
    assert_eq!(model.base_url(), format!("http://127.0.0.1:{port}/v1"));
    assert_eq!(model.origin(), format!("http://127.0.0.1:{port}"));
}

#[test]
fn drop_stops_the_server_and_cuts_delayed_replies_short() {
    let model = MockModel::start(
        Script::new().fallback(Reply::text("never").delayed(Duration::from_secs(60))),
    )
    .unwrap();
    let addr = model.addr();
    let body = responses(vec![user("x")]).to_string();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        conn,
        "POST /v1/responses HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    model.wait_for_requests(1, Duration::from_secs(5));
    let started = Instant::now();
    drop(model);
    // The abandoned reply closes without a byte, long before its 60 s.
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(reply, b"");
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens any more"
    );
}

/// Our streams, read by a spec-conforming SSE parser: every event arrives
/// (none pending at close), each block is exactly one `event:` and one
/// `data:` line, the data is JSON whose `type` names the event. Text with
/// newlines and non-ASCII checks that data stays on one line.
#[test]
fn streams_are_valid_sse_for_a_spec_parser() {
    let tricky = "line one\nline two\r\n: not a comment — ünïcødé\n\ndata: x";
    let replies = [
        Reply::text(tricky),
        Reply::tool_call("exec_command", json!({"cmd": tricky})),
        Reply::fail("server_error", tricky),
    ];
    for reply in replies {
        let model = MockModel::start(Script::new().fallback(reply.clone())).unwrap();
        let streams = [
            post(model.addr(), "/v1/responses", &responses(vec![user("x")])),
            post(
                model.addr(),
                "/v1/messages",
                &messages(json!([{"role": "user", "content": "x"}]), true),
            ),
        ];
        for response in streams {
            let events = response.events();
            let blocks: Vec<&str> = response.body.split("\n\n").collect();
            assert_eq!(
                blocks.last(),
                Some(&""),
                "{reply:?}: the stream ends with a blank line"
            );
            assert_eq!(
                blocks.len() - 1,
                events.len(),
                "{reply:?}: one event a block"
            );
            for (block, event) in blocks.iter().zip(&events) {
                let lines: Vec<&str> = block.split('\n').collect();
                assert_eq!(
                    lines,
                    [
                        format!("event: {}", event.event),
                        format!("data: {}", event.data)
                    ],
                    "{reply:?}"
                );
                assert_eq!(event.json()["type"], event.event.as_str(), "{reply:?}");
            }
            let text = events.iter().find_map(|e| payload_text(&e.json()));
            assert_eq!(
                text.as_deref(),
                Some(tricky),
                "{reply:?}: the payload survives the stream"
            );
        }
    }
}

/// The text a reply carried, wherever its dialect puts it: a text delta,
/// an error message, or the `cmd` inside tool-call arguments.
fn payload_text(data: &Value) -> Option<String> {
    let direct = [
        &data["delta"],                        // Responses output_text.delta
        &data["delta"]["text"],                // Anthropic text_delta
        &data["error"]["message"],             // Anthropic error
        &data["response"]["error"]["message"], // Responses failed
    ];
    if let Some(text) = direct.iter().find_map(|v| v.as_str()) {
        return Some(text.to_owned());
    }
    let args = data["item"]["arguments"]
        .as_str()
        .or(data["delta"]["partial_json"].as_str())?;
    let args: Value = serde_json::from_str(args).ok()?;
    args["cmd"].as_str().map(str::to_owned)
}

/// The parser itself must reject what a client would drop, or the test
/// above proves nothing.
#[test]
fn the_sse_parser_catches_unterminated_and_split_events() {
    let (events, pending) = parse_sse("event: a\ndata: {}\n\nevent: b\ndata: {}\n");
    assert_eq!(events.len(), 1);
    assert!(pending);
    let (events, pending) = parse_sse("event: a\ndata: {\"x\":\ndata: 1}\n\n");
    assert!(!pending);
    assert_eq!(events[0].data, "{\"x\":\n1}");
    let (events, _) = parse_sse(": comment\r\nevent:a\r\ndata:{}\r\n\r\n");
    assert_eq!(
        events,
        [SseEvent {
            event: "a".to_owned(),
            data: "{}".to_owned()
        }]
    );
}
