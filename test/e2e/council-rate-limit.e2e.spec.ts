import { validateVerdict, type MemberVerdict } from '@conclave/council-protocol';
import { SecureConclaveHarness } from '../support/conclave-harness';

const PER_SECOND = 1;
const BURST = 3;
const ANSWERS = 10;

/**
 * A member answering faster than its allowance, as a member in any language would see it: the
 * council service's verdict on a refused answer says whether to send it again. A RATE_LIMITED
 * refusal comes before the nonce is spent or anything is recorded, so the same answer is still
 * good after the hint: `retry: true` with `retry_after_ms`. Any other refusal stays final.
 */
describe('Council member answers refused RATE_LIMITED (authentication required, real NATS)', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_RATE_LIMIT_PER_SECOND: String(PER_SECOND),
    CONCLAVE_RATE_LIMIT_BURST: String(BURST),
  });
  const member = 'rl-member';

  beforeAll(async () => {
    await h.start('intake', 'council');
    await h.seed([{ participant_id: member }]);
  });
  afterAll(() => h.stop());

  it(`given a member allowed ${BURST} at once, when it sends ${ANSWERS} signed answers at once, then each refusal past the allowance is RATE_LIMITED with retry: true and a positive retry_after_ms, and the others keep retry: false`, async () => {
    const subject = `c${h.prefix}.v1.answers.${member}`;
    const replies = await Promise.all(
      Array.from({ length: ANSWERS }, (_, i) =>
        h.signedRequest<MemberVerdict>(member, subject, {
          run_id: 'no-such-run',
          task_id: `task-${i}`,
          ok: false,
          error: { code: 'CANNOT', message: 'cannot do it' },
        }),
      ),
    );
    const verdicts = replies.map((r) => r.reply);
    // Every verdict is what the member API's schema describes.
    for (const v of verdicts) expect(validateVerdict(v)).toEqual(v);
    const limited = verdicts.filter((v) => !v.ok && v.error.code === 'RATE_LIMITED');
    const others = verdicts.filter((v) => v.ok || v.error.code !== 'RATE_LIMITED');
    expect(limited.length).toBeGreaterThanOrEqual(ANSWERS - BURST - 1);
    for (const v of limited) {
      expect(v).toMatchObject({ ok: false, retry: true });
      expect(!v.ok && v.error.retry_after_ms).toBeGreaterThan(0);
    }
    expect(others.length).toBeGreaterThan(0);
    for (const v of others) expect(v.retry).toBe(false);
  });
});
