import { withTraceHeaders } from './tracing';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe('the SDK sends a W3C traceparent on every request', () => {
  it('given no OpenTelemetry SDK and no active trace, each request starts a new sampled trace', async () => {
    const sent = await Promise.all(Array.from({ length: 20 }, () => withTraceHeaders('acp.v1.propose', async (h) => h.get('traceparent'))));
    for (const header of sent) expect(header).toMatch(TRACEPARENT);
    const traceIds = sent.map((header) => TRACEPARENT.exec(header)?.[1]);
    expect(new Set(traceIds).size).toBe(sent.length);
    expect(traceIds).not.toContain('0'.repeat(32));
  });

  it('passes the reply or the refusal through unchanged', async () => {
    await expect(withTraceHeaders('acp.v1.get', async () => ({ ok: true }))).resolves.toEqual({ ok: true });
    const refusal = Object.assign(new Error('PROPOSAL_NOT_FOUND: no such proposal'), { code: 'PROPOSAL_NOT_FOUND' });
    await expect(withTraceHeaders('acp.v1.get', async () => Promise.reject(refusal))).rejects.toBe(refusal);
  });
});
