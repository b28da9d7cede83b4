#!/usr/bin/env bash
# Benchmarks ServerFS against its anchors in one run and prints one table:
# ripgrep (search, find), the reference MCP filesystem server (per-call
# latency, cold start, the pages and memory of a 256 MiB log) and plain
# HTTP round trips (MCP over HTTP with 1, 8 and 32 clients). Installs what
# it needs: Debian's ripgrep and the reference server from the npm registry
# (into target/). Extra arguments go to serverfs-bench (e.g. --quick,
# --runs 9, --only cancel for how soon a cancelled search ends).
#
# `scripts/bench.sh bridge [--quick]` benchmarks the Agent Bridge daemon
# instead (RPC round trips and submit -> first event over its socket); it
# needs nothing but the workspace, and takes serverfs-bench's `bridge`
# options (--clients, --calls, --submits).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = bridge ]; then
  shift
  cargo build --release -q -p serverfs-agent-bridge -p serverfs-bench
  exec target/release/serverfs-bench bridge "$@"
fi

if ! command -v rg >/dev/null; then
  apt-get update -qq && apt-get install -y -qq ripgrep
fi
reference_version=2026.8.31
reference_dir=target/bench-node
reference_js=$reference_dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ ! -f "$reference_js" ]; then
  mkdir -p "$reference_dir"
  (cd "$reference_dir" && npm install --no-audit --no-fund --silent \
    "@modelcontextprotocol/server-filesystem@$reference_version")
fi

cargo build --release -q -p serverfs -p serverfs-bench
exec target/release/serverfs-bench --reference "node $reference_js" "$@"
