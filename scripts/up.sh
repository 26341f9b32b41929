#!/usr/bin/env bash
# `npm run up`: installs what is needed, finds or starts NATS with JetStream, builds and starts
# the six services as separate processes, runs the Appendix C demo, then keeps running until
# Ctrl-C, when every service drains and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_NO_CLOUD=true NX_DAEMON=false

SERVICES=(intake resolver sweeper escalation council audit)
NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
DATA=.data/up
mkdir -p "$DATA/logs"

bash scripts/ensure-deps.sh

hostport=${NATS_URL#*://}; hostport=${hostport##*@}; host=${hostport%%:*}; port=${hostport##*:}
answers() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }
nats_pid=
if answers; then
  echo "[up] using the NATS server at $NATS_URL"
else
  bin=$(command -v nats-server || true); [ -z "$bin" ] && [ -x /usr/sbin/nats-server ] && bin=/usr/sbin/nats-server
  if [ -z "$bin" ]; then
    echo "[up] no NATS server answers at $NATS_URL and the nats-server binary is not installed." >&2
    echo "     Install it (Debian/Ubuntu: sudo apt-get install -y nats-server; others: https://nats.io/download)," >&2
    echo "     or point NATS_URL at a server with JetStream enabled, then run 'npm run up' again." >&2
    exit 1
  fi
  echo "[up] starting $bin with JetStream on $host:$port (data in $DATA/nats)"
  "$bin" -a "$host" -p "$port" -js -sd "$PWD/$DATA/nats" -l "$PWD/$DATA/logs/nats-server.log" &
  nats_pid=$!
  for _ in $(seq 1 100); do answers && break; sleep 0.1; done
  answers || { echo "[up] nats-server did not start; see $DATA/logs/nats-server.log" >&2; exit 1; }
fi

if [ -n "${EVENTSTORE_URL:-}" ]; then echo "[up] event log: EventStoreDB at $EVENTSTORE_URL"; else echo "[up] event log: NATS JetStream"; fi

echo "[up] building services (nx, webpack)"
npx nx run-many -t build --projects="$(IFS=,; echo "${SERVICES[*]}"),cli" --outputStyle=static >"$DATA/logs/build.log" 2>&1 \
  || { echo "[up] build failed; see $DATA/logs/build.log" >&2; tail -30 "$DATA/logs/build.log" >&2; exit 1; }

pids=()
stop_all() {
  trap - INT TERM EXIT
  echo; echo "[up] stopping: draining every service"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$nats_pid" ]; then kill -TERM "$nats_pid" 2>/dev/null || true; wait "$nats_pid" 2>/dev/null || true; fi
  echo "[up] stopped"
}
trap stop_all INT TERM EXIT

port_of() { case $1 in intake) echo 8081;; resolver) echo 8082;; sweeper) echo 8083;; escalation) echo 8084;; council) echo 8085;; audit) echo 8086;; esac; }
for svc in "${SERVICES[@]}"; do
  NATS_URL=$NATS_URL HTTP_PORT=$(port_of "$svc") HTTP_HOST=127.0.0.1 CONCLAVE_AUTH_MODE=${CONCLAVE_AUTH_MODE:-off} \
    CONCLAVE_EXPIRY_GRACE_MS=${CONCLAVE_EXPIRY_GRACE_MS:-100} \
    node "dist/apps/$svc/main.js" >"$DATA/logs/$svc.log" 2>&1 &
  pids+=($!)
done

echo "[up] waiting for the services to be ready"
for svc in "${SERVICES[@]}"; do
  p=$(port_of "$svc")
  for _ in $(seq 1 200); do
    node -e "fetch('http://127.0.0.1:$p/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" && break
    sleep 0.1
  done
  node -e "fetch('http://127.0.0.1:$p/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" \
    || { echo "[up] $svc did not become ready; see $DATA/logs/$svc.log" >&2; tail -20 "$DATA/logs/$svc.log" >&2; exit 1; }
  echo "[up]   $svc ready on http://127.0.0.1:$p (logs: $DATA/logs/$svc.log)"
done
echo "[up] WARNING: authentication is OFF for this local run (CONCLAVE_AUTH_MODE=off)"

echo; echo "[up] demo: RFC Appendix C, posted through the SDK; decisions as they arrive:"
node dist/apps/cli/main.js --nats "$NATS_URL" demo || echo "[up] the demo failed; the services keep running" >&2

echo; echo "[up] Conclave is running. Try: npm run conclave -- watch   (Ctrl-C here stops everything)"
wait "${pids[0]}"
