#!/bin/bash
# Container health probe for ServerFS: GET /healthz on the loopback listener
# must answer HTTP 200 within the timeout. Uses only bash (/dev/tcp), because
# the runtime image has no curl and serverfs has no probe subcommand.
#
# Usage: healthcheck [PORT]   (default 8000; exit 0 healthy, 1 unhealthy)
#
# The request carries Host: 127.0.0.1:PORT, a loopback name, which the
# server's Host allowlist accepts by default.
set -u
port="${1:-8000}"
case "$port" in
    '' | *[!0-9]*) echo "healthcheck: bad port: $port" >&2; exit 1 ;;
esac
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$port" >&3 || exit 1
IFS= read -r -t 3 status <&3 || exit 1
case "$status" in
    'HTTP/1.'[01]' 200'*) exit 0 ;;
    *) echo "healthcheck: unexpected status: ${status%$'\r'}" >&2; exit 1 ;;
esac
