#!/bin/bash
# Exit 0 when the local nats-server's monitoring endpoint says it is healthy with JetStream on.
set -euo pipefail
exec 3<>/dev/tcp/127.0.0.1/${NATS_MONITOR_PORT:-8222}
printf 'GET /healthz?js-enabled-only=true HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
IFS= read -r status <&3
[[ $status == *" 200 "* ]]
