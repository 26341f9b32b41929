import { INestApplication } from '@nestjs/common';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium } from 'playwright-core';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const now = () => new Date().toISOString();
const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

// scripts/test.sh installs Debian's chromium when it is missing; without it this suite reports as skipped, by name.
const describeWithBrowser = existsSync(CHROMIUM) ? describe : describe.skip;

/**
 * Appendix C.4 through the web console, in a real browser (Debian's chromium driven by
 * playwright-core): a tie escalates, the human opens the console, reads the proposal, writes a
 * note, clicks Approve, and sees the decision arrive in the live feed (Server-Sent Events fed
 * from ACP_DECISIONS).
 */
describeWithBrowser('web console in a real browser (chromium via playwright-core)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;
  let base: string;
  let context: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    decisions = new DecisionCollector(h.client);
    const app = h.instances.find((i) => i.name === 'escalation')!.app as INestApplication;
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    profile = mkdtempSync(join(tmpdir(), 'conclave-console-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  });
  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await h.stop();
  });

  it('C.4 given a tie escalated, when a human opens the console, reads it, writes a note and clicks Approve, then the decision arrives in the live feed', async () => {
    const p = await h.client.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { action: 'raise_price', sku: 'PRO-PLAN' },
      quorum: 2,
      created_at: now(),
    });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', ...F, reason: 'margin is thin' });
    await h.client.challenge(p.proposal_id, { participant_id: 'agent-b', ...F, reason: 'churn risk' });
    await decisions.waitFor(p.proposal_id);
    await eventually(async () => ((await h.client.escalations()).some((e) => e.proposal_id === p.proposal_id) ? true : undefined));

    const page = await context.newPage();
    await page.goto(`${base}/`);
    await page.locator('#who').fill('human-pricing-lead');
    await page.locator('#who').dispatchEvent('change');
    // The escalated decision is already in the live feed; the inbox lists the proposal.
    await page.locator(`#feed li[data-proposal-id="${p.proposal_id}"][data-outcome="escalated"]`).waitFor();
    await page.locator(`#inbox li[data-proposal-id="${p.proposal_id}"]`).click();

    const detail = page.getByTestId('detail');
    await detail.getByText('PRO-PLAN').waitFor();
    await detail.getByText('margin is thin').waitFor();
    await detail.getByText('churn risk').waitFor();
    await detail.getByText('Responses (for 0.648 / against 0.648)').waitFor();

    // The note is required: a click without one changes nothing.
    await page.getByTestId('approve').click();
    await page.getByTestId('message').getByText('A note is required').waitFor();
    expect((await h.client.get(p.proposal_id)).status).toBe('escalated');

    await page.getByTestId('note').fill('Pricing change approved after review');
    await page.getByTestId('approve').click();

    const arrived = page.locator(`#feed li[data-proposal-id="${p.proposal_id}"][data-outcome="approved"]`);
    await arrived.waitFor({ timeout: 15_000 });
    expect(await arrived.textContent()).toContain('manual by human-pricing-lead');
    const [, d] = await decisions.waitFor(p.proposal_id, 2);
    expect(d).toMatchObject({
      outcome: 'approved',
      trigger: 'manual',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
    });
    await page.close();
  });
});
