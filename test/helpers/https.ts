/**
 * Real HTTPS receivers on loopback for forwarding tests, with a test CA made
 * by the openssl CLI once per machine (cached in the temp folder).
 * In-process code trusts it by passing `testCa().ca` to the transport;
 * a spawned Weir trusts it through NODE_EXTRA_CA_CERTS=`testCa().caFile`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  caFile: string;
  ca: string;
  /** Signed by the CA for localhost, 127.0.0.1 and ::1. */
  key: string;
  cert: string;
  /** Self-signed, trusted by nobody: a TLS error for a client. */
  untrustedKey: string;
  untrustedCert: string;
}

const CA_DIR = join(tmpdir(), 'weir-test-ca-v1');
let cached: TestCa | undefined;

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

function generate(dir: string): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3650', '-subj', '/CN=Weir Test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], dir);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt',
    '-days', '3650', '-extfile', 'server.ext'], dir);
  openssl(['req', '-x509', ...ec, '-keyout', 'untrusted.key', '-out', 'untrusted.crt', '-days', '3650', '-subj', '/CN=untrusted',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], dir);
}

/** The test CA and certificates, generated on first use. */
export function testCa(): TestCa {
  if (cached) return cached;
  if (!existsSync(join(CA_DIR, 'untrusted.crt'))) {
    // generate beside, then rename: concurrent test processes never see half a CA
    const work = `${CA_DIR}.${process.pid}.${Date.now()}`;
    mkdirSync(work, { recursive: true });
    generate(work);
    try {
      renameSync(work, CA_DIR);
    } catch {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const read = (f: string) => readFileSync(join(CA_DIR, f), 'utf8');
  cached = {
    caFile: join(CA_DIR, 'ca.crt'),
    ca: read('ca.crt'),
    key: read('server.key'),
    cert: read('server.crt'),
    untrustedKey: read('untrusted.key'),
    untrustedCert: read('untrusted.crt'),
  };
  return cached;
}

export interface Received {
  method: string;
  /** Path and query as sent. */
  url: string;
  /** [name, value, ...] exactly as on the wire (order, case, duplicates). */
  rawHeaders: string[];
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** performance.timeOrigin + performance.now() when the request was complete. */
  at: number;
}

/** What the receiver answers: a response, or 'hang' (never answer) or 'destroy' (reset the connection). */
export type Reply =
  | { status?: number; headers?: Record<string, string>; body?: string | Buffer; delayMs?: number; /** answer once this settles */ until?: Promise<unknown> }
  | 'hang'
  | 'destroy';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Resolves once `n` requests have arrived (rejects after timeoutMs, to fail a test instead of hanging it). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /** Answer per request; default 200 "ok". */
  reply?: (req: Received, index: number) => Reply;
  /** Serve the self-signed certificate nobody trusts. */
  untrusted?: boolean;
  host?: string;
}

export async function startReceiver(opts: ReceiverOptions = {}): Promise<Receiver> {
  const tls = testCa();
  const received: Received[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const sockets = new Set<net.Socket>();
  const server = https.createServer(
    { key: opts.untrusted ? tls.untrustedKey : tls.key, cert: opts.untrusted ? tls.untrustedCert : tls.cert },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = {
          method: req.method ?? '',
          url: req.url ?? '',
          rawHeaders: req.rawHeaders,
          headers: req.headers,
          body: Buffer.concat(chunks),
          at: performance.timeOrigin + performance.now(),
        };
        const index = received.length;
        received.push(r);
        for (const w of [...waiters]) {
          if (received.length >= w.n) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve();
          }
        }
        const reply = opts.reply?.(r, index) ?? {};
        if (reply === 'hang') return;
        if (reply === 'destroy') return req.socket.destroy();
        const send = () => {
          res.writeHead(reply.status ?? 200, reply.headers ?? { 'content-type': 'text/plain' });
          res.end(reply.body ?? 'ok');
        };
        if (reply.until) void reply.until.then(send, send);
        else if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    },
  );
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  // TLS handshake failures (the untrusted-certificate tests) are expected
  server.on('tlsClientError', () => {});
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    received,
    waitFor(n, timeoutMs = 30_000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} of ${n} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(received);
          },
        });
      });
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port with nothing listening on it (connection refused). */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/**
 * A loopback port whose connections are never accepted and, once its
 * accept queue is full, never even completed: a child process listens with
 * a backlog of 1 (0 would mean the default) and blocks its event loop, so it never calls accept(); the
 * kernel queues the first connection(s) and then drops further SYNs, and a
 * client's connect waits until its own connect timeout. Fillers are opened
 * until one stays unconnected, which proves the queue is full.
 */
export async function unacceptedPort(): Promise<{ port: number; close(): void }> {
  const { spawn } = await import('node:child_process');
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer();
       s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
         require('node:fs').writeSync(1, s.address().port + '\\n');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('exit', (code) => reject(new Error(`the unaccepting listener exited with ${code}`)));
  });
  const fillers: net.Socket[] = [];
  const close = () => {
    for (const s of fillers) s.destroy();
    child.kill('SIGKILL');
  };
  try {
    for (let i = 0; i < 64; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      fillers.push(s);
      const connected = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 500);
        s.once('connect', () => (clearTimeout(timer), resolve(true)));
      });
      if (!connected) return { port, close };
    }
  } catch (err) {
    close();
    throw err;
  }
  close();
  throw new Error('the accept queue never filled up: 64 connections completed');
}

/**
 * A DNS server on loopback (UDP) that answers every question NXDOMAIN, and a
 * resolver using only it: a real lookup that fails the way a name that
 * exists nowhere fails, without any query leaving the machine (the system
 * resolver would ask the configured name servers).
 */
export async function nxdomainResolver(): Promise<{ resolver: (hostname: string) => Promise<Array<{ address: string; family: number }>>; queries: string[]; close(): Promise<void> }> {
  const dgram = await import('node:dgram');
  const { Resolver } = await import('node:dns/promises');
  const queries: string[] = [];
  const server = dgram.createSocket('udp4');
  server.on('message', (msg, peer) => {
    if (msg.length < 12) return;
    // the question's name, for the test to see what was asked
    const labels: string[] = [];
    for (let o = 12; o < msg.length && msg[o] !== 0; o += msg[o] + 1) labels.push(msg.subarray(o + 1, o + 1 + msg[o]).toString());
    queries.push(labels.join('.'));
    const answer = Buffer.from(msg);
    answer.writeUInt16BE(0x8183, 2); // response, recursion desired and available, NXDOMAIN
    answer.writeUInt16BE(0, 6); // no answers
    answer.writeUInt16BE(0, 8);
    answer.writeUInt16BE(0, 10); // and no additional records (drops an EDNS OPT record of the query)
    const questionEnd = 12 + labels.reduce((n, l) => n + l.length + 1, 0) + 1 + 4;
    server.send(answer.subarray(0, questionEnd), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
  const dns = new Resolver({ timeout: 2_000, tries: 1 });
  dns.setServers([`127.0.0.1:${server.address().port}`]);
  return {
    queries,
    async resolver(hostname) {
      const [v4, v6] = await Promise.allSettled([dns.resolve4(hostname), dns.resolve6(hostname)]);
      const found = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (found.length === 0) throw v4.status === 'rejected' ? v4.reason : new Error(`${hostname} has no addresses`);
      return found;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
