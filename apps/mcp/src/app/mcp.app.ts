import { readFileSync } from 'node:fs';
import { Server as HttpServer } from 'node:http';
import { ConclaveClient, ed25519Signer } from '@conclave/sdk';
import { credsAuthenticator } from 'nats';
import { ConclaveTools } from './conclave-tools';
import { McpConfig } from './mcp.config';
import { serveHttp, serveStdio } from './mcp-server';

export interface RunningMcp {
  tools: ConclaveTools;
  /** The MCP endpoint, on the http transport. */
  url?: string;
  close(): Promise<void>;
}

/** Connects to NATS as the configured participant and serves the tools on the configured transport. */
export async function startMcp(config: McpConfig): Promise<RunningMcp> {
  // With a key, every command is signed as the participant; without, the deployment must run open.
  const signer = config.keyFile ? ed25519Signer(config.participantId, readFileSync(config.keyFile, 'utf8')) : undefined;
  const client = await ConclaveClient.connect({
    servers: config.natsUrl,
    prefix: config.prefix,
    streamSuffix: config.streamSuffix,
    ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword } : {}),
    ...(config.natsCredsFile ? { authenticator: credsAuthenticator(readFileSync(config.natsCredsFile)) } : {}),
    ...(config.natsInboxPrefix ? { inboxPrefix: config.natsInboxPrefix } : {}),
    ...(signer ? { signer } : {}),
  });
  const tools = new ConclaveTools({
    client,
    participantId: config.participantId,
    councilPrefix: config.councilPrefix,
    councilMemberId: config.councilMemberId,
    signer,
  });
  if (config.councilMember) tools.desk.start();
  let http: HttpServer | undefined;
  let url: string | undefined;
  if (config.transport === 'http')
    ({ server: http, url } = await serveHttp(tools, { host: config.httpHost, port: config.httpPort, token: config.httpToken }));
  else await serveStdio(tools);
  return {
    tools,
    url,
    async close() {
      if (http) await new Promise<void>((resolve) => http.close(() => resolve()));
      http?.closeAllConnections();
      await tools.close();
      await client.close();
    },
  };
}
