import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadMcpConfig } from '../../apps/mcp/src/app/mcp.config';
import { RunningMcp, startMcp } from '../../apps/mcp/src/app/mcp.app';

const ROOT = resolve(__dirname, '../..');

/** A tool's refusal, as the MCP client sees it: `isError` with the ACP code in structuredContent. */
export class ToolRefusal extends Error {
  constructor(readonly error: { code: string; message: string; field?: string; retryable: boolean }) {
    super(`${error.code}: ${error.message}`);
  }
}

/** The MCP SDK's own client, with the one helper tests need: call a tool, get its JSON or its refusal. */
export class McpAgent {
  constructor(
    readonly client: Client,
    private readonly onClose: () => Promise<void> = async () => undefined,
  ) {}

  async call<T = Record<string, unknown>>(name: string, args: Record<string, unknown> = {}): Promise<T> {
    const result = await this.client.callTool({ name, arguments: args });
    const structured = result.structuredContent as Record<string, unknown> | undefined;
    if (result.isError) throw new ToolRefusal(structured?.['error'] as ToolRefusal['error']);
    // The text content carries the same JSON, for clients that read only text.
    const [text] = result.content as Array<{ type: string; text: string }>;
    expect(JSON.parse(text.text)).toEqual(structured);
    return structured as T;
  }

  /** The refusal a call ends in (fails the test if the call succeeds). */
  async refusal(name: string, args: Record<string, unknown>): Promise<ToolRefusal['error']> {
    try {
      await this.call(name, args);
    } catch (err) {
      if (err instanceof ToolRefusal) return err.error;
      throw err;
    }
    throw new Error(`${name} succeeded; a refusal was expected`);
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.onClose();
  }
}

/** A private key on disk, as an operator gives it to the MCP server (CONCLAVE_KEY_FILE). */
export function keyFile(pem: string): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-mcp-'));
  const path = join(dir, 'agent.pem');
  writeFileSync(path, pem, { mode: 0o600 });
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Starts `apps/mcp` as an MCP client starts a stdio server: a subprocess speaking on stdin/stdout. */
export async function stdioAgent(env: Record<string, string>): Promise<McpAgent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['-r', '@swc-node/register', '-r', 'tsconfig-paths/register', 'apps/mcp/src/main.ts'],
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', TS_NODE_PROJECT: 'tsconfig.base.json', ...env, CONCLAVE_MCP_TRANSPORT: 'stdio' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'conclave-e2e', version: '1.0.0' });
  await client.connect(transport);
  return new McpAgent(client);
}

/** Starts the MCP server on streamable HTTP (port 0) in this process and connects the SDK's HTTP client to it. */
export async function httpAgent(env: Record<string, string>): Promise<McpAgent & { server: RunningMcp; url: URL }> {
  const server = await startMcp(loadMcpConfig({ ...env, CONCLAVE_MCP_TRANSPORT: 'http', CONCLAVE_MCP_HTTP_PORT: '0' }));
  const url = new URL(server.url!);
  const token = env['CONCLAVE_MCP_HTTP_TOKEN'];
  const transport = new StreamableHTTPClientTransport(url, token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  const client = new Client({ name: 'conclave-e2e', version: '1.0.0' });
  await client.connect(transport);
  return Object.assign(new McpAgent(client, () => server.close()), { server, url });
}
