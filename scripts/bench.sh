#!/usr/bin/env bash
# Benchmarks ServerFS against ripgrep and the reference MCP filesystem
# server in one run and prints one table. Installs what it needs: Debian's
# ripgrep and the reference server from the npm registry (into target/).
# Extra arguments go to serverfs-bench (e.g. --quick, --runs 7).
set -euo pipefail
cd "$(dirname "$0")/.."

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
