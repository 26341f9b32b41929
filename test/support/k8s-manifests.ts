import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import YAML from 'yaml';

const ROOT = resolve(__dirname, '../..');
export const K8S_DIR = join(ROOT, 'deploy/k8s');

/** One Kubernetes object as rendered (plain JSON). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

interface Kustomization {
  namespace?: string;
  labels?: Array<{ pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }>;
  resources: string[];
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
}

/** Kinds without a namespace among those the manifests use. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'PersistentVolume', 'StorageClass']);

export function parseAll(text: string): K8sObject[] {
  return YAML.parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length) throw new Error(d.errors.map(String).join('; '));
      return d.toJSON() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null && typeof o === 'object');
}

/**
 * `kustomize build deploy/k8s` for what its kustomization.yaml uses: the resources in order, the
 * namespace on every namespaced object, `labels` on metadata (selectors and templates only when
 * asked), and `images` (new tag or name) on every container and init container. The test
 * compares it with `kubectl kustomize` wherever kubectl is installed.
 */
export function renderKustomization(dir = K8S_DIR): K8sObject[] {
  const k = YAML.parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  const objects = k.resources.flatMap((r) => parseAll(readFileSync(join(dir, r), 'utf8')));
  for (const o of objects) {
    if (k.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace;
    for (const l of k.labels ?? []) {
      o.metadata.labels = { ...o.metadata.labels, ...l.pairs };
      const spec = o['spec'] as
        | { selector?: { matchLabels?: Record<string, string> }; template?: { metadata?: { labels?: Record<string, string> } } }
        | undefined;
      if (l.includeSelectors && spec?.selector?.matchLabels) spec.selector.matchLabels = { ...spec.selector.matchLabels, ...l.pairs };
      if ((l.includeSelectors || l.includeTemplates) && spec?.template?.metadata)
        spec.template.metadata.labels = { ...spec.template.metadata.labels, ...l.pairs };
    }
    for (const c of containersOf(o)) {
      const [name, tag] = splitImage(c.image);
      const rule = (k.images ?? []).find((i) => i.name === name);
      if (rule) c.image = `${rule.newName ?? name}:${rule.newTag ?? tag ?? 'latest'}`;
    }
  }
  return objects;
}

/** `kubectl kustomize` of the directory, when kubectl is installed (else undefined). */
export function kubectlKustomize(dir = K8S_DIR): K8sObject[] | undefined {
  try {
    return parseAll(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return undefined;
  }
}

export interface Container {
  name: string;
  image: string;
  env?: Array<{
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
  }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
}
export interface Probe {
  httpGet?: { path: string; port: number | string };
}

export function containersOf(o: K8sObject): Container[] {
  const pod = (o['spec'] as { template?: { spec?: { containers?: Container[]; initContainers?: Container[] } } } | undefined)?.template
    ?.spec;
  return [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])];
}

function splitImage(image: string): [string, string | undefined] {
  const at = image.lastIndexOf(':');
  return at > image.lastIndexOf('/') ? [image.slice(0, at), image.slice(at + 1)] : [image, undefined];
}

export interface SchemaResult {
  kind: string;
  name: string;
  error: string | null;
}

/**
 * Validates each object against the Kubernetes API schemas bundled with `kubernetes-models`
 * (an ES module, so it runs in a child Node process): one result per object, `error` naming the
 * first failing field, or an unknown apiVersion/kind.
 */
export function validateAgainstSchemas(objects: readonly K8sObject[]): SchemaResult[] {
  const out = execFileSync(process.execPath, [join(dirname(__filename), 'k8s-validate.mjs')], {
    cwd: ROOT,
    input: JSON.stringify(objects),
    encoding: 'utf8',
  });
  return JSON.parse(out) as SchemaResult[];
}
