//! `task.submit` (spec-agent-bridge.md §3.4): checks in the spec's order,
//! the idempotency fast path before authorization, a bounded wait for a
//! task on the same workdir that has ended but is still stopping, then —
//! under the submit lock — the writer lease, the `queued` row, the recovery
//! guard and the runner. Returns before the task runs.

use std::sync::Arc;
use std::time::Duration;

use serverfs_lease::{GuardRecord, GuardWrite, HeldLease, LeaseError, LeaseId};
use serverfs_protocol::bridge::{
    AgentProfile, BridgeErrorCode, EventPayload, TaskStatus, TaskSubmitParams, TaskSubmitResult,
};

use super::Core;
use super::error::{ServiceResult, lease_error};
use super::host::Redactors;
use super::live::LiveTask;
use super::manifest::{Fingerprint, ManifestInput, build_manifest};
use super::policy::{Authorized, WorkdirPolicy, normalize_cwd};
use super::runner::RunPlan;
use super::settings::{MAX_KEY_BYTES, MAX_MODEL_BYTES, MAX_PROMPT_BYTES};
use crate::store::{
    Created, IdempotencyKey, NewTask, TaskRecord, Transition, new_task_id, now_millis,
};
use serverfs_agent_runtime::AgentError;
use serverfs_agent_runtime::TaskContext;

/// How long a workspace-write submission waits for a task on the same
/// workdir that has already ended from outside (cancelled, timed out) to
/// stop its provider and let go of the writer lease. The end is stored
/// before the provider is stopped (terminal-first), so without this wait a
/// client that submits right after seeing `cancelled` would be refused for
/// that moment. It covers a provider's `SIGTERM` grace (2 s) with room to
/// spare and stays far below a Bridge client's call timeout (30 s); a
/// provider slower than this leaves the submission `WORKDIR_BUSY`.
const STOPPING_WRITER_WAIT: Duration = Duration::from_secs(5);

fn invalid(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::InvalidRequest, message.to_owned())
}

/// Whether `text` holds a control character (C0 or DEL).
fn has_control(text: &str) -> bool {
    text.chars().any(|c| c < '\u{20}' || c == '\u{7f}')
}

/// Whether `model` is a model id a provider may be handed: 1 to
/// [`MAX_MODEL_BYTES`] bytes of ASCII letters, digits and `. _ : / @ + [ ]
/// -`, starting with a letter or digit. Every real id fits (`opus`,
/// `claude-opus-4-1`, `sonnet[1m]`, `gpt-5.1-codex`,
/// `openrouter/anthropic/claude-3.5`, `llama3:8b@q4`); what does not —
/// a leading `-` a CLI would read as an option (`--dangerously-skip-permissions`),
/// whitespace, `=`, quotes, control characters — is refused before any
/// adapter sees it (issue 27, item 7).
fn is_model_id(model: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._:/@+[]-".contains(c);
    model.len() <= MAX_MODEL_BYTES
        && model.starts_with(|c: char| c.is_ascii_alphanumeric())
        && model.chars().all(allowed)
}

/// Steps 2–5: the shape of the optional strings.
fn check_shape(params: &TaskSubmitParams) -> ServiceResult<()> {
    if params.runtime.is_empty() || params.workdir.is_empty() {
        return Err(invalid("runtime and workdir must be non-empty"));
    }
    if let Some(model) = &params.model
        && !is_model_id(model)
    {
        return Err(invalid(
            "model must be 1 to 512 bytes of A-Z a-z 0-9 . _ : / @ + [ ] -, \
             starting with a letter or digit",
        ));
    }
    if let Some(id) = &params.correlation_id
        && (id.len() > MAX_KEY_BYTES || has_control(id))
    {
        return Err(invalid(
            "correlation_id must be at most 256 bytes, without control characters",
        ));
    }
    if let Some(key) = &params.idempotency_key
        && (key.is_empty() || key.len() > MAX_KEY_BYTES || has_control(key))
    {
        return Err(invalid(
            "idempotency_key must be non-empty, at most 256 bytes, without control characters",
        ));
    }
    Ok(())
}

