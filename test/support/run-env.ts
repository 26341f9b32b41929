/**
 * The settings that give a test run names of its own (subject prefix, event stream, consumer
 * streams), with authentication off and no expiry grace: shared by in-process services and
 * services run as processes.
 */
export function runEnv(run: string, natsUrl: string): Record<string, string> {
  const prefix = `t${run.toLowerCase()}`;
  return {
    NATS_URL: natsUrl,
    CONCLAVE_SUBJECT_PREFIX: prefix,
    CONCLAVE_COUNCIL_PREFIX: `c${prefix}`,
    CONCLAVE_EVENT_STREAM: `EVT_${run}`,
    CONCLAVE_EVENT_SUBJECT_PREFIX: `evt${run.toLowerCase()}`,
    CONCLAVE_STREAM_SUFFIX: run,
    CONCLAVE_AUTH_MODE: 'off',
    CONCLAVE_EXPIRY_GRACE_MS: '0',
    HTTP_HOST: '127.0.0.1',
    LOG_LEVEL: process.env['CONCLAVE_TEST_LOG_LEVEL'] ?? 'warn',
  };
}
