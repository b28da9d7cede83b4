#!/usr/bin/env bash
# Runs the real-Claude-Code end-to-end tests: installs the pinned
# @anthropic-ai/claude-code from the npm registry into target/e2e-claude
# (never system-wide; the Bridge itself never installs anything), then runs
# the claude_e2e suite with SERVERFS_E2E_CLAUDE pointing at it. Claude Code
# talks to a scripted Anthropic Messages model on 127.0.0.1
# (serverfs-testkit's MockModel), so no account or network beyond the
# registry is needed. A failed install fails this script: it never skips.
set -euo pipefail
cd "$(dirname "$0")/.."

claude_version=2.1.197
prefix=target/e2e-claude
claude="$PWD/$prefix/node_modules/.bin/claude"

if ! command -v npm >/dev/null; then
  echo "e2e-claude: npm is required to install @anthropic-ai/claude-code" >&2
  exit 1
fi
if [ ! -x "$claude" ] || ! "$claude" --version 2>/dev/null | grep -q "^$claude_version "; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --silent "@anthropic-ai/claude-code@$claude_version"
fi
echo "e2e-claude: $("$claude" --version 2>/dev/null)"

started=$(date +%s)
SERVERFS_E2E_CLAUDE="$claude" cargo test -p serverfs --test all claude_e2e -- --test-threads=2 "$@"
echo "e2e-claude: suite wall time $(( $(date +%s) - started )) s"
