import { Expose, Type } from 'class-transformer';
import { IsIn, IsInt, IsString, Min } from 'class-validator';
import { decide, foldProposal } from '@conclave/acp-protocol';
import type { ProposalCommand } from '@conclave/acp-protocol';
import { ulid } from 'ulid';
import { ConfigError, loadConfig } from './config';
import { deciderConfigFrom } from './runtime';
import { ServiceConfig } from './service-config';

class ExampleConfig {
  @Expose({ name: 'NATS_URL' })
  @IsString()
  natsUrl = 'nats://127.0.0.1:4222';

  @Expose({ name: 'MAX_PAYLOAD_BYTES' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  maxPayloadBytes = 1024;

  @Expose({ name: 'AUTH_MODE' })
  @IsIn(['required', 'off'])
  authMode = 'required';
}

describe('loadConfig (config validated once at start)', () => {
  it('given no variables, then the defaults', () => {
    expect(loadConfig(ExampleConfig, {})).toMatchObject({ natsUrl: 'nats://127.0.0.1:4222', maxPayloadBytes: 1024, authMode: 'required' });
  });

  it('given variables, then they are read and converted', () => {
    expect(loadConfig(ExampleConfig, { MAX_PAYLOAD_BYTES: '2048', AUTH_MODE: 'off', UNRELATED: 'x' })).toMatchObject({
      maxPayloadBytes: 2048,
      authMode: 'off',
    });
  });

  it('given bad variables, then one ConfigError naming every bad one', () => {
    let error: unknown;
    try {
      loadConfig(ExampleConfig, { MAX_PAYLOAD_BYTES: 'lots', AUTH_MODE: 'maybe' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.join('\n')).toMatch(/maxPayloadBytes/);
    expect((error as ConfigError).problems.join('\n')).toMatch(/authMode/);
  });
});

describe('ServiceConfig: the expiry grace (RFC 15.5)', () => {
  const T0 = '2026-01-01T00:00:00.000Z';
  const EXPIRES_AT = '2026-01-01T00:05:00.000Z';
  const msAfterExpiry = (ms: number) => new Date(Date.parse(EXPIRES_AT) + ms).toISOString();
  const proposalId = ulid();
  const submitted = foldProposal(
    decide(
      {
        type: 'SubmitProposal',
        command_id: ulid(),
        now: T0,
        actor: 'agent-a',
        data: {
          proposal_id: proposalId,
          type: 'proposal',
          domain: 'ops',
          author: 'agent-a',
          payload: { action: 'deploy' },
          quorum: 2,
          created_at: T0,
          expires_at: EXPIRES_AT,
        },
      } as ProposalCommand,
      foldProposal([]),
    ),
  );
  const expireAt = (now: string): ProposalCommand => ({
    type: 'ExpireProposal',
    command_id: ulid(),
    now,
    actor: 'sweeper',
    data: { proposal_id: proposalId },
  });

  it('given no CONCLAVE_EXPIRY_GRACE_MS, then the services use 250 ms: expiry is refused at expires_at + 249 ms and recorded at + 250 ms', () => {
    const config = loadConfig(ServiceConfig, {});
    expect(config.expiryGraceMs).toBe(250);
    const decider = deciderConfigFrom(config);
    expect(decider.expiryGraceMs).toBe(250);

    expect(() => decide(expireAt(msAfterExpiry(249)), submitted, decider)).toThrow(
      expect.objectContaining({ code: 'CONFLICT', message: expect.stringMatching(/grace 250 ms/) }),
    );
    expect(decide(expireAt(msAfterExpiry(250)), submitted, decider)).toMatchObject([
      { type: 'ProposalExpired', data: { resolution: { outcome: 'expired', trigger: 'timeout' } } },
    ]);
  });

  it('given CONCLAVE_EXPIRY_GRACE_MS=0 (as the end-to-end tests run), then expiry is recorded at expires_at; a negative grace refuses to start', () => {
    const decider = deciderConfigFrom(loadConfig(ServiceConfig, { CONCLAVE_EXPIRY_GRACE_MS: '0' }));
    expect(decider.expiryGraceMs).toBe(0);
    expect(decide(expireAt(EXPIRES_AT), submitted, decider)).toMatchObject([{ type: 'ProposalExpired' }]);
    expect(() => loadConfig(ServiceConfig, { CONCLAVE_EXPIRY_GRACE_MS: '-1' })).toThrow(ConfigError);
  });
});
