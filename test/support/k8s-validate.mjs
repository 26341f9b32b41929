// Validates Kubernetes objects (a JSON array on stdin) against the API schemas bundled with
// kubernetes-models; prints one {kind, name, error} per object. An ES module because
// kubernetes-models is one (test/support/k8s-manifests.ts runs it in a child process).

const input = JSON.parse(
  await new Promise((ok) => {
    let data = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (c) => (data += c));
    process.stdin.on('end', () => ok(data));
  }),
);

/** `apps/v1` → the models module of that group and version. */
async function modelsOf(apiVersion) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const path = group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`;
  return import(path);
}

const results = [];
for (const o of input) {
  const name = o?.metadata?.name ?? '?';
  try {
    const mod = await modelsOf(o.apiVersion).catch(() => undefined);
    const Model = mod?.[o.kind];
    if (!Model) throw new Error(`unknown apiVersion/kind ${o.apiVersion} ${o.kind}`);
    new Model(o).validate();
    results.push({ kind: o.kind, name, error: null });
  } catch (err) {
    results.push({ kind: o.kind, name, error: String(err?.message ?? err) });
  }
}
process.stdout.write(JSON.stringify(results));
