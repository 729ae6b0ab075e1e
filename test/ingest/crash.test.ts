import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { openPostgres } from '../../src/db/postgres.ts';
import { createFreshDatabase, onPostgres } from '../helpers/db.ts';
import { sha256 } from './harness.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Node {
  child: ChildProcess;
  api: string;
  ingestPort: number;
  key: string | undefined;
  exited: Promise<unknown>;
}

/** The real CLI, `node bin/weir.mjs serve`, on free ports; resolves once it printed both listeners. */
async function serve(databaseUrl: string): Promise<Node> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('WEIR_') && k !== 'DATABASE_URL') env[k] = v;
  Object.assign(env, { DATABASE_URL: databaseUrl, WEIR_API_PORT: '0', WEIR_INGEST_PORT: '0', WEIR_LOG_LEVEL: 'warn' });
  const child = spawn(process.execPath, ['bin/weir.mjs', 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const api = /API: +(\S+)\/v1 /.exec(out);
    const ingest = /Ingest: +\S+ +\(port (\d+)\)/.exec(out);
    if (api && ingest) return { child, api: api[1], ingestPort: Number(ingest[1]), key: /^\s+(\S+_live_\S+)\s*$/m.exec(out)?.[1], exited };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`weir serve did not start:\n${out}`);
}

interface Sent {
  marker: string;
  hash: string;
  requestId?: string;
}

function post(agent: http.Agent, port: number, path: string, marker: string, body: Buffer): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'x-marker': marker, 'content-type': 'application/octet-stream' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
        } catch (err) {
          reject(err);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('kill -9 in the middle of a capture burst loses no acknowledged request', { skip: !onPostgres && 'needs PostgreSQL: several processes on one database', timeout: 180_000 }, async (t) => {
  const fresh = await createFreshDatabase();
  let node: Node | undefined;
  let restarted: Node | undefined;
  try {
    node = await serve(fresh.url);
    assert.ok(node.key, 'first start prints a key');
    const created = await fetch(`${node.api}/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${node.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'crash' }),
    }).then((r) => r.json() as Promise<any>);
    const slug = created.data.slug;

    // 40 senders in a loop, each body random binary, until the process dies.
    const acked: Sent[] = [];
    const failed: Sent[] = [];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 40 });
    let dead = false;
    let killAt!: () => void;
    const killNow = new Promise<void>((r) => (killAt = r));
    const sender = async (w: number) => {
      for (let i = 0; !dead; i++) {
        const body = randomBytes(256 + Math.floor(Math.random() * 8192));
        const sent: Sent = { marker: `${w}-${i}`, hash: sha256(body) };
        try {
          const r = await post(agent, node!.ingestPort, `/h/${slug}/w${w}`, sent.marker, body);
          if (r.status === 200) {
            sent.requestId = r.json.request_id;
            acked.push(sent);
            if (acked.length === 400) killAt();
          } else failed.push(sent);
        } catch {
          failed.push(sent);
          dead = true;
        }
      }
    };
    const senders = Promise.all(Array.from({ length: 40 }, (_, w) => sender(w)));
    await killNow;
    node.child.kill('SIGKILL');
    await node.exited;
    dead = true;
    await senders;
    agent.destroy();
    assert.ok(failed.length > 0, 'requests were in flight when the process died');
    t.diagnostic(`acknowledged ${acked.length}, cut off by the kill ${failed.length}`);

    // A new process on the same database serves everything acknowledged.
    restarted = await serve(fresh.url);
    const db = await openPostgres(fresh.url, { poolSize: 2 });
    try {
      const { rows } = await db.query<{ id: string; body: Buffer; headers: [string, string][] }>(
        'select id, body, headers from captured_requests where id = any($1::uuid[])',
        [acked.map((a) => a.requestId)],
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const a of acked) {
        const row = byId.get(a.requestId!);
        assert.ok(row, `acknowledged ${a.requestId} is stored`);
        assert.equal(sha256(row.body), a.hash, `body of ${a.requestId} is byte-identical`);
        assert.ok(row.headers.some(([n, v]) => n === 'x-marker' && v === a.marker));
      }
    } finally {
      await db.close();
    }
    // And the restarted node's API hands the bytes back.
    for (const a of acked.slice(0, 20)) {
      const res = await fetch(`${restarted.api}/v1/requests/${a.requestId}/body`, { headers: { authorization: `Bearer ${node.key}` } });
      assert.equal(res.status, 200);
      assert.equal(sha256(Buffer.from(await res.arrayBuffer())), a.hash);
    }
  } finally {
    node?.child.kill('SIGKILL');
    if (restarted) {
      restarted.child.kill('SIGTERM');
      await restarted.exited;
    }
    await fresh.drop();
  }
});
