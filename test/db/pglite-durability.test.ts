import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openPglite } from '../../src/db/pglite.ts';
import { ROOT } from '../helpers/weir-process.ts';

// docs/configuration.md says: PGlite writes through Node's fs without fsync,
// so what it committed survives the process being killed (kill -9), though not
// necessarily an OS crash or power loss. This proves the first half: a child
// commits rows one transaction at a time, reporting each commit, and is
// SIGKILLed mid-stream; every reported row must be there on reopening.

const CHILD = `
import { PGlite } from '@electric-sql/pglite';
const pg = await PGlite.create({ dataDir: process.argv[1] });
await pg.exec('create table if not exists t (n int primary key, pad text)');
for (let n = 1; ; n++) {
  await pg.transaction(async (tx) => { await tx.query('insert into t values ($1, repeat($2, 200))', [n, 'x']); });
  process.stdout.write(n + '\\n');
}
`;

describe('PGlite durability', () => {
  it('keeps every committed transaction when the process is killed with SIGKILL', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-durability-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
    const lastReported = () => Number(out.trim().split('\n').at(-1) || 0);
    const deadline = Date.now() + 60_000;
    while (lastReported() < 300 && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    assert.ok(lastReported() >= 300, `the child committed rows: ${out.slice(-200)} ${err}`);
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');
    const acknowledged = lastReported();

    const db = await openPglite(dir);
    try {
      const { rows } = await db.query<{ n: number; max: number | null }>('select count(*)::int as n, max(n) as max from t');
      assert.ok(rows[0].n >= acknowledged, `${rows[0].n} rows survived, ${acknowledged} were reported committed`);
      assert.equal(rows[0].n, rows[0].max, 'no gaps: transactions survive whole and in order');
      t.diagnostic(`${acknowledged} commits reported before SIGKILL, ${rows[0].n} rows on reopening`);
    } finally {
      await db.close();
    }
  });
});
