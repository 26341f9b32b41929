#!/usr/bin/env bash
# `npm run up`: installs what is needed, finds or starts NATS with JetStream, builds and starts
# the six services as separate processes, runs the Appendix C demo, then keeps running until
# Ctrl-C, when every service drains and stops. Authentication is on (CONCLAVE_AUTH_MODE=required)
# unless CONCLAVE_AUTH_MODE=off is set: each run makes a fresh administrator key, the demo
# registers its participants with fresh keys (all in .data/up/keys, mode 600) and signs as them.
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_NO_CLOUD=true NX_DAEMON=false

SERVICES=(intake resolver sweeper escalation council audit)
NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
DATA=.data/up
KEYS=$DATA/keys
AUTH_MODE=${CONCLAVE_AUTH_MODE:-required}
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

auth_env=(CONCLAVE_AUTH_MODE="$AUTH_MODE")
demo_args=()
if [ "$AUTH_MODE" = required ]; then
  mkdir -p "$KEYS" && chmod 700 "$KEYS"
  # Keys of earlier runs are replaced: the demo rotates its participants' keys, and the
  # administrators of earlier runs are deactivated once this run's one is in.
  rm -f "$KEYS"/up-admin-*.pem
  open_nats=${CONCLAVE_INSECURE_OPEN_NATS:-true}
  admin=up-admin-$(date +%s)
  bootstrap=$(node dist/apps/cli/main.js participants keygen --out "$KEYS/$admin.pem" --id "$admin" | sed -n 's/^CONCLAVE_BOOTSTRAP_ADMIN=//p')
  # The console's bearer token for the human of Appendix C.4 (the demo registers that participant).
  token_file=$KEYS/human-pricing-lead.token
  (umask 077; node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64url'))" >"$token_file")
  auth_env+=(CONCLAVE_BOOTSTRAP_ADMIN="$bootstrap"
    CONCLAVE_HUMAN_TOKENS="{\"$(cat "$token_file")\":\"human-pricing-lead\"}"
    CONCLAVE_INSECURE_OPEN_NATS="$open_nats")
  demo_args=(--participant "$admin" --key-file "$KEYS/$admin.pem" demo --keys-dir "$KEYS" --supersede up-admin-)
else
  demo_args=(demo)
fi

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
  env NATS_URL="$NATS_URL" HTTP_PORT="$(port_of "$svc")" HTTP_HOST=127.0.0.1 "${auth_env[@]}" \
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
if [ "$AUTH_MODE" = required ]; then
  echo "[up] authentication is ON: every command is signed (administrator $admin, keys in $KEYS)"
  if [ "$open_nats" = true ]; then
    echo "[up] WARNING: this local NATS server does not authenticate its clients (CONCLAVE_INSECURE_OPEN_NATS=true):"
    echo "     anyone on this machine could publish on the bus directly; production runs NATS with accounts (deploy/nats)"
  fi
else
  echo "[up] WARNING: authentication is OFF for this local run (CONCLAVE_AUTH_MODE=off)"
fi

echo; echo "[up] demo: RFC Appendix C, posted through the SDK; decisions as they arrive:"
node dist/apps/cli/main.js --nats "$NATS_URL" "${demo_args[@]}" || echo "[up] the demo failed; the services keep running" >&2

echo; echo "[up] Conclave is running. Ctrl-C here stops everything. Try:"
echo "     npm run conclave -- watch"
if [ "$AUTH_MODE" = required ]; then
  echo "     npm run conclave -- --participant demo-proposer --key-file $KEYS/demo-proposer.pem list"
  echo "     the escalation console http://127.0.0.1:8084/ with the token in $token_file"
else
  echo "     the escalation console http://127.0.0.1:8084/"
fi
wait "${pids[0]}"
