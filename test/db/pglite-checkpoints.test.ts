import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { openPglite } from '../../src/db/pglite.ts';

// PGlite's single-user backend has no checkpointer (src/db/pglite-checkpoints.ts):
// these show that Weir's own keeps pg_wal bounded, by WAL written and by
// time, and stays quiet when nothing is written.

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function redo(db: Db): Promise<string> {
  return (await db.query<{ redo: string }>('select redo_lsn::text as redo from pg_control_checkpoint()')).rows[0].redo;
}

async function until(what: string, ok: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Collects the checker's reports; `next(pred)` resolves at the first report from now on that satisfies pred. */
function checkLog() {
  const waiters: Array<{ pred: (c: Check) => boolean; resolve: () => void }> = [];
  return {
    onCheck(c: Check) {
      for (const w of [...waiters]) {
        if (w.pred(c)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    },
    next(pred: (c: Check) => boolean = () => true): Promise<void> {
      return new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}
type Check = { startedAt: number; checkpointed: boolean };

const segments = (dir: string) => readdirSync(join(dir, 'pg_wal')).filter((f) => /^[0-9A-F]{24}$/.test(f)).length;

describe('PGlite checkpoints', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'weir-checkpoints-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('checkpoints once walBytes were written, so pg_wal stops growing and its segments are reused', async () => {
    const checks = checkLog();
    const db = await openPglite(join(dir, 'by-wal'), { checkpoints: { walBytes: 16 * MiB, checkEveryMs: 10, onCheck: checks.onCheck } });
    try {
      await db.exec('create table t (n int, pad text)');
      const first = await redo(db);
      // 20 rounds of ~8 MiB of WAL each: 160 MiB, ten segments' worth.
      let most = 0;
      for (let round = 0; round < 20; round++) {
        await db.query(`insert into t select g, repeat('x', 1000) from generate_series(1, 8000) g`);
        await checks.next(); // a check runs between rounds, as it would between capture groups
        most = Math.max(most, segments(join(dir, 'by-wal')));
      }
      assert.notEqual(await redo(db), first, 'a checkpoint moved the redo point');
      const { rows } = await db.query<{ behind: number }>('select (pg_current_wal_insert_lsn() - redo_lsn)::float8 as behind from pg_control_checkpoint()');
      assert.ok(rows[0].behind < 32 * MiB, `WAL since the last checkpoint stays near walBytes: ${rows[0].behind} bytes`);
      // Without checkpoints 160 MiB of WAL leaves 10+ segments behind, all of
      // them kept; with them, old ones are recycled as future segments and
      // the folder stays at what min_wal_size (80 MiB, 5 segments) keeps plus
      // the segments in use.
      assert.ok(most <= 8, `pg_wal held at most ${most} segments`);
    } finally {
      await db.close();
    }
  });

  it('checkpoints after intervalMs when anything was written, and not again while nothing is', async () => {
    const checks = checkLog();
    const db = await openPglite(join(dir, 'by-time'), { checkpoints: { intervalMs: 100, checkEveryMs: 10, onCheck: checks.onCheck } });
    try {
      await db.exec('create table t (n int)');
      const before = await redo(db);
      await db.query('insert into t values (1)');
      await until('a timed checkpoint', async () => (await redo(db)) !== before);
      const quiet = await redo(db);
      const quietSince = Date.now();
      // the checker looked again once a whole interval had passed with nothing written, and let it be
      await checks.next((c) => c.startedAt >= quietSince + 100 && !c.checkpointed);
      assert.equal(await redo(db), quiet, 'no checkpoint without writes');
      await db.query('insert into t values (2)');
      await until('the next timed checkpoint', async () => (await redo(db)) !== quiet);
    } finally {
      await db.close();
    }
  });

  it('stops with the database: close waits for a checkpoint in progress and nothing runs after', async () => {
    const errors: unknown[] = [];
    const path = join(dir, 'close');
    const db = await openPglite(path, { checkpoints: { walBytes: 1, checkEveryMs: 1, onError: (e) => errors.push(e) } });
    await db.exec('create table t (n int)');
    for (let i = 0; i < 20; i++) await db.query('insert into t values ($1)', [i]);
    await db.close();
    // "Nothing runs after close" has no event to wait for: this sleep gives a
    // stray timer (it would fire every 1 ms) fifty chances to show itself.
    await sleep(50);
    assert.deepEqual(errors, []);
    const again = await openPglite(path);
    try {
      assert.equal((await again.query<{ n: number }>('select count(*)::int as n from t')).rows[0].n, 20);
    } finally {
      await again.close();
    }
  });
});
