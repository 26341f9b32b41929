#!/usr/bin/env bash
# Makes sure a NATS server with JetStream answers at 127.0.0.1:4222 for the test suite.
# Installs Debian's nats-server when the binary is missing, starts it when nothing listens.
set -euo pipefail

host=127.0.0.1 port=4222
listening() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

if listening; then exit 0; fi

if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  echo "[ensure-nats] nats-server is not installed; installing Debian's package" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "[ensure-nats] need root for 'apt-get install -y nats-server'; run it, then retry" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nats-server >/dev/null
fi

bin=$(command -v nats-server || echo /usr/sbin/nats-server)
mkdir -p /var/lib/nats-server /var/log
echo "[ensure-nats] starting $bin on $host:$port with JetStream" >&2
start-stop-daemon --start --oknodo --background --exec "$bin" \
  -- -a "$host" -p "$port" -js -sd /var/lib/nats-server -l /var/log/nats-server.log

for _ in $(seq 1 100); do
  if listening; then exit 0; fi
  sleep 0.1
done
echo "[ensure-nats] nats-server did not start listening on $host:$port; see /var/log/nats-server.log" >&2
exit 1
