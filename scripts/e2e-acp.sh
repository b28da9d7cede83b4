#!/usr/bin/env bash
# Runs the real-ACP-agent end-to-end tests: installs the pinned OpenCode
# (opencode-ai, `opencode acp`), @zed-industries/codex-acp and
# @agentclientprotocol/claude-agent-acp from the npm registry into
# target/e2e-acp (never system-wide; the Bridge itself never installs
# anything), then runs the acp_e2e suite with SERVERFS_E2E_OPENCODE,
# SERVERFS_E2E_CODEX_ACP and SERVERFS_E2E_CLAUDE_ACP pointing at them. Each
# agent talks to a scripted model on 127.0.0.1 (serverfs-testkit's
# MockModel: Chat Completions for OpenCode, Responses for codex-acp,
# Anthropic Messages for claude-agent-acp), so no account or network beyond
# the registry is needed. A failed install fails this script: it never
# skips.
set -euo pipefail
cd "$(dirname "$0")/.."

# npm 11 on node 20 installs these; claude-agent-acp's newer releases need
# node >= 22 (spec-adapters.md §0), 0.49.0 is the newest for node 20.
opencode_version=1.18.33
codex_acp_version=0.16.0
claude_acp_version=0.49.0
root="$PWD/target/e2e-acp"

if ! command -v npm >/dev/null; then
  echo "e2e-acp: npm is required to install the ACP agents" >&2
  exit 1
fi

# install DIR PACKAGE VERSION: into $root/DIR unless that version is there.
install() {
  local dir="$root/$1" package=$2 version=$3
  local manifest="$dir/node_modules/$package/package.json"
  if [ ! -f "$manifest" ] || ! grep -q "\"version\": \"$version\"" "$manifest"; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --silent "$package@$version"
  fi
}
install opencode opencode-ai "$opencode_version"
install codex-acp @zed-industries/codex-acp "$codex_acp_version"
install claude-agent-acp @agentclientprotocol/claude-agent-acp "$claude_acp_version"

opencode="$root/opencode/node_modules/.bin/opencode"
codex_acp="$root/codex-acp/node_modules/.bin/codex-acp"
claude_acp="$root/claude-agent-acp/node_modules/.bin/claude-agent-acp"
for agent in "$opencode" "$codex_acp" "$claude_acp"; do
  if [ ! -x "$agent" ]; then
    echo "e2e-acp: $agent is missing after the install" >&2
    exit 1
  fi
done
echo "e2e-acp: opencode $("$opencode" --version 2>/dev/null), codex-acp $codex_acp_version, claude-agent-acp $claude_acp_version"

started=$(date +%s)
SERVERFS_E2E_OPENCODE="$opencode" SERVERFS_E2E_CODEX_ACP="$codex_acp" SERVERFS_E2E_CLAUDE_ACP="$claude_acp" \
  cargo test -p serverfs --test all acp_e2e -- --test-threads=2 "$@"
echo "e2e-acp: suite wall time $(( $(date +%s) - started )) s"
