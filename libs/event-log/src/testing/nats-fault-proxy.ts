import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real nats-server that misbehaves as servers were seen to, in ways no
 * client can provoke on demand. Client-to-server bytes pass unchanged.
 * - `overcount`: adds that many to every JetStream pending count it relays: the last token of
 *   each delivered message's `$JS.ACK...` reply subject, and `num_pending` in the first consumer
 *   info reply of each connection (later ones are true). nats-server 2.9 did this to a filtered
 *   consumer after a restart under concurrent appends (delivery ended with "8 pending" that never
 *   came, while the consumer's info said 0 pending).
 * - `silent` (switched at any time): drops every push consumer delivery and heartbeat while API
 *   replies still pass. Consumers were seen to stop delivering without a word after a stream
 *   leader was killed in a cluster, while their info still answered.
 */
export class NatsFaultProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  silent = false;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly faults: { readonly overcount?: number } = {},
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = tcpConnect(this.target.port, this.target.host);
      this.sockets.add(client).add(upstream);
      const rewrite = new ProtocolRewriter(
        this.faults.overcount ?? 0,
        () => this.silent,
        (chunk) => client.write(chunk),
      );
      client.on('data', (d) => upstream.write(d));
      upstream.on('data', (d) => rewrite.push(d));
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', end).on('error', end);
      upstream.on('close', end).on('error', end);
    });
    await new Promise<void>((ok) => this.server!.listen(0, '127.0.0.1', ok));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((ok) => this.server?.close(ok));
  }
}

/** Splits the server's protocol stream into operations; rewrites MSG/HMSG as described above. */
class ProtocolRewriter {
  private buffer = Buffer.alloc(0);
  private infosLeft = 1;

  constructor(
    private readonly extra: number,
    private readonly silent: () => boolean,
    private readonly out: (chunk: Buffer) => void,
  ) {}

  push(data: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, data]);
    for (;;) {
      const eol = this.buffer.indexOf('\r\n');
      if (eol < 0) return;
      const line = this.buffer.subarray(0, eol).toString('latin1');
      const op = line.slice(0, 5).toUpperCase();
      if (!op.startsWith('MSG ') && !op.startsWith('HMSG ')) {
        this.out(this.buffer.subarray(0, eol + 2));
        this.buffer = this.buffer.subarray(eol + 2);
        continue;
      }
      const tokens = line.split(' ');
      const headers = op.startsWith('HMSG');
      // MSG <subject> <sid> [reply] <size>; HMSG <subject> <sid> [reply] <header size> <total size>
      const sizes = headers ? 2 : 1;
      const total = Number(tokens[tokens.length - 1]);
      if (this.buffer.length < eol + 2 + total + 2) return;
      let payload = this.buffer.subarray(eol + 2, eol + 2 + total);
      this.buffer = this.buffer.subarray(eol + 2 + total + 2);
      const hasReply = tokens.length === 3 + sizes + 1;
      const headerSize = headers ? Number(tokens[tokens.length - 2]) : 0;
      if (this.silent()) {
        const delivery = hasReply && tokens[3].startsWith('$JS.ACK.');
        // Idle heartbeats and flow control: status 100 in the headers.
        const heartbeat = headers && payload.subarray(0, headerSize).toString('latin1').startsWith('NATS/1.0 100');
        if (delivery || heartbeat) continue;
      }
      if (hasReply && tokens[3].startsWith('$JS.ACK.')) {
        const parts = tokens[3].split('.');
        parts[parts.length - 1] = String(Number(parts[parts.length - 1]) + this.extra);
        tokens[3] = parts.join('.');
      }
      const body = payload.subarray(headerSize).toString('utf8');
      if (this.infosLeft > 0 && body.includes('"io.nats.jetstream.api.v1.consumer_info_response"')) {
        this.infosLeft--;
        const changed = body.replace(/"num_pending":(\d+)/, (_, n: string) => `"num_pending":${Number(n) + this.extra}`);
        payload = Buffer.concat([payload.subarray(0, headerSize), Buffer.from(changed, 'utf8')]);
        tokens[tokens.length - 1] = String(payload.length);
      }
      this.out(Buffer.concat([Buffer.from(`${tokens.join(' ')}\r\n`, 'latin1'), payload, Buffer.from('\r\n')]));
    }
  }
}
