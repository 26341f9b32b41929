import { createServer, IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ConclaveTools, ToolError } from './conclave-tools';

export const SERVER_INFO = { name: 'conclave', version: '1.0.0' };

const INSTRUCTIONS =
  'Conclave decides by weighted vote among agents (the Agent Consensus Protocol). Propose with `propose`, ' +
  'vote with `endorse`/`challenge`, follow with `wait_for_decision`, ask why with `explain_decision`. ' +
  'A failed call returns isError with structuredContent.error.code (the ACP code, e.g. PROPOSAL_NOT_PENDING).';

/** One MCP server (one session) over the shared tools. */
export function createMcpServer(tools: ConclaveTools): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.list() }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    try {
      const result = await tools.call(request.params.name, request.params.arguments);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    } catch (err) {
      // A refusal is a tool result the model can read and act on, not a protocol failure.
      const body = err instanceof ToolError ? err.body : { code: 'INTERNAL', message: String(err), retryable: false };
      return { isError: true, content: [{ type: 'text', text: `${body.code}: ${body.message}` }], structuredContent: { error: body } };
    }
  });
  return server;
}

/** Serves MCP on stdin/stdout (what an MCP client starts as a subprocess). */
export async function serveStdio(tools: ConclaveTools): Promise<Server> {
  const server = createMcpServer(tools);
  await server.connect(new StdioServerTransport());
  return server;
}

export interface HttpOptions {
  host: string;
  port: number;
  /** When set, every request must carry `Authorization: Bearer <token>`: whoever reaches the port acts as this server's participant. */
  token?: string;
  /** Path of the MCP endpoint (default `/mcp`). */
  path?: string;
}

/**
 * Streamable HTTP, stateless: each POST gets a fresh MCP server and transport over the shared
 * tools (the council task queue lives in the tools, not in a session), so any number of clients
 * can call, and a restart loses no session.
 */
export async function serveHttp(tools: ConclaveTools, options: HttpOptions): Promise<{ server: HttpServer; url: string }> {
  const path = options.path ?? '/mcp';
  let allowedHosts: string[] | undefined;
  const expected = options.token ? Buffer.from(`Bearer ${options.token}`) : undefined;
  const http = createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== path) return void res.writeHead(404).end();
    if (expected) {
      const given = Buffer.from(req.headers.authorization ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return void res
          .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
          .end(
            JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'UNAUTHENTICATED: a bearer token is required' }, id: null }),
          );
      }
    }
    if (req.method !== 'POST') {
      // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
      return void res
        .writeHead(405, { 'content-type': 'application/json', allow: 'POST' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }));
    }
    const server = createMcpServer(tools);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      // On a loopback address, a web page that rebinds its DNS name to it must not reach the tools.
      ...(allowedHosts ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  if (['127.0.0.1', 'localhost', '::1'].includes(options.host)) allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  return { server: http, url: `http://${options.host}:${port}${path}` };
}
