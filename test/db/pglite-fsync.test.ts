import assert from 'node:assert/strict';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openPglite } from '../../src/db/pglite.ts';

// WEIR_PGLITE_FSYNC=1 (src/db/pglite-fsync.ts): PGlite flushes each commit
// to the disk. Power loss cannot be staged in a test; what can be observed
// is that a commit reaches fdatasync(2) on a real file, and that without the
// option nothing does.

/** Counts fdatasync calls made while fn runs (the named import in src/db sees the wrapper after syncBuiltinESMExports). */
async function countingFlushes(fn: () => Promise<void>): Promise<number> {
  const original = fs.fdatasyncSync;
  let calls = 0;
  fs.fdatasyncSync = (fd) => {
    calls++;
    original(fd);
  };
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    fs.fdatasyncSync = original;
    syncBuiltinESMExports();
  }
  return calls;
}

async function commits(dir: string, fsync: boolean, n: number): Promise<{ flushes: number; settings: Record<string, string> }> {
  const db = await openPglite(dir, { fsync, checkpoints: { intervalMs: 3_600_000 } });
  try {
    await db.exec('create table if not exists t (n int)');
    const { rows } = await db.query<{ fsync: string; method: string }>(`select current_setting('fsync') as fsync, current_setting('wal_sync_method') as method`);
    const flushes = await countingFlushes(async () => {
      for (let i = 0; i < n; i++) await db.query('insert into t values ($1)', [i]);
    });
    return { flushes, settings: { fsync: rows[0].fsync, method: rows[0].method } };
  } finally {
    await db.close();
  }
}

describe('PGlite fsync', () => {
  it('flushes every commit to disk with fsync on, and keeps what it committed', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-fsync-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const on = await commits(dir, true, 20);
    assert.deepEqual(on.settings, { fsync: 'on', method: 'fsync' });
    assert.ok(on.flushes >= 20, `${on.flushes} flushes for 20 commits`);
    const again = await openPglite(dir);
    try {
      assert.equal((await again.query<{ n: number }>('select count(*)::int as n from t')).rows[0].n, 20);
    } finally {
      await again.close();
    }
  });

  it('flushes nothing by default (PGlite starts with fsync off)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-fsync-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const off = await commits(dir, false, 20);
    assert.equal(off.settings.fsync, 'off');
    assert.equal(off.flushes, 0);
  });
});
