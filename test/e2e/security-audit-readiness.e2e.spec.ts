import { RetentionPolicy, StorageType } from 'nats';
import { AUDIT_PATTERNS, AuditEntry } from '@conclave/registry-protocol';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

type Readyz = { status: number; checks: Record<string, boolean> };

/**
 * The audit service's readiness includes its feed of refused commands, with authentication
 * required, against real NATS: a poison message does not stop the feed (it is recorded as
 * malformed and /readyz stays ready); a feed that is stopped (its stream deleted) shows as not
 * ready at once, naming the feed, and ready again when the stream is back.
 */
describe('security: /readyz of the audit service shows the rejections feed', () => {
  const h = new SecureConclaveHarness();
  let auditUrl = '';

  const readyz = async (): Promise<Readyz> => {
    const res = await fetch(`${auditUrl}/readyz`);
    const body = (await res.json()) as { checks?: Record<string, boolean> };
    return { status: res.status, checks: body.checks ?? {} };
  };
  const rejections = () => ({
    stream: `${h.env['CONCLAVE_EVENT_STREAM']}_REJECTIONS`,
    subject: `${h.env['CONCLAVE_EVENT_SUBJECT_PREFIX']}.audit.rejections`,
  });
  const unsignedList = () => h.nc.request(`${h.prefix}.v1.list`, new TextEncoder().encode('{}'), { timeout: 5_000 });
  const entries = async (action: string): Promise<AuditEntry[]> =>
    (await h.admin.call<{ entries: AuditEntry[] }>(AUDIT_PATTERNS.query, { action, limit: 1000 })).entries;

  beforeAll(async () => {
    await h.start('intake', 'audit');
    auditUrl = (await h.instances.find((i) => i.name === 'audit')!.app.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(() => h.stop());

  it('given a running audit service, then /readyz is 200 and names the rejections feed among its checks', async () => {
    const ready = await eventually(async () => ((await readyz()).status === 200 ? readyz() : undefined), 15_000, 'audit ready');
    expect(ready.checks).toMatchObject({ 'audit-rejections-feed': true });
  });

  it('given an attacker publishes a poison message on the rejections subject, then the feed records it as malformed, goes on, and /readyz stays 200', async () => {
    const js = h.nc.jetstream();
    await js.publish(rejections().subject, new TextEncoder().encode('\u0000 not a record {'));
    await unsignedList();
    await eventually(async () => (await entries('rejected:malformed-record'))[0], 10_000, 'the poison recorded as malformed');
    await eventually(async () => (await entries('rejected:list'))[0], 10_000, 'a real refusal after it');
    expect(await readyz()).toMatchObject({ status: 200, checks: { 'audit-rejections-feed': true } });
  });

  it('given the rejections stream is deleted under the service, then /readyz goes 503 naming the feed; when the stream is back, 200 again', async () => {
    const jsm = await h.nc.jetstreamManager();
    const info = await jsm.streams.info(rejections().stream);
    await jsm.streams.delete(rejections().stream);

    const down = await eventually(
      async () => {
        const r = await readyz();
        return r.status === 503 ? r : undefined;
      },
      30_000,
      '/readyz not ready',
    );
    expect(down.checks['audit-rejections-feed']).toBe(false);

    await jsm.streams.add({
      name: info.config.name,
      subjects: info.config.subjects,
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      duplicate_window: info.config.duplicate_window,
    });
    const up = await eventually(
      async () => {
        const r = await readyz();
        return r.status === 200 ? r : undefined;
      },
      30_000,
      '/readyz ready again',
    );
    expect(up.checks['audit-rejections-feed']).toBe(true);
  });
});
