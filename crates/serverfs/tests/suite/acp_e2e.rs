//! Real ACP agents end to end, through the MCP tools: `serverfs` +
//! `serverfs-agent-bridge` + the agent as an ACP profile + a scripted model
//! on 127.0.0.1 (`serverfs_testkit::MockModel`). Offline: each agent's
//! model provider points at the mock, which decides every reply.
//!
//! | agent | package (pinned by the script) | model dialect | profile |
//! |---|---|---|---|
//! | OpenCode | `opencode-ai`, `opencode acp` | OpenAI Chat Completions (`@ai-sdk/openai-compatible`) | `acp-opencode`, "always" session-scoped |
//! | codex-acp | `@zed-industries/codex-acp` | OpenAI Responses (Codex's provider config) | `acp-codex-acp`, "always" not offered (an exec-policy rule) |
//! | claude-agent-acp | `@agentclientprotocol/claude-agent-acp` | Anthropic Messages | `acp-claude-acp`, "always" not offered (a settings rule) |
//!
//! These tests need the real agents and run only when
//! `SERVERFS_E2E_OPENCODE`, `SERVERFS_E2E_CODEX_ACP` and
//! `SERVERFS_E2E_CLAUDE_ACP` name them; `scripts/e2e-acp.sh` installs the
//! pinned packages from the npm registry into `target/` and runs them (CI
//! runs the script and fails if an install fails). Without a variable the
//! tests of that agent print why they did nothing.
//!
//! Each agent runs with a throw-away `HOME` (the Bridge's, the rig's
//! directory) holding only the configuration below, in native mode: its
//! own permission rules decide what it asks, and every request reaches the
//! client as an approval with the agent's exact options.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::{MockModel, Reply, Rule, Script};

use crate::common::bridge::AgentEnv;
use crate::common::e2e::{AgentRig, agent_cli, toml_path};

/// The command every scripted tool call runs (it creates
/// `AgentRig::created_file`).
const COMMAND: &str = "echo hi > created_by_mock.txt";

/// One real agent under test.
#[derive(Debug, Clone, Copy)]
enum Agent {
    OpenCode,
    CodexAcp,
    ClaudeAgentAcp,
}

/// Runs each case once per agent.
macro_rules! each_agent {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[tokio::test]
            async fn opencode() {
                super::$case(super::Agent::OpenCode).await;
            }

            #[tokio::test]
            async fn codex_acp() {
                super::$case(super::Agent::CodexAcp).await;
            }

            #[tokio::test]
            async fn claude_agent_acp() {
                super::$case(super::Agent::ClaudeAgentAcp).await;
            }
        }
    )*};
}

each_agent!(
    allow_once_runs_the_command_and_the_task_succeeds,
    reject_leaves_no_file,
    cancel_mid_turn_leaves_no_agent_process_and_frees_the_workdir,
    a_continuation_resumes_the_same_session,
    a_model_override_applies_to_its_own_task_only,
);

