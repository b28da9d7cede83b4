#!/usr/bin/env bash
# Runs the MCP-client end-to-end tests (issue 17): the real Claude Code and
# Codex CLIs as MCP clients of ServerFS, over stdio and over HTTP with a
# bearer token, each driven by a scripted model on 127.0.0.1
# (serverfs-testkit's MockModel); the official Python SDK as a content-only
# client; the MCP Inspector CLI listing (with its schema-portability check)
# and calling every tool; and mcp-remote, the stdio-to-HTTP bridge
# docs/clients.md gives Claude Desktop, driven by the Inspector. Reuses the
# CLIs of scripts/e2e-claude.sh and scripts/e2e-codex.sh (same prefixes,
# same pinned versions; installed there from the npm registry if missing),
# and caches the pinned Inspector and mcp-remote (npm) and Python SDK (PyPI)
# under target/e2e-clients. A failed install fails this script: it never
# skips.
set -euo pipefail
cd "$(dirname "$0")/.."

# One pin per CLI: the runtime suites' scripts own them.
claude_version=$(sed -n 's/^claude_version=//p' scripts/e2e-claude.sh)
codex_version=$(sed -n 's/^codex_version=//p' scripts/e2e-codex.sh)
# The Python SDK's pin is the one .ci/run installs for the HTTP tests.
python_sdk_version=$(sed -n 's/.* mcp==\([0-9.]*\)$/\1/p' .ci/run)
inspector_version=2.12.0
mcp_remote_version=0.15.1
claude="$PWD/target/e2e-claude/node_modules/.bin/claude"
codex="$PWD/target/e2e-codex/node_modules/.bin/codex"
inspector_prefix=target/e2e-clients/inspector
inspector="$PWD/$inspector_prefix/node_modules/.bin/mcp-inspector"
mcp_remote_prefix=target/e2e-clients/mcp-remote
mcp_remote="$PWD/$mcp_remote_prefix/node_modules/.bin/mcp-remote"
python_sdk="$PWD/target/e2e-clients/python-mcp-$python_sdk_version"

for tool in npm node python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "e2e-clients: $tool is required to install and run the clients" >&2
    exit 1
  fi
done
if [ -z "$claude_version" ] || [ -z "$codex_version" ] || [ -z "$python_sdk_version" ]; then
  echo "e2e-clients: no pinned version found in scripts/e2e-claude.sh, scripts/e2e-codex.sh or .ci/run" >&2
  exit 1
fi
install() { # PREFIX PACKAGE@VERSION
  mkdir -p "$1"
  npm install --prefix "$1" --no-audit --no-fund --silent --save-exact "$2"
}
if [ ! -x "$claude" ] || ! "$claude" --version 2>/dev/null | grep -q "^$claude_version "; then
  install target/e2e-claude "@anthropic-ai/claude-code@$claude_version"
fi
if [ ! -x "$codex" ] || ! "$codex" --version 2>/dev/null | grep -qx "codex-cli $codex_version"; then
  install target/e2e-codex "@openai/codex@$codex_version"
fi
if [ ! -x "$inspector" ] || [ "$("$inspector" --version 2>/dev/null)" != "$inspector_version" ]; then
  install "$inspector_prefix" "@modelcontextprotocol/inspector@$inspector_version"
fi
if [ ! -x "$mcp_remote" ] || [ "$("$mcp_remote" --version 2>/dev/null)" != "$mcp_remote_version" ]; then
  install "$mcp_remote_prefix" "mcp-remote@$mcp_remote_version"
fi
# One directory per version: a new pin installs beside the old one, never
# over it.
if [ ! -d "$python_sdk/mcp-$python_sdk_version.dist-info" ]; then
  rm -rf "$python_sdk"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$python_sdk" "mcp==$python_sdk_version"
fi
echo "e2e-clients: $("$claude" --version 2>/dev/null), $("$codex" --version 2>/dev/null), MCP Inspector $("$inspector" --version 2>/dev/null), mcp-remote $("$mcp_remote" --version 2>/dev/null), mcp $python_sdk_version (Python)"

started=$(date +%s)
SERVERFS_E2E_CLAUDE="$claude" SERVERFS_E2E_CODEX="$codex" SERVERFS_E2E_INSPECTOR="$inspector" \
  SERVERFS_E2E_MCP_REMOTE="$mcp_remote" SERVERFS_E2E_PYTHON_SDK="$python_sdk" \
  cargo test -p serverfs --test all clients_e2e -- --test-threads=2 "$@"
echo "e2e-clients: suite wall time $(( $(date +%s) - started )) s"
