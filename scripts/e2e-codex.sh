#!/usr/bin/env bash
# Runs the real-Codex end-to-end tests: installs the pinned @openai/codex
# from the npm registry into target/e2e-codex (never system-wide; the Bridge
# itself never installs anything), then runs the codex_e2e suite with
# SERVERFS_E2E_CODEX pointing at it. Codex talks to a scripted model on
# 127.0.0.1 (serverfs-testkit's MockModel), so no account or network beyond
# the registry is needed. A failed install fails this script: it never skips.
set -euo pipefail
cd "$(dirname "$0")/.."

codex_version=0.171.0
prefix=target/e2e-codex
codex="$PWD/$prefix/node_modules/.bin/codex"

if ! command -v npm >/dev/null; then
  echo "e2e-codex: npm is required to install @openai/codex" >&2
  exit 1
fi
if [ ! -x "$codex" ] || ! "$codex" --version 2>/dev/null | grep -qx "codex-cli $codex_version"; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --silent "@openai/codex@$codex_version"
fi
echo "e2e-codex: $("$codex" --version 2>/dev/null)"

started=$(date +%s)
SERVERFS_E2E_CODEX="$codex" cargo test -p serverfs --test all codex_e2e -- --test-threads=2 "$@"
echo "e2e-codex: suite wall time $(( $(date +%s) - started )) s"