impl Agent {
    /// The variable naming the agent's executable.
    fn variable(self) -> &'static str {
        match self {
            Agent::OpenCode => "SERVERFS_E2E_OPENCODE",
            Agent::CodexAcp => "SERVERFS_E2E_CODEX_ACP",
            Agent::ClaudeAgentAcp => "SERVERFS_E2E_CLAUDE_ACP",
        }
    }

    fn runtime(self) -> &'static str {
        match self {
            Agent::OpenCode => "acp-opencode",
            Agent::CodexAcp => "acp-codex-acp",
            Agent::ClaudeAgentAcp => "acp-claude-acp",
        }
    }

    /// What names the agent's processes in their command line (for
    /// claude-agent-acp also the Claude Code child it starts).
    fn process_name(self) -> &'static str {
        match self {
            Agent::OpenCode => "opencode",
            Agent::CodexAcp => "codex-acp",
            Agent::ClaudeAgentAcp => "claude",
        }
    }

    /// The model's request path in the agent's dialect.
    fn model_path(self) -> &'static str {
        match self {
            Agent::OpenCode => "/v1/chat/completions",
            Agent::CodexAcp => "/v1/responses",
            Agent::ClaudeAgentAcp => "/v1/messages",
        }
    }

    /// The tool call that runs [`COMMAND`], as the agent offers its shell.
    fn shell_call(self) -> Reply {
        match self {
            Agent::OpenCode => Reply::tool_call(
                "bash",
                json!({ "command": COMMAND, "description": "create the requested file" }),
            ),
            Agent::CodexAcp => Reply::tool_call("exec_command", json!({ "cmd": COMMAND })),
            Agent::ClaudeAgentAcp => Reply::tool_call(
                "Bash",
                json!({ "command": COMMAND, "description": "create the requested file" }),
            ),
        }
    }

    /// A model value of the agent's model selector other than its default.
    fn other_model(self) -> &'static str {
        match self {
            Agent::OpenCode => "mock/mock-model-b",
            Agent::CodexAcp => "gpt-5.4",
            Agent::ClaudeAgentAcp => "sonnet",
        }
    }

    /// Whether a model request body was made with [`other_model`].
    fn uses_other_model(self, body: &Value) -> bool {
        let model = body["model"].as_str().unwrap_or_default();
        match self {
            Agent::OpenCode => model == "mock-model-b",
            Agent::CodexAcp => model == "gpt-5.4",
            Agent::ClaudeAgentAcp => model.contains("sonnet"),
        }
    }

    /// The scripted model: `make-file` runs [`COMMAND`], then answers
    /// `FILE_DONE`; `slow` answers after a long pause (so a turn can be
    /// cancelled mid-way); anything else answers at once.
    fn script(self) -> Script {
        Script::new()
            .rule(Rule::steps(
                "make-file",
                vec![self.shell_call(), Reply::text("FILE_DONE")],
            ))
            .on(
                "slow",
                Reply::text("SLOW_DONE").delayed(Duration::from_secs(120)),
                Reply::text("SLOW_DONE"),
            )
            .fallback(Reply::text("MOCK_DONE"))
    }

    /// The agent's own configuration in the Bridge's `HOME` (`root`),
    /// pointing its model provider at `model`.
    fn configure(self, root: &Path, work: &Path, model: &MockModel) {
        match self {
            Agent::OpenCode => {
                // Bash and edits ask (OpenCode's default is to allow).
                let config = json!({
                    "$schema": "https://opencode.ai/config.json",
                    "provider": { "mock": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Mock",
                        "options": { "baseURL": model.base_url(), "apiKey": "dummy" },
                        "models": {
                            "mock-model": { "name": "Mock Model", "tool_call": true },
                            "mock-model-b": { "name": "Mock Model B", "tool_call": true },
                        },
                    }},
                    "model": "mock/mock-model",
                    "autoupdate": false,
                    "share": "disabled",
                    "permission": { "bash": "ask", "edit": "ask" },
                });
                let dir = root.join(".config").join("opencode");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
            }
            Agent::CodexAcp => {
                // `untrusted`: every command that is not known safe asks.
                // Codex's own sandbox is off: whether it can set one up
                // depends on the machine's kernel (user namespaces,
                // landlock), and a sandboxed command that fails there
                // would leave no file after an approval that worked.
                let dir = root.join(".codex");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(
                    dir.join("config.toml"),
                    format!(
                        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\
                         approval_policy = \"untrusted\"\nsandbox_mode = \"danger-full-access\"\n\n\
                         [model_providers.mock]\nname = \"Mock\"\nbase_url = \"{}\"\n\
                         wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
                         request_max_retries = 0\nstream_max_retries = 0\n\n\
                         [projects.{}]\ntrust_level = \"trusted\"\n",
                        model.base_url(),
                        toml_path(work),
                    ),
                )
                .unwrap();
            }
            // Everything through the environment (the profile below).
            Agent::ClaudeAgentAcp => {}
        }
    }

    /// The profile table, and the Bridge's variables it passes through.
    fn profile(self, command: &Path, model: &MockModel) -> (String, Vec<(&'static str, String)>) {
        let command = toml_path(command);
        match self {
            Agent::OpenCode => (
                format!(
                    "{{ id = \"opencode\", command = {command}, args = [\"acp\"], \
                     env = {{ OPENCODE_DISABLE_AUTOUPDATE = \"true\", \
                     OPENCODE_DISABLE_MODELS_FETCH = \"true\" }}, \
                     session_scoped_allow_always = true }}"
                ),
                Vec::new(),
            ),
            Agent::CodexAcp => (
                format!(
                    "{{ id = \"codex-acp\", command = {command}, env_passthrough = [\"MOCK_API_KEY\"] }}"
                ),
                vec![("MOCK_API_KEY", "dummy".to_owned())],
            ),
            Agent::ClaudeAgentAcp => {
                // As root, Claude Code refuses the permission mode its ACP
                // adapter passes unless it is told it runs sandboxed
                // (spec-adapters.md §6.6).
                let sandbox = if rustix::process::geteuid().is_root() {
                    ", IS_SANDBOX = \"1\""
                } else {
                    ""
                };
                (
                    format!(
                        "{{ id = \"claude-acp\", command = {command}, \
                         env_passthrough = [\"ANTHROPIC_BASE_URL\", \"ANTHROPIC_API_KEY\"], \
                         env = {{ CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", \
                         DISABLE_AUTOUPDATER = \"1\", DISABLE_TELEMETRY = \"1\"{sandbox} }} }}"
                    ),
                    vec![
                        ("ANTHROPIC_BASE_URL", model.origin()),
                        ("ANTHROPIC_API_KEY", "sk-ant-e2e-not-a-real-key".to_owned()),
                    ],
                )
            }
        }
    }

    /// The agent under test, or `None` (with a note) when not configured.
    fn cli(self) -> Option<PathBuf> {
        agent_cli(self.variable(), "scripts/e2e-acp.sh")
    }

    /// A rig running the agent as its profile on `demo`.
    async fn rig(self, command: &Path) -> AgentRig {
        let model = MockModel::start(self.script()).unwrap();
        let (profile, passed) = self.profile(command, &model);
        let mut env = AgentEnv::builder()
            .agent(&format!("acp_profiles = [{profile}]"))
            .demo(&format!(
                "agent_mode = \"workspace-write\"\nagent_runtimes = [\"{}\"]",
                self.runtime()
            ));
        for (name, value) in &passed {
            env = env.bridge_env(name, value);
        }
        let env = env.build();
        self.configure(env.root(), &env.work(), &model);
        AgentRig::start(env, model, self.runtime(), self.process_name()).await
    }

    /// The bodies of the model requests so far, in order.
    fn model_requests(self, model: &MockModel) -> Vec<Value> {
        model
            .requests()
            .into_iter()
            .filter(|request| request.path == self.model_path())
            .map(|request| request.body)
            .collect()
    }
}

