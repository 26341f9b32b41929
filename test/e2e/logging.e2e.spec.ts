import { headers as natsHeaders } from 'nats';
import { formatLine } from '@conclave/service-kit';
import { ConclaveHarness, eventually } from '../support/conclave-harness';

/**
 * Structured logs of a real intake (LOG_FORMAT=json): one JSON object per line, the command's
 * ids and trace id on its lines, never its payload; probes and query strings never logged.
 */
describe('logging: JSON lines with the ids of the command in hand', () => {
  const h = new ConclaveHarness({ LOG_FORMAT: 'json', LOG_LEVEL: 'debug' });
  const captured: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const SECRET = 'payload-secret-7f3a';
  const lines = () =>
    captured
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'));
  const records = () => lines().map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    // pino writes to process.stdout: keep what the services log (and out of the test output).
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      captured.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof process.stdout.write;
    await h.start('intake');
  });
  afterAll(async () => {
    await h.stop();
    process.stdout.write = write;
  });

  it('every line is one JSON object with level, time, service and message', async () => {
    await eventually(async () => (lines().length > 0 ? true : undefined), 5_000, 'a log line');
    for (const r of records()) {
      expect(r).toMatchObject({ service: 'intake' });
      expect(typeof r['level']).toBe('number');
      expect(Date.parse(r['time'] as string)).toBeGreaterThan(0);
      expect(typeof r['msg']).toBe('string');
    }
    expect(records().some((r) => String(r['msg']).includes('intake ready on'))).toBe(true);
  });

  it("a command's lines carry its subject, proposal_id, command_id and the trace id of its traceparent; never its payload", async () => {
    const p = await h.client.propose({
      domain: 'ops.deploy',
      author: 'agent-ops',
      payload: { note: SECRET },
      quorum: 3,
      created_at: new Date().toISOString(),
    });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const hdrs = natsHeaders();
    hdrs.set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`);
    const body = {
      schema_version: '1.0',
      proposal_id: p.proposal_id,
      response_type: 'endorse',
      reason: null,
      participant_id: 'agent-a',
      confidence: 0.8,
      domain_authority: 0.9,
      trust_score: 0.9,
    };
    const reply = JSON.parse(
      new TextDecoder().decode(
        (await h.nc.request(`${h.prefix}.v1.respond`, new TextEncoder().encode(JSON.stringify(body)), { timeout: 5_000, headers: hdrs }))
          .data,
      ),
    );
    expect(reply).toMatchObject({ ok: true });

    const respond = await eventually(
      async () => records().find((r) => r['context'] === 'Command' && String(r['msg']).startsWith('v1.respond')),
      5_000,
      'the respond line',
    );
    expect(respond).toMatchObject({ subject: 'v1.respond', proposal_id: p.proposal_id, trace_id: traceId, level: 20 });
    expect(respond['command_id']).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(String(respond['msg'])).toMatch(/^v1\.respond ok in \d+\.\d ms$/);
    const propose = records().find((r) => r['context'] === 'Command' && String(r['msg']).startsWith('v1.propose'));
    expect(propose).toMatchObject({ subject: 'v1.propose', proposal_id: p.proposal_id });
    expect(propose?.['command_id']).not.toBe(respond['command_id']);

    await expect(h.client.get('01ARZ3NDEKTSV4RRFFQ69G5FAV')).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
    const refused = await eventually(
      async () => records().find((r) => String(r['msg']).startsWith('v1.get PROPOSAL_NOT_FOUND')),
      5_000,
      'the refused get',
    );
    expect(refused).toMatchObject({ proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', subject: 'v1.get' });

    expect(captured.join('')).not.toContain(SECRET);
  });

  it('HTTP: probes and scrapes are not logged; other requests are, without query string or headers', async () => {
    const url = await h.instances[0].app.getUrl();
    const before = records().length;
    await fetch(`${url}/healthz`);
    await fetch(`${url}/metrics`);
    await fetch(`${url}/readyz`);
    await fetch(`${url}/no-such-route?token=hunter2`, { headers: { authorization: 'Bearer hunter2' } });
    const line = await eventually(
      async () =>
        records()
          .slice(before)
          .find((r) => (r['req'] as { path?: string } | undefined)?.path === '/no-such-route'),
      5_000,
      'the request line',
    );
    expect(line).toMatchObject({ req: { method: 'GET', path: '/no-such-route' }, res: { status: 404 } });
    const after = records().slice(before);
    expect(after.some((r) => ['/healthz', '/metrics', '/readyz'].includes((r['req'] as { path?: string } | undefined)?.path ?? ''))).toBe(
      false,
    );
    expect(JSON.stringify(after)).not.toContain('hunter2');
  });

  it('the text format (npm run up) prints one readable line per record', () => {
    const line = formatLine(
      JSON.stringify({
        level: 30,
        time: '2026-01-02T03:04:05.678Z',
        service: 'intake',
        context: 'Command',
        msg: 'v1.respond ok in 1.2 ms',
        proposal_id: 'P1',
        command_id: 'C1',
      }),
    );
    expect(line).toBe('03:04:05.678 INFO  intake [Command] v1.respond ok in 1.2 ms proposal_id=P1 command_id=C1');
    expect(formatLine('not json')).toBe('not json');
  });
});
