#!/usr/bin/env bash
# Checks what can be checked without a container engine or a cluster:
#   1. every YAML file (docker-compose.yml, deploy/k8s/**) parses (the workspace's `yaml` package, 1.x or 2.x);
#   2. the accounts.conf inside deploy/k8s/nats.yaml is byte-identical to deploy/nats/nats-accounts.conf;
#   3. `nats-server -t` accepts deploy/nats/nats-compose.conf, the k8s nats.conf (+ accounts) and
#      nats-accounts.conf; with a pre-2.10 nats-server the sync_interval line is removed first
#      (2.9 does not know it) and the script says so;
#   4. a throwaway nats-server with nats-accounts.conf, and deploy/nats/check-permissions.cjs
#      connecting as each user (what is allowed, what is denied);
#   5. the council service's own participant: in both docker-compose.yml and deploy/k8s its key is
#      a secret mounted where CONCLAVE_COUNCIL_KEY_FILE points, and no other service gets it.
# Not checked: docker build, docker compose config/up, kustomize build, kubectl apply.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(command -v nats-server || echo /usr/sbin/nats-server)
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

echo "== 1. YAML parse"
node -e '
const YAML = require("yaml"); const fs = require("fs"); const path = require("path");
const files = ["docker-compose.yml"];
(function walk(d) { for (const f of fs.readdirSync(d)) { const p = path.join(d, f);
  if (fs.statSync(p).isDirectory()) walk(p); else if (/\.ya?ml$/.test(f)) files.push(p); } })("deploy/k8s");
let bad = 0;
for (const f of files) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(f, "utf8"), { merge: true });
  const errs = docs.flatMap((d) => d.errors);
  if (errs.length) { bad++; console.log("FAIL", f, errs.map(String).join("; ")); continue; }
  const kinds = docs.map((d) => (d.toJS ? d.toJS({ maxAliasCount: 100 }) : d.toJSON())).filter(Boolean).map((o) => o.kind || (o.services ? "compose" : "?"));
  console.log("ok  ", f, kinds.join(", "));
}
process.exit(bad ? 1 : 0);'

echo "== 2. accounts.conf copy"
node -e '
const YAML = require("yaml"); const fs = require("fs");
const cm = YAML.parseAllDocuments(fs.readFileSync("deploy/k8s/nats.yaml", "utf8")).map((d) => (d.toJS ? d.toJS() : d.toJSON())).find((o) => o.kind === "ConfigMap");
fs.writeFileSync(process.argv[1] + "/nats.conf", cm.data["nats.conf"]);
fs.writeFileSync(process.argv[1] + "/accounts.conf", cm.data["accounts.conf"]);
if (cm.data["accounts.conf"] !== fs.readFileSync("deploy/nats/nats-accounts.conf", "utf8")) { console.log("FAIL: deploy/k8s/nats.yaml accounts.conf differs from deploy/nats/nats-accounts.conf"); process.exit(1); }
console.log("ok   identical");' "$work"

echo "== 3. nats-server -t ($("$bin" --version))"
strip=false
case "$("$bin" --version)" in *v2.[0-9].*) strip=true ;; esac
prep() { # file -> a testable copy in $work
  local out="$work/$(basename "$1").t"
  sed -e "s#store_dir: /data#store_dir: $work/js#" -e "s#/var/run/nats/nats.pid#$work/nats.pid#" "$1" > "$out"
  if $strip; then sed -i '/sync_interval/d' "$out"; fi
  echo "$out"
}
$strip && echo "   (pre-2.10 nats-server: testing copies without sync_interval, which needs 2.10+)"
export POD_NAME=nats-0 CONCLAVE_SERVICES_PASSWORD=svcpass CONCLAVE_AGENT_PASSWORD=agentpass \
  CONCLAVE_READER_PASSWORD=readerpass CONCLAVE_HUMAN_PASSWORD=humanpass NATS_SYS_PASSWORD=syspass
cp deploy/nats/nats-accounts.conf "$work/" # nats-compose.conf includes it from beside itself
"$bin" -c "$(prep deploy/nats/nats-compose.conf)" -t
k8s=$(prep "$work/nats.conf"); "$bin" -c "$k8s" -t

echo "== 4. live permissions check"
port=$((20000 + RANDOM % 20000))
cp deploy/nats/nats-accounts.conf "$work/perm-accounts.conf"
printf 'listen: 127.0.0.1:%s\njetstream { store_dir: %s/perm-js }\ninclude ./perm-accounts.conf\n' "$port" "$work" > "$work/perm.conf"
"$bin" -c "$work/perm.conf" > "$work/perm.log" 2>&1 & server_pid=$!
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
NATS_TEST_URL="nats://127.0.0.1:$port" node deploy/nats/check-permissions.cjs
echo "== 5. the council service's key"
node -e '
const YAML = require("yaml"); const fs = require("fs");
const fail = (m) => { console.log("FAIL:", m); process.exit(1); };
const compose = YAML.parseDocument(fs.readFileSync("docker-compose.yml", "utf8"), { merge: true }).toJSON();
const c = compose.services.council;
const file = c.environment.CONCLAVE_COUNCIL_KEY_FILE;
const secret = (c.secrets || []).map((s) => (typeof s === "string" ? s : s.source)).find((s) => file === "/run/secrets/" + s);
if (!secret || !(compose.secrets || {})[secret] || !compose.secrets[secret].file) fail("compose: CONCLAVE_COUNCIL_KEY_FILE (" + file + ") is not a declared file secret mounted into council");
for (const [n, s] of Object.entries(compose.services)) if (n !== "council" && s.secrets) fail("compose: " + n + " mounts a secret");
console.log("ok   compose: council reads its key from secret " + secret);
const docs = YAML.parseAllDocuments(fs.readFileSync("deploy/k8s/services/council.yaml", "utf8")).map((d) => d.toJSON());
const pod = docs.find((o) => o.kind === "Deployment").spec.template.spec;
const ctr = pod.containers[0];
const k8sFile = ctr.env.find((e) => e.name === "CONCLAVE_COUNCIL_KEY_FILE").value;
const mount = ctr.volumeMounts.find((m) => k8sFile.startsWith(m.mountPath + "/"));
const vol = mount && pod.volumes.find((v) => v.name === mount.name);
if (!vol || !vol.secret || !mount.readOnly) fail("k8s: CONCLAVE_COUNCIL_KEY_FILE (" + k8sFile + ") is not on a read-only Secret volume");
const name = vol.secret.secretName;
const secrets = YAML.parseAllDocuments(fs.readFileSync("deploy/k8s/secrets.yaml", "utf8")).map((d) => d.toJSON());
const s = secrets.find((o) => o.kind === "Secret" && o.metadata.name === name);
const key = k8sFile.slice(mount.mountPath.length + 1);
if (!s || !(key in s.stringData)) fail("k8s: Secret " + name + " with key " + key + " is not in deploy/k8s/secrets.yaml");
if (pod.securityContext.fsGroup !== pod.securityContext.runAsUser) fail("k8s: the key is not readable by the service user (fsGroup)");
console.log("ok   k8s: council reads its key from Secret " + name + " (" + key + ")");'

echo "== all checks passed"