/// The option of `kind` the pending approval of `view` offers.
fn option_of<'a>(view: &'a Value, kind: &str) -> &'a str {
    view["pending_request"]["payload"]["options"]
        .as_array()
        .and_then(|options| options.iter().find(|option| option["kind"] == kind))
        .and_then(|option| option["option_id"].as_str())
        .unwrap_or_else(|| panic!("no {kind} option offered: {view}"))
}

/// The runtime's `list_agent_runtimes` entry.
async fn listed(rig: &AgentRig) -> Value {
    let runtimes = rig.server.ok("list_agent_runtimes", json!({})).await;
    runtimes["runtimes"]
        .as_array()
        .and_then(|list| list.iter().find(|r| r["name"] == rig.runtime))
        .cloned()
        .unwrap_or_else(|| panic!("{} is not listed: {runtimes}", rig.runtime))
}

async fn allow_once_runs_the_command_and_the_task_succeeds(agent: Agent) {
    let Some(command) = agent.cli() else { return };
    let rig = agent.rig(&command).await;
    let before = listed(&rig).await;
    assert_eq!(before["available"], true, "{before}");
    assert_eq!(before["capability_state"], "unmeasured", "{before}");
    assert!(agent.model_requests(&rig.model).is_empty());

    let task = rig
        .submit(json!({ "prompt": "please make-file now" }))
        .await;
    let waiting = rig.approval(&task).await;
    let payload = &waiting["pending_request"]["payload"];
    assert_eq!(payload["category"], "command", "{payload}");
    assert!(
        payload["command_display"]
            .as_str()
            .is_some_and(|c| c.contains("created_by_mock.txt")),
        "{payload}"
    );
    let kinds: Vec<&str> = payload["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|option| option["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
        "{payload}"
    );
    assert!(!kinds.contains(&"reject_always"), "{payload}");
    // No host path reaches the client.
    let text = waiting.to_string();
    assert!(!text.contains(rig.env.root().to_str().unwrap()), "{text}");
    assert!(!rig.created_file().exists());

    let once = option_of(&waiting, "allow_once").to_owned();
    rig.respond_option(&task, &waiting, "approve_once", Some(&once))
        .await;
    let done = rig.finished(&task).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["final_response"], "FILE_DONE", "{done}");
    let created = std::fs::read_to_string(rig.created_file()).unwrap_or_else(|error| {
        // What the command printed, as the agent told its model.
        let requests = agent.model_requests(&rig.model);
        panic!(
            "{}: {error} after the approved command; the model's last request: {}",
            rig.created_file().display(),
            requests.last().map(Value::to_string).unwrap_or_default()
        )
    });
    assert_eq!(created.trim(), "hi");
    rig.wait_writable("a finished task").await;
    rig.wait_no_agent_process("its task").await;

    let after = listed(&rig).await;
    assert_eq!(after["capability_state"], "measured", "{after}");
    assert_eq!(after["persistent_session"], true, "{after}");
    assert!(
        after["version"].as_str().is_some_and(|v| !v.is_empty()),
        "{after}"
    );
    // The measured snapshot, for the report (`--nocapture`).
    eprintln!("{}: {after}", agent.runtime());
}

