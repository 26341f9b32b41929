import { loadMcpConfig, McpConfigError } from './mcp.config';

describe('MCP server configuration, checked at start', () => {
  it('given only a participant, then stdio on the local NATS with the default prefix, unsigned', () => {
    expect(loadMcpConfig({ CONCLAVE_PARTICIPANT: 'agent-1' })).toMatchObject({
      transport: 'stdio',
      natsUrl: 'nats://127.0.0.1:4222',
      prefix: 'acp',
      participantId: 'agent-1',
      keyFile: undefined,
      httpHost: '127.0.0.1',
      httpPort: 8090,
    });
  });

  it.each([
    [{}, 'CONCLAVE_PARTICIPANT is required'],
    [{ CONCLAVE_PARTICIPANT: 'a', CONCLAVE_MCP_TRANSPORT: 'sse' }, 'CONCLAVE_MCP_TRANSPORT must be stdio or http'],
    [{ CONCLAVE_PARTICIPANT: 'a', CONCLAVE_MCP_HTTP_PORT: '70000' }, 'CONCLAVE_MCP_HTTP_PORT is not a port'],
    [{ CONCLAVE_PARTICIPANT: 'a', CONCLAVE_MCP_COUNCIL_MEMBER: 'yes' }, 'CONCLAVE_MCP_COUNCIL_MEMBER must be true or false'],
  ])('given %j, then a configuration error naming the variable', (env, message) => {
    expect(() => loadMcpConfig(env)).toThrow(McpConfigError);
    expect(() => loadMcpConfig(env)).toThrow(message);
  });

  it('given http on an address other than loopback, then a bearer token is required: whoever reaches the port acts as the participant', () => {
    const open = { CONCLAVE_PARTICIPANT: 'a', CONCLAVE_MCP_TRANSPORT: 'http', CONCLAVE_MCP_HTTP_HOST: '0.0.0.0' };
    expect(() => loadMcpConfig(open)).toThrow('CONCLAVE_MCP_HTTP_TOKEN is required to listen on 0.0.0.0');
    expect(loadMcpConfig({ ...open, CONCLAVE_MCP_HTTP_TOKEN: 's3cret' })).toMatchObject({ httpHost: '0.0.0.0', httpToken: 's3cret' });
  });
});
