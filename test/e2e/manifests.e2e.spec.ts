import 'reflect-metadata';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PATH_METADATA } from '@nestjs/common/constants';
import { HealthController } from '../../libs/service-kit/src/lib/health.controller';
import { AuditConfig } from '../../apps/audit/src/app/audit.config';
import { CouncilConfig } from '../../apps/council/src/app/council.config';
import { EscalationConfig } from '../../apps/escalation/src/app/escalation.config';
import { IntakeConfig } from '../../apps/intake/src/app/intake.config';
import { ResolverConfig } from '../../apps/resolver/src/app/resolver.config';
import { SweeperConfig } from '../../apps/sweeper/src/app/sweeper.config';
import { loadConfig } from '@conclave/service-kit';
import { compareVersions } from '../support/nats-cluster';
import {
  Container,
  containersOf,
  K8sObject,
  kubectlKustomize,
  renderKustomization,
  validateAgainstSchemas,
} from '../support/k8s-manifests';

/**
 * The Kubernetes manifests as `kubectl apply -k deploy/k8s` would send them: valid against the
 * API schemas (kubernetes-models, bundled; no cluster), and consistent with what the services
 * read: images, ports, probes, every environment variable, the replicas, autoscalers,
 * disruption budgets and spread, and the pinned NATS release.
 */
const ROOT = resolve(__dirname, '../..');
const SERVICES = {
  intake: IntakeConfig,
  resolver: ResolverConfig,
  sweeper: SweeperConfig,
  escalation: EscalationConfig,
  council: CouncilConfig,
  audit: AuditConfig,
} as const;
type Service = keyof typeof SERVICES;
/** Services whose replicas share requests or runs (queue groups, run leases): autoscaled. */
const AUTOSCALED: Partial<Record<Service, string>> = {
  intake: 'proposal-index',
  escalation: 'escalation-inbox',
  council: 'council-evaluation',
};
/** Read by Node or the OpenTelemetry SDK rather than the service's config class. */
const RUNTIME_ENV = [/^NODE_OPTIONS$/, /^OTEL_[A-Z_]+$/];

const objects = renderKustomization();
const find = (kind: string, name: string): K8sObject | undefined => objects.find((o) => o.kind === kind && o.metadata.name === name);
const spec = (o: K8sObject | undefined): Record<string, unknown> => (o?.['spec'] ?? {}) as Record<string, unknown>;

/** class-transformer's decorator registry (its `storage` module ships no type declarations). */
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as {
  defaultMetadataStorage: { getExposedMetadatas(target: unknown): Array<{ options: { name?: string } }> };
};

/** Environment variable names a config class reads (its own and inherited @Expose names). */
function envNamesOf(config: object): Set<string> {
  return new Set(
    defaultMetadataStorage
      .getExposedMetadatas(config)
      .map((m) => m.options.name)
      .filter((n): n is string => typeof n === 'string'),
  );
}

function envOf(c: Container): Map<string, string | undefined> {
  const env = new Map<string, string | undefined>();
  for (const from of c.envFrom ?? []) {
    const cm = from.configMapRef && find('ConfigMap', from.configMapRef.name);
    for (const [k, v] of Object.entries((cm?.['data'] as Record<string, string>) ?? {})) env.set(k, v);
  }
  for (const e of c.env ?? []) env.set(e.name, e.value);
  return env;
}