async fn reject_leaves_no_file(agent: Agent) {
    let Some(command) = agent.cli() else { return };
    let rig = agent.rig(&command).await;
    let task = rig
        .submit(json!({ "prompt": "please make-file now" }))
        .await;
    let waiting = rig.approval(&task).await;
    let reject = option_of(&waiting, "reject_once").to_owned();
    rig.respond_option(&task, &waiting, "deny", Some(&reject))
        .await;
    let done = rig.finished(&task).await;
    assert_ne!(done["status"], "running", "{done}");
    assert!(!rig.created_file().exists(), "a rejected command ran");
    rig.wait_no_agent_process("its task").await;
    rig.wait_writable("a rejected command").await;
}

async fn cancel_mid_turn_leaves_no_agent_process_and_frees_the_workdir(agent: Agent) {
    let Some(command) = agent.cli() else { return };
    let rig = agent.rig(&command).await;
    rig.cancel_mid_turn("be slow please").await;
}

async fn a_continuation_resumes_the_same_session(agent: Agent) {
    let Some(command) = agent.cli() else { return };
    let rig = agent.rig(&command).await;
    let first = rig
        .submit(json!({ "prompt": "remember the word PELICAN" }))
        .await;
    assert_eq!(rig.finished(&first).await["status"], "succeeded");
    let asked = agent.model_requests(&rig.model).len();
    let second = rig
        .submit(json!({ "prompt": "what was the word", "continue_from_task_id": first }))
        .await;
    let done = rig.finished(&second).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let later = agent.model_requests(&rig.model);
    // The agent sent the earlier turn along with the new prompt: the same
    // session, not a fresh one.
    let continued = later[asked..].iter().any(|body| {
        let text = body.to_string();
        text.contains("PELICAN") && text.contains("what was the word")
    });
    assert!(continued, "not the same session: {:?}", &later[asked..]);
}

async fn a_model_override_applies_to_its_own_task_only(agent: Agent) {
    let Some(command) = agent.cli() else { return };
    let rig = agent.rig(&command).await;
    let catalog = rig
        .server
        .ok("list_agent_models", json!({ "runtime": rig.runtime }))
        .await;
    assert_eq!(catalog["status"], "ok", "{catalog}");
    assert!(
        catalog["models"]
            .as_array()
            .is_some_and(|models| models.iter().any(|m| m["id"] == agent.other_model())),
        "{catalog}"
    );
    let asked = agent.model_requests(&rig.model).len();
    let task = rig
        .submit(json!({ "prompt": "use another model", "model": agent.other_model() }))
        .await;
    assert_eq!(rig.finished(&task).await["status"], "succeeded");
    let during = agent.model_requests(&rig.model);
    assert!(
        during[asked..]
            .iter()
            .any(|body| agent.uses_other_model(body)),
        "the override never reached the model: {:?}",
        &during[asked..]
    );
    let task = rig.submit(json!({ "prompt": "use the default" })).await;
    assert_eq!(rig.finished(&task).await["status"], "succeeded");
    let after = agent.model_requests(&rig.model);
    assert!(
        after[during.len()..]
            .iter()
            .all(|body| !agent.uses_other_model(body)),
        "the override outlived its task: {:?}",
        &after[during.len()..]
    );
    assert!(
        after.len() > during.len(),
        "the second task never asked the model"
    );
}