/// The reply for a task that already exists under the same key.
fn replayed(task: &TaskRecord) -> TaskSubmitResult {
    TaskSubmitResult {
        task_id: task.task_id.clone(),
        status: task.status,
        correlation_id: task.correlation_id.clone(),
        idempotency_key: task.idempotency_key.clone(),
        preflight: None,
        routing_advice: None,
    }
}

impl Core {
    pub(super) async fn submit(
        self: &Arc<Self>,
        params: TaskSubmitParams,
    ) -> ServiceResult<TaskSubmitResult> {
        self.refuse_if_closing()?;
        check_shape(&params)?;
        self.purge_expired().await;
        if params.prompt.len() > MAX_PROMPT_BYTES {
            return Err(AgentError::new(
                BridgeErrorCode::AgentPromptTooLarge,
                format!("the prompt exceeds {MAX_PROMPT_BYTES} bytes"),
            ));
        }
        let profile = AgentProfile::from_wire(&params.profile).ok_or_else(|| {
            AgentError::new(
                BridgeErrorCode::AgentProfileNotAllowed,
                "profile must be review or workspace-write",
            )
        })?;
        let cwd = normalize_cwd(&params.path)?;
        // The wire and the record spell the root `""` (spec §3.4 step 9),
        // not `RelPath`'s display form `.`.
        let relative_cwd = if cwd.is_root() {
            String::new()
        } else {
            cwd.as_string()
        };
        let fingerprint = Fingerprint {
            runtime: &params.runtime,
            workdir: &params.workdir,
            path: &relative_cwd,
            profile,
            prompt: &params.prompt,
            model: params.model.as_deref(),
            continue_from_task_id: params.continue_from_task_id.as_deref(),
            correlation_id: params.correlation_id.as_deref(),
        }
        .digest();
        let idempotency = params
            .idempotency_key
            .clone()
            .map(|key| IdempotencyKey { key, fingerprint });
        if let Some(existing) = self.find_idempotent(idempotency.as_ref()).await? {
            return Ok(existing);
        }

        let authorized =
            self.policies
                .authorize(&params.workdir, &params.runtime, profile, &cwd)?;
        let continued_session = self.check_continuation(&params, profile).await?;
        let adapter = self.runtimes.get(&params.runtime)?;
        let probe = adapter.probe().await;
        if !probe.available {
            return Err(AgentError::new(
                BridgeErrorCode::AgentRuntimeUnavailable,
                "the runtime is not available on this host",
            ));
        }
        let capabilities = adapter.capabilities();
        let timeout_ms = i64::try_from(self.settings.task_timeout.as_millis()).unwrap_or(i64::MAX);
        let deadline_at = now_millis().saturating_add(timeout_ms);
        let (manifest, manifest_sha256) = build_manifest(
            &ManifestInput {
                runtime: &params.runtime,
                runtime_version: probe.version.as_deref(),
                in_flight_recovery: capabilities.in_flight_recovery,
                relative_cwd: &relative_cwd,
                profile,
                model: params.model.as_deref(),
                continue_from_task_id: params.continue_from_task_id.as_deref(),
                correlation_id: params.correlation_id.as_deref(),
                idempotency_key: params.idempotency_key.as_deref(),
                deadline_at,
            },
            authorized.workdir,
            &self.settings,
        );

        let stopping = match profile {
            AgentProfile::WorkspaceWrite => {
                self.await_stopping_writer(&authorized.workdir.lease).await
            }
            AgentProfile::Review => None,
        };

        let _serial = self.submit_lock.lock().await;
        // Shutdown takes this lock after setting `closing`: a submission
        // either registers its task before shutdown lists them, or is
        // refused here.
        self.refuse_if_closing()?;
        if let Some(existing) = self.find_idempotent(idempotency.as_ref()).await? {
            return Ok(existing);
        }
        let held = match profile {
            AgentProfile::WorkspaceWrite => {
                Some(self.take_lease(&authorized, stopping.as_deref()).await?)
            }
            AgentProfile::Review => None,
        };
        let task_id = new_task_id()?;
        let new_task = NewTask {
            task_id: task_id.clone(),
            runtime: params.runtime.clone(),
            workdir_alias: authorized.workdir.alias.clone(),
            workdir_slot: authorized.workdir.legacy_slot,
            relative_cwd: relative_cwd.clone(),
            profile,
            requested_model: params.model.clone(),
            deadline_at,
            continue_from_task_id: params.continue_from_task_id.clone(),
            native_session_id: continued_session.clone(),
            correlation_id: params.correlation_id.clone(),
            idempotency,
            manifest,
            manifest_sha256,
        };
        let created = self
            .store
            .call(move |db| db.create_task(&new_task, now_millis()))
            .await?;
        let task = match created {
            // Another submission with the same key won the race while the
            // lease was taken; ours is dropped with it.
            Created::Replayed(task) => return Ok(replayed(&task)),
            Created::New(task) => task,
        };
        let lease = match held {
            Some(held) => Some(self.publish_guard(held, &task).await?),
            None => None,
        };
        let live = Arc::new(LiveTask::new(task_id.clone(), lease));
        self.live_tasks().insert(task_id.clone(), Arc::clone(&live));
        let plan = RunPlan {
            redactors: Redactors::new(
                root_spellings(authorized.workdir),
                self.policies
                    .iter()
                    .filter(|other| other.alias != authorized.workdir.alias)
                    .flat_map(root_spellings)
                    .collect(),
                authorized.workdir.approval_paths,
                self.settings.home.clone(),
            ),
            context: TaskContext {
                task_id: task_id.clone(),
                cwd: authorized.cwd.with_task(&task_id),
                profile,
                prompt: params.prompt,
                model: params.model,
                continue_native_session_id: continued_session,
                deadline: None,
            },
            adapter,
            runtime: params.runtime,
            deadline_at,
        };
        self.spawn_runner(live, plan);
        Ok(TaskSubmitResult {
            task_id,
            status: TaskStatus::Queued,
            correlation_id: task.correlation_id,
            idempotency_key: task.idempotency_key,
            preflight: None,
            routing_advice: None,
        })
    }

