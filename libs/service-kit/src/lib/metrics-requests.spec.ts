import { Logger } from '@nestjs/common';
import { headers as natsHeaders } from 'nats';
import { logFields, logsDebug } from './logging';
import { ConclaveMetrics } from './metrics';
import { logContextObserver, metricsObserver } from './metrics-requests';
import type { ServiceConfig } from './service-config';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

function request() {
  const h = natsHeaders();
  h.set('traceparent', `00-${TRACE_ID}-00f067aa0ba902b7-01`);
  return { pattern: 'v1.respond', subject: 'x.v1.respond', headers: h, body: { proposal_id: 'P1', participant_id: 'a' } };
}

describe('logContextObserver: the command log', () => {
  let debug: jest.SpyInstance;
  beforeEach(() => {
    debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
  });
  afterEach(() => debug.mockRestore());

  it.each([true, false])('with debug lines on: %s, the handler runs in the log context of the request', async (on) => {
    const observer = logContextObserver({ debug: on });
    let seen: Record<string, unknown> | undefined;

    const reply = await observer.around!(request(), async () => {
      seen = { ...logFields() };
      return { ok: true };
    });

    expect(reply).toEqual({ ok: true });
    expect(seen).toMatchObject({ subject: 'v1.respond', proposal_id: 'P1', trace_id: TRACE_ID });
  });

  it('with debug lines on, each request closes with a line of its result code', async () => {
    const observer = logContextObserver({ debug: true });

    await observer.around!(request(), async () => ({ ok: false, error: { code: 'PROPOSAL_NOT_FOUND' } }));
    await expect(
      observer.around!(request(), async () => {
        throw Object.assign(new Error('refused'), { code: 'FORBIDDEN' });
      }),
    ).rejects.toThrow('refused');

    expect(debug.mock.calls.map((c) => String(c[0]))).toEqual([
      expect.stringMatching(/^v1\.respond PROPOSAL_NOT_FOUND in \d+\.\d ms$/),
      expect.stringMatching(/^v1\.respond FORBIDDEN in \d+\.\d ms$/),
    ]);
  });

  it('with debug lines off, no line is formatted, and a throw still reaches the caller', async () => {
    const observer = logContextObserver({ debug: false });

    await observer.around!(request(), async () => ({ ok: true }));
    await expect(
      observer.around!(request(), async () => {
        throw new Error('broken');
      }),
    ).rejects.toThrow('broken');

    expect(debug).not.toHaveBeenCalled();
  });

  it('LOG_LEVEL debug and verbose let debug lines through; the others do not', () => {
    expect(['error', 'warn', 'log', 'info', 'debug', 'verbose', 'unknown'].filter(logsDebug)).toEqual(['debug', 'verbose']);
  });
});

describe('metricsObserver: refusals by the field refused', () => {
  const refusal = (field: unknown) => ({ ok: false, error: { code: 'FORBIDDEN', message: 'no', field } });
  const reasonsOf = async (fields: unknown[]) => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const observer = metricsObserver(metrics);
    for (const field of fields) observer.replied!(request(), refusal(field), 0.001);
    const text = await metrics.exposition();
    return text
      .split('\n')
      .filter((l) => l.startsWith('conclave_auth_refusals_total{'))
      .map((l) => /reason="([^"]*)"/.exec(l)?.[1])
      .sort();
  };

  it("given refusals naming a field path of the council's GoalContract, when counted, then the path is the reason", async () => {
    expect(await reasonsOf(['goal_contract.domain', 'domain'])).toEqual(['domain', 'goal_contract.domain']);
  });

  it('given refusals naming no field, an id-like value or free text, when counted, then each is counted as `none`: no label value outside the fixed field names', async () => {
    expect(await reasonsOf([undefined, 'P01JABCDEF', 'items.0.domain', 'a field with spaces', 'x'.repeat(41)])).toEqual(['none']);
  });
});
