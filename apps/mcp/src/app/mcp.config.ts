/** What the MCP server needs to know, read from the environment at the edge and checked at start. */
export interface McpConfig {
  transport: 'stdio' | 'http';
  natsUrl: string;
  natsUser?: string;
  natsPassword?: string;
  natsCredsFile?: string;
  natsInboxPrefix?: string;
  prefix: string;
  streamSuffix: string;
  councilPrefix?: string;
  /** Who this server acts for. */
  participantId: string;
  /** The participant's Ed25519 private key (PKCS#8 PEM file): commands are signed when it is set. */
  keyFile?: string;
  councilMemberId?: string;
  /** Start taking council tasks at once (otherwise on the first next_council_task). */
  councilMember: boolean;
  httpHost: string;
  httpPort: number;
  httpToken?: string;
}

export class McpConfigError extends Error {}

/** The configuration from environment variables (names shared with the `conclave` CLI where they mean the same). */
export function loadMcpConfig(env: Record<string, string | undefined>): McpConfig {
  const transport = env['CONCLAVE_MCP_TRANSPORT'] ?? 'stdio';
  if (transport !== 'stdio' && transport !== 'http')
    throw new McpConfigError(`CONCLAVE_MCP_TRANSPORT must be stdio or http, not ${transport}`);
  const participantId = env['CONCLAVE_PARTICIPANT'];
  if (!participantId) throw new McpConfigError('CONCLAVE_PARTICIPANT is required: the participant this MCP server acts for');
  const port = Number(env['CONCLAVE_MCP_HTTP_PORT'] ?? '8090');
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new McpConfigError(`CONCLAVE_MCP_HTTP_PORT is not a port: ${env['CONCLAVE_MCP_HTTP_PORT']}`);
  const host = env['CONCLAVE_MCP_HTTP_HOST'] ?? '127.0.0.1';
  const token = env['CONCLAVE_MCP_HTTP_TOKEN'] || undefined;
  const loopback = ['127.0.0.1', 'localhost', '::1'].includes(host);
  if (transport === 'http' && !loopback && !token) {
    throw new McpConfigError(`CONCLAVE_MCP_HTTP_TOKEN is required to listen on ${host}: whoever reaches the port acts as ${participantId}`);
  }
  const member = env['CONCLAVE_MCP_COUNCIL_MEMBER'] ?? 'false';
  if (member !== 'true' && member !== 'false') throw new McpConfigError('CONCLAVE_MCP_COUNCIL_MEMBER must be true or false');
  return {
    transport,
    natsUrl: env['NATS_URL'] ?? 'nats://127.0.0.1:4222',
    natsUser: env['NATS_USER'] || undefined,
    natsPassword: env['NATS_PASSWORD'] || undefined,
    natsCredsFile: env['NATS_CREDS'] || undefined,
    natsInboxPrefix: env['NATS_INBOX_PREFIX'] || undefined,
    prefix: env['CONCLAVE_SUBJECT_PREFIX'] ?? 'acp',
    streamSuffix: env['CONCLAVE_STREAM_SUFFIX'] ?? '',
    councilPrefix: env['CONCLAVE_COUNCIL_PREFIX'] || undefined,
    participantId,
    keyFile: env['CONCLAVE_KEY_FILE'] || undefined,
    councilMemberId: env['CONCLAVE_COUNCIL_MEMBER_ID'] || undefined,
    councilMember: member === 'true',
    httpHost: host,
    httpPort: port,
    httpToken: token,
  };
}