    /// The idempotency fast path: the task of a key used before with the
    /// same request, or a conflict.
    async fn find_idempotent(
        &self,
        idempotency: Option<&IdempotencyKey>,
    ) -> ServiceResult<Option<TaskSubmitResult>> {
        let Some(IdempotencyKey { key, fingerprint }) = idempotency.cloned() else {
            return Ok(None);
        };
        let existing = self
            .store
            .call(move |db| db.find_by_idempotency_key(&key))
            .await?;
        let Some(existing) = existing else {
            return Ok(None);
        };
        if existing.request_fingerprint.as_deref() == Some(fingerprint.as_str()) {
            Ok(Some(replayed(&existing)))
        } else {
            Err(AgentError::new(
                BridgeErrorCode::AgentIdempotencyConflict,
                "the idempotency key was used for a different request",
            ))
        }
    }

    /// `continue_from_task_id` (spec §3.7): the native session to continue.
    async fn check_continuation(
        &self,
        params: &TaskSubmitParams,
        profile: AgentProfile,
    ) -> ServiceResult<Option<String>> {
        let Some(prior_id) = params.continue_from_task_id.clone() else {
            return Ok(None);
        };
        let prior = self.store.call(move |db| db.get_task(&prior_id)).await?;
        let not_resumable =
            |why: &str| AgentError::new(BridgeErrorCode::AgentSessionNotResumable, why.to_owned());
        if prior.runtime != params.runtime || prior.workdir_alias != params.workdir {
            return Err(not_resumable(
                "a continuation must use the same runtime and workdir",
            ));
        }
        if prior.profile == AgentProfile::Review && profile == AgentProfile::WorkspaceWrite {
            return Err(AgentError::new(
                BridgeErrorCode::AgentProfileNotAllowed,
                "a review task cannot be continued as workspace-write",
            ));
        }
        // Spec §3.7 order: the session first, then whether the task ended.
        let session = prior
            .native_session_id
            .ok_or_else(|| not_resumable("the task to continue has no provider session"))?;
        if !prior.status.is_terminal() {
            return Err(not_resumable("the task to continue has not finished"));
        }
        Ok(Some(session))
    }

    /// Waits, at most [`STOPPING_WRITER_WAIT`], until no task that has
    /// ended but is still stopping its provider holds `lease`. Returns the
    /// id of the task still stopping when the wait ran out.
    async fn await_stopping_writer(&self, lease: &LeaseId) -> Option<String> {
        let stopping = self
            .live_tasks()
            .values()
            .find(|live| live.is_stopping_writer_of(lease))
            .cloned()?;
        let freed = tokio::time::timeout(STOPPING_WRITER_WAIT, stopping.lease_freed()).await;
        freed.is_err().then(|| stopping.task_id.clone())
    }

