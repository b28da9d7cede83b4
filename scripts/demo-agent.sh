#!/usr/bin/env bash
# Try agent delegation in one step: builds ServerFS and the Agent Bridge
# (release), writes a throw-away configuration under target/demo-agent/ with
# a copy of examples/demo as a workspace-write workdir and the deterministic
# `fake` runtime, starts the Bridge in the background, prints both doctors'
# reports (exit 1 on a FAIL), then serves ServerFS in the foreground on
# Streamable HTTP. Ctrl-C stops both.
#
#   scripts/demo-agent.sh            # http://127.0.0.1:8765/mcp
#   DEMO_PORT=9000 scripts/demo-agent.sh
#
# Everything lives in target/demo-agent/ (configuration, the workdir copy,
# the bearer token file, the Bridge's state and log) and is recreated on
# every run; the repository's examples/demo is never changed.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${DEMO_PORT:-8765}

echo "== building serverfs and serverfs-agent-bridge (release)"
cargo build --release -p serverfs -p serverfs-agent-bridge
# The target directory as cargo sees it (CARGO_TARGET_DIR, .cargo/config).
target=$(cargo metadata --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -n "$target" ] || target="$(pwd)/target"
bin="$target/release"
dir="$target/demo-agent"

# A fresh demo directory. The Bridge's socket needs a short path (sun_path
# holds 108 bytes); from a deeply nested clone it goes to a temp directory.
rm -rf "$dir"
mkdir -p "$dir"
chmod 700 "$dir"
cp -R examples/demo "$dir/demo"
run="$dir/run"
short=""
if [ ${#run} -gt 90 ]; then
  short=$(mktemp -d "${TMPDIR:-/tmp}/sfdemo.XXXXXX")
  run="$short/run"
fi

config="$dir/serverfs.toml"
cat >"$config" <<EOF
# Written by scripts/demo-agent.sh; thrown away on the next run.
[agent]
enabled = true
socket = "$run/bridge.sock"
lock_dir = "$run/locks"
state_dir = "$dir/state"

[http]
token_file = "tokens.json"

[[workdirs]]
alias = "demo"
path = "demo"
description = "A throw-away copy of examples/demo for trying agent delegation"
read_only = false
agent_mode = "workspace-write"
agent_runtimes = ["fake"]
EOF

echo "== starting the Agent Bridge (log: $dir/bridge.log)"
"$bin/serverfs-agent-bridge" serve --config "$config" 2>"$dir/bridge.log" &
bridge=$!
stop_bridge() {
  kill "$bridge" 2>/dev/null || true
  wait "$bridge" 2>/dev/null || true
  if [ -n "$short" ]; then rm -rf "$short"; fi
}
trap stop_bridge EXIT
for _ in $(seq 1 100); do
  grep -q '"agent bridge serving"' "$dir/bridge.log" && break
  if ! kill -0 "$bridge" 2>/dev/null; then
    echo "the Agent Bridge did not start:" >&2
    cat "$dir/bridge.log" >&2
    exit 1
  fi
  sleep 0.1
done
grep -q '"agent bridge serving"' "$dir/bridge.log" || {
  echo "the Agent Bridge did not start within 10 s:" >&2
  cat "$dir/bridge.log" >&2
  exit 1
}

# What an operator checks first: both doctors, summary before anything else.
# The Bridge's: directories, lock artifacts, the fake runtime and the
# environment it receives, proxy, linger. ServerFS's: workdirs, the HTTP
# address, and the peer identity the Bridge measures for it (bridge.peer).
echo "== doctor"
doctor_ok=true
"$bin/serverfs-agent-bridge" doctor --config "$config" || doctor_ok=false
"$bin/serverfs" doctor --config "$config" --http "127.0.0.1:$port" || doctor_ok=false
if [ "$doctor_ok" != true ]; then
  echo "doctor reported a FAIL above; fix it and run the script again" >&2
  exit 1
fi

cat <<EOF

== ServerFS with agent tools on http://127.0.0.1:$port/mcp (token printed below)
Connect an MCP client with the token (e.g. Claude Code:
  claude mcp add --transport http serverfs-demo http://127.0.0.1:$port/mcp --header "Authorization: Bearer <token>"
or the MCP Inspector: npx @modelcontextprotocol/inspector), then try:

  1. submit_agent_task   {"runtime": "fake", "workdir": "demo", "prompt": "fake: approval echo hi"}
                         -> {"task_id": "agt_…", "status": "queued"}
  2. get_agent_task      {"task_id": "agt_…"}
                         -> status "waiting_for_approval", pending_request with its request_id
                            (wait_seconds up to 45 waits for the next change instead)
  3. respond_agent_approval {"task_id": "agt_…", "request_id": "req_…", "decision": "approve_once"}
  4. get_agent_task      {"task_id": "agt_…"}
                         -> status "succeeded", final_response "approved: echo hi"

Other fake prompts: "fake: question Which one?" (answer_agent_question),
"fake: steer" (send_agent_message), "fake: wait 60000" (cancel_agent_task;
meanwhile file mutations answer WORKDIR_BUSY), "fake: write notes.txt hello".
Ctrl-C stops ServerFS and the Bridge.

EOF
"$bin/serverfs" serve --http "127.0.0.1:$port" --config "$config" --new-token demo