describe('the Kubernetes manifests (deploy/k8s), rendered as kustomize does', () => {
  it('given the kustomization, when rendered here, then it is what kubectl kustomize renders (where kubectl is installed)', () => {
    const kubectl = kubectlKustomize();
    if (!kubectl) {
      console.warn('kubectl is not installed: the renderer is not compared with kustomize on this machine');
      return;
    }
    // kustomize orders objects by kind; the objects themselves must be identical.
    const byKey = (list: K8sObject[]) =>
      [...list].sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
    expect(byKey(objects)).toEqual(byKey(kubectl));
  });

  it('given every rendered object, when validated against the Kubernetes API schemas, then none fails', () => {
    const results = validateAgainstSchemas(objects);
    expect(results.filter((r) => r.error !== null)).toEqual([]);
    expect(results).toHaveLength(objects.length);
    expect(new Set(results.map((r) => r.kind))).toEqual(
      new Set([
        'Namespace',
        'ConfigMap',
        'Secret',
        'Service',
        'Deployment',
        'StatefulSet',
        'PodDisruptionBudget',
        'HorizontalPodAutoscaler',
        'NetworkPolicy',
      ]),
    );
  });

  it('given a malformed Deployment, when validated, then the schema check names the field (the check is not vacuous)', () => {
    const bad = JSON.parse(JSON.stringify(find('Deployment', 'intake'))) as K8sObject;
    (
      spec(bad)['template'] as { spec: { containers: Array<{ ports: Array<{ containerPort: unknown }> }> } }
    ).spec.containers[0].ports[0].containerPort = 'http';
    const [result] = validateAgainstSchemas([bad]);
    expect(result.error).toMatch(/containerPort/);
  });

  describe.each(Object.keys(SERVICES) as Service[])('the %s Deployment', (name) => {
    const deployment = find('Deployment', name);
    const container = deployment ? containersOf(deployment)[0] : undefined;
    const env = container ? envOf(container) : new Map<string, string | undefined>();
    const config = new SERVICES[name]();

    it('runs its own image, tagged as the kustomization says', () => {
      expect(container?.image).toBe(`conclave/${name}:latest`);
      expect(existsSync(join(ROOT, 'apps', name, 'src/main.ts'))).toBe(true);
    });

    it('sets only environment variables the service reads, each with a value its config accepts', () => {
      const reads = envNamesOf(SERVICES[name]);
      const unknown = [...env.keys()].filter((k) => !reads.has(k) && !RUNTIME_ENV.some((r) => r.test(k)));
      expect(unknown).toEqual([]);
      for (const e of container?.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref)
          expect({
            [e.name]: (find('Secret', ref.name)?.['stringData'] as Record<string, string> | undefined)?.[ref.key] !== undefined,
          }).toEqual({ [e.name]: true });
      }
    });

    it('listens where its probes, Service and metrics annotations point, on the port the service opens', () => {
      const port = Number(env.get('HTTP_PORT') ?? config.httpPort);
      expect(port).toBe(config.httpPort);
      expect(container?.ports).toEqual([{ name: 'http', containerPort: port }]);
      const healthPaths = ['healthz', 'readyz'].filter((p) =>
        Object.getOwnPropertyNames(HealthController.prototype).some(
          (m) => Reflect.getMetadata(PATH_METADATA, (HealthController.prototype as never)[m]) === p,
        ),
      );
      expect(healthPaths).toEqual(['healthz', 'readyz']);
      expect(container?.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(container?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(container?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
      expect(env.get('HTTP_HOST')).toBe('0.0.0.0');
      const annotations = (spec(deployment)['template'] as { metadata: { annotations: Record<string, string> } }).metadata.annotations;
      expect(annotations['prometheus.io/port']).toBe(String(port));
      const service = find('Service', name);
      expect((spec(service)['ports'] as unknown[])[0]).toEqual({ name: 'http', port, targetPort: 'http' });
      expect(spec(service)['selector']).toEqual({ 'app.kubernetes.io/name': name });
    });

    it('runs at least two replicas, spread over nodes and zones, with a budget that lets a drain evict one at a time', () => {
      const replicas = spec(deployment)['replicas'] as number;
      expect(replicas).toBeGreaterThanOrEqual(2);
      const spread = (
        spec(deployment)['template'] as { spec: { topologySpreadConstraints: Array<{ topologyKey: string; labelSelector: unknown }> } }
      ).spec.topologySpreadConstraints;
      expect(spread.map((s) => s.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
      for (const s of spread) expect(s.labelSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': name } });
      const pdb = spec(find('PodDisruptionBudget', name));
      expect(pdb).toEqual({ maxUnavailable: 1, selector: { matchLabels: { 'app.kubernetes.io/name': name } } });
    });

    const reactor = AUTOSCALED[name];
    it(
      reactor
        ? `is autoscaled from its replica count on CPU and on the lag of its ${reactor} reactor`
        : 'has no autoscaler: every replica does the whole work (or one writer holds a lease), so more add no throughput',
      () => {
        const hpa = find('HorizontalPodAutoscaler', name);
        if (!reactor) {
          expect(hpa).toBeUndefined();
          return;
        }
        const s = spec(hpa);
        expect(s['scaleTargetRef']).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name });
        expect(s['minReplicas']).toBe(spec(deployment)['replicas']);
        expect(s['maxReplicas'] as number).toBeGreaterThan(s['minReplicas'] as number);
        const metrics = s['metrics'] as Array<Record<string, { name?: string; metric?: { name: string; selector: unknown } }>>;
        expect(metrics.map((m) => m['resource']?.name ?? m['pods']?.metric?.name)).toEqual(['cpu', 'conclave_reactor_lag_events']);
        expect(metrics[1]['pods']?.metric?.selector).toEqual({ matchLabels: { reactor } });
        // The reactor exists in the service under that name.
        const sources = readFileSync(join(ROOT, 'apps', name, 'src/app', reactorFile[name] ?? ''), 'utf8');
        expect(sources).toContain(`name: '${reactor}'`);
      },
    );
  });

  it('given the network policies, then every service pod takes HTTP only from namespaces labelled for scraping, and the escalation desk also from those labelled for ingress; NATS pods are not selected by them', () => {
    const ingressOf = (name: string) => {
      const s = spec(find('NetworkPolicy', name));
      expect(s['policyTypes']).toEqual(['Ingress']);
      return { selector: s['podSelector'], rules: s['ingress'] };
    };
    const onlyFrom = (label: string) => [
      { from: [{ namespaceSelector: { matchLabels: { [label]: 'true' } } }], ports: [{ port: 'http', protocol: 'TCP' }] },
    ];
    expect(ingressOf('conclave-services-http')).toEqual({
      selector: { matchLabels: { 'app.kubernetes.io/component': 'service' } },
      rules: onlyFrom('conclave.dev/scrape'),
    });
    expect(ingressOf('conclave-escalation-ingress')).toEqual({
      selector: { matchLabels: { 'app.kubernetes.io/name': 'escalation' } },
      rules: onlyFrom('conclave.dev/ingress'),
    });
    for (const name of Object.keys(SERVICES)) {
      const deployment = find('Deployment', name);
      const template = spec(deployment)['template'] as { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } };
      // The policy's selector picks every service pod, and its named port is the one the service listens on.
      expect(template.metadata.labels['app.kubernetes.io/component']).toBe('service');
      expect(template.spec.containers[0].ports?.map((p) => p.name)).toContain('http');
    }
    const nats = find('StatefulSet', 'nats') as { spec: { template: { metadata: { labels: Record<string, string> } } } } | undefined;
    expect(nats?.spec.template.metadata.labels['app.kubernetes.io/component']).not.toBe('service');
  });

  it('given the council Deployment, then it posts to ACP as its own participant: its key comes from the Secret conclave-council-key, mounted read-only where CONCLAVE_COUNCIL_KEY_FILE points and readable by its user only through its group', () => {
    const deployment = find('Deployment', 'council');
    const pod = (spec(deployment)['template'] as { spec: Record<string, any> }).spec;
    const container = containersOf(deployment as K8sObject)[0] as Container & {
      volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
    };
    const env = envOf(container);
    expect(env.get('CONCLAVE_COUNCIL_PARTICIPANT')).toBe('council-service');
    const keyFile = env.get('CONCLAVE_COUNCIL_KEY_FILE') ?? '';
    const mount = container.volumeMounts.find((m) => keyFile.startsWith(`${m.mountPath}/`));
    expect(mount).toMatchObject({ name: 'council-key', readOnly: true });
    const volume = (pod['volumes'] as Array<{ name: string; secret?: Record<string, any> }>).find((v) => v.name === mount?.name);
    const item = keyFile.slice((mount?.mountPath.length ?? 0) + 1);
    expect(volume?.secret).toEqual({ secretName: 'conclave-council-key', defaultMode: 0o440, items: [{ key: item, path: item }] });
    // The files of a Secret volume belong to root, with the pod's fsGroup as their group: uid 1000 reads through it.
    expect(pod['securityContext']).toMatchObject({ runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 });
    // The Secret is in the kustomization, holding that key (a placeholder to replace).
    expect(Object.keys((find('Secret', 'conclave-council-key')?.['stringData'] as Record<string, string>) ?? {})).toEqual([item]);
    // The service accepts the values as deployed (empty domains: an administrator registers it).
    const config = loadConfig(CouncilConfig, Object.fromEntries([...env].filter((e): e is [string, string] => e[1] !== undefined)));
    expect(config).toMatchObject({ bridgeParticipant: 'council-service', bridgeKeyFile: keyFile });
    // No other Deployment mounts the key.
    for (const other of objects.filter((o) => o.kind === 'Deployment' && o.metadata.name !== 'council')) {
      const volumes = (spec(other)['template'] as { spec: { volumes?: Array<{ secret?: { secretName: string } }> } }).spec.volumes ?? [];
      expect({ name: other.metadata.name, key: volumes.some((v) => v.secret?.secretName === 'conclave-council-key') }).toEqual({
        name: other.metadata.name,
        key: false,
      });
    }
  });

  it('given the NATS StatefulSet, then it runs the pinned release (>= 2.10.23, as deploy/nats/server-version) with sync_interval: always', () => {
    const pinned = readFileSync(join(ROOT, 'deploy/nats/server-version'), 'utf8').trim();
    expect(compareVersions(pinned.split('.').map(Number), [2, 10, 23])).toBeGreaterThanOrEqual(0);
    const statefulSet = find('StatefulSet', 'nats');
    expect(statefulSet).toBeDefined();
    const nats = statefulSet && containersOf(statefulSet).find((c) => c.name === 'nats');
    expect(nats?.image).toBe(`nats:${pinned}-alpine`);
    const conf = (find('ConfigMap', 'nats-config')?.['data'] as Record<string, string>)['nats.conf'];
    expect(conf).toMatch(/^\s*sync_interval: always\s*$/m);
    // kustomize cannot load files outside deploy/k8s, so the accounts are a copy: the same bytes.
    expect((find('ConfigMap', 'nats-config')?.['data'] as Record<string, string>)['accounts.conf']).toBe(
      readFileSync(join(ROOT, 'deploy/nats/nats-accounts.conf'), 'utf8'),
    );
    expect(spec(find('StatefulSet', 'nats'))['replicas']).toBe(3);
    expect(find('ConfigMap', 'conclave-env')?.['data']).toMatchObject({ CONCLAVE_LOG_REPLICAS: '3' });
  });
});

const reactorFile: Partial<Record<Service, string>> = {
  intake: 'proposal-index.ts',
  escalation: 'escalation-inbox.ts',
  council: 'evaluation-projection.ts',
};
