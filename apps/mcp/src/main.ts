#!/usr/bin/env node
import { loadMcpConfig, McpConfigError } from './app/mcp.config';
import { startMcp } from './app/mcp.app';

// stdout carries the MCP protocol on stdio: everything human-readable goes to stderr.
async function main(): Promise<void> {
  const config = loadMcpConfig(process.env);
  const running = await startMcp(config);
  const auth = config.keyFile
    ? `signing as ${config.participantId}`
    : `UNSIGNED as ${config.participantId} (the deployment must run without authentication)`;
  console.error(`conclave MCP server on ${config.transport === 'http' ? running.url : 'stdio'}, ${auth}`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void running.close().finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  if (config.transport === 'stdio') process.stdin.on('end', stop);
}

main().catch((err) => {
  console.error(err instanceof McpConfigError ? `configuration: ${err.message}` : err);
  process.exit(1);
});