    /// Takes the workdir's writer lease without waiting, after settling a
    /// recovery guard left by an earlier task (lazy reconciliation).
    /// `stopping` names a task that has ended but still stops its
    /// provider: a busy lease is then explained by it.
    async fn take_lease(
        &self,
        authorized: &Authorized<'_>,
        stopping: Option<&str>,
    ) -> ServiceResult<HeldLease> {
        let lease = authorized.workdir.lease.clone();
        let lock_dir = self.settings.lock_dir.clone();
        let held = serverfs_lease::hold(&lock_dir, &lease).map_err(|error| match (&error, stopping) {
            (LeaseError::Busy { label }, Some(task_id)) => AgentError::new(
                BridgeErrorCode::WorkdirBusy,
                format!(
                    "{label} is still held by task {task_id}, which has ended but whose agent is still stopping; retry in a few seconds"
                ),
            ),
            _ => lease_error(error),
        })?;
        self.reconcile_guard_lazily(&held).await?;
        Ok(held)
    }

    /// Publishes the new task's recovery guard. On failure the task is
    /// interrupted (`BRIDGE_SCHEDULING_FAILED`) and the lease released.
    async fn publish_guard(
        &self,
        held: HeldLease,
        task: &TaskRecord,
    ) -> ServiceResult<(HeldLease, GuardRecord)> {
        let mut guard = GuardRecord::new(&task.task_id, &task.runtime, now_millis());
        guard.workdir_alias = Some(task.workdir_alias.clone());
        guard.correlation_id.clone_from(&task.correlation_id);
        guard.native_session_id.clone_from(&task.native_session_id);
        match held.publish_guard(&guard, GuardWrite::Create) {
            Ok(()) => Ok((held, guard)),
            Err(error) => {
                drop(held);
                let task_id = task.task_id.clone();
                let message = error.to_string();
                let interrupted = self
                    .store
                    .call(move |db| {
                        db.transition(
                            &task_id,
                            Transition::new(TaskStatus::Queued, TaskStatus::Interrupted)
                                .with_error(BridgeErrorCode::BridgeSchedulingFailed, message)
                                .with_event(EventPayload::TaskInterrupted {
                                    error_code: BridgeErrorCode::BridgeSchedulingFailed,
                                }),
                            now_millis(),
                        )
                    })
                    .await;
                if let Err(store_error) = interrupted {
                    tracing::warn!(
                        code = store_error.code().as_str(),
                        "could not interrupt an unscheduled task"
                    );
                }
                Err(lease_error(error))
            }
        }
    }
}

/// The spellings of a workdir root the redactor must recognise: as
/// configured and, when different, with symlinks resolved.
// Resolving here opens nothing and decides no access: a provider may print
// either spelling, and both must be hidden from the client.
#[allow(clippy::disallowed_methods)]
fn root_spellings(workdir: &WorkdirPolicy) -> Vec<std::path::PathBuf> {
    let configured = workdir.root.clone();
    let mut roots = vec![configured.clone()];
    if let Ok(canonical) = std::fs::canonicalize(&configured)
        && canonical != configured
    {
        roots.push(canonical);
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_model_ids_pass_and_option_like_or_spaced_values_do_not() {
        for model in [
            "opus",
            "claude-opus-4-1",
            "claude-sonnet-4-5-20250929[1m]",
            "gpt-5.1-codex",
            "openrouter/anthropic/claude-3.5",
            "mock-opus",
            "llama3:8b@q4_K_M",
            "a+b",
        ] {
            assert!(is_model_id(model), "{model}");
        }
        let long = "m".repeat(MAX_MODEL_BYTES + 1);
        for model in [
            "--dangerously-skip-permissions",
            "-x",
            "a b",
            "a\nb",
            "",
            " opus",
            "opus ",
            "--model=x",
            "a=b",
            "/etc/passwd",
            "opus\u{202e}",
            "é",
            long.as_str(),
        ] {
            assert!(!is_model_id(model), "{model:?}");
        }
        assert!(is_model_id(&"m".repeat(MAX_MODEL_BYTES)));
    }
}
