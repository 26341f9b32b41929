import { ConclaveError, ConclaveUnavailableError, CouncilRequestError } from '@conclave/sdk';
import { toToolError } from './conclave-tools';

describe('toToolError', () => {
  it('given a RATE_LIMITED refusal the SDK could not wait out, then the tool error is retryable and carries retry_after_ms', () => {
    const acp = new ConclaveError({ code: 'RATE_LIMITED', message: 'too many commands', retry_after_ms: 180 });
    expect(toToolError(acp).body).toEqual({ code: 'RATE_LIMITED', message: 'too many commands', retryable: true, retry_after_ms: 180 });
    const council = new CouncilRequestError({ code: 'RATE_LIMITED', message: 'too many commands', retry_after_ms: 90 });
    expect(toToolError(council).body).toMatchObject({ code: 'RATE_LIMITED', retryable: true, retry_after_ms: 90 });
  });

  it('given any other refusal, then it is not retryable and has no hint; an unanswered call is retryable', () => {
    const forbidden = new ConclaveError({ code: 'FORBIDDEN', message: 'no grant', field: 'domain' });
    expect(toToolError(forbidden).body).toEqual({ code: 'FORBIDDEN', message: 'no grant', field: 'domain', retryable: false });
    const unanswered = new ConclaveUnavailableError('acp.v1.propose', { cause: new Error('timeout') });
    expect(toToolError(unanswered).body).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  });
});
