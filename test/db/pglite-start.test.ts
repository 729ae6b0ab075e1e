import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openPglite } from '../../src/db/pglite.ts';

// openPglite's start parameters (src/db/pglite.ts, IN_MEMORY_START_PARAMS):
// in memory a new WAL segment is not zero-filled first; a data folder keeps
// PostgreSQL's default, which reserves the segment's disk space ahead.

test('in memory, new WAL segments are not zero-filled, and the database works across segment switches', async () => {
  const db = await openPglite();
  try {
    const { rows } = await db.query<{ v: string }>(`select current_setting('wal_init_zero') as v`);
    assert.equal(rows[0].v, 'off');
    await db.exec('create table t (n int, pad text)');
    // each switch makes the next write start a segment of its own
    for (let i = 0; i < 4; i++) {
      await db.query(`insert into t select g, repeat('x', 200) from generate_series($1::int * 1000 + 1, ($1::int + 1) * 1000) g`, [i]);
      await db.query('select pg_switch_wal()');
    }
    await db.exec('checkpoint');
    const { rows: count } = await db.query<{ n: number; s: string }>('select count(*)::int as n, sum(n)::text as s from t');
    assert.deepEqual(count[0], { n: 4000, s: String((4000 * 4001) / 2) });
  } finally {
    await db.close();
  }
});

test('in a data folder, WAL segments are zero-filled as PostgreSQL does by default', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-pglite-start-'));
  try {
    const db = await openPglite(dir, { checkpoints: { intervalMs: 3_600_000 } });
    try {
      const { rows } = await db.query<{ v: string }>(`select current_setting('wal_init_zero') as v`);
      assert.equal(rows[0].v, 'on');
    } finally {
      await db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
