import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { loadMigrations, migrate } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { createFreshDatabase, onPostgres } from '../helpers/db.ts';
import { cleanEnv, runWeirToEnd } from '../helpers/weir-process.ts';

async function appliedIds(db: Db): Promise<number[]> {
  return (await db.query<{ id: number }>('select id from weir_migrations order by id')).rows.map((r) => r.id);
}

describe('migrations', () => {
  it('are numbered .sql files applied in order, once', async () => {
    const migrations = loadMigrations();
    assert.ok(migrations.length >= 1);
    assert.deepEqual(migrations.map((m) => m.id), [...migrations.map((m) => m.id)].sort((a, b) => a - b));
    const db = await openPglite();
    try {
      assert.deepEqual(await migrate(db), migrations.map((m) => m.name));
      assert.deepEqual(await migrate(db), [], 'a second run applies nothing');
      assert.deepEqual(await appliedIds(db), migrations.map((m) => m.id));
    } finally {
      await db.close();
    }
  });

  it('refuses two files with one number instead of skipping one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-migrations-'));
    writeFileSync(join(dir, '0001_a.sql'), 'select 1;');
    writeFileSync(join(dir, '0002_b.sql'), 'select 1;');
    writeFileSync(join(dir, '0002_c.sql'), 'select 1;');
    assert.throws(() => loadMigrations(dir + '/'), /0002_b\.sql and 0002_c\.sql share the number 2/);
  });

  it('rolls a failing migration back whole and applies nothing after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-migrations-'));
    writeFileSync(join(dir, '0001_ok.sql'), 'create table m_ok (id int);');
    writeFileSync(join(dir, '0002_bad.sql'), 'create table m_half (id int); select * from no_such_table;');
    writeFileSync(join(dir, '0003_after.sql'), 'create table m_after (id int);');
    const db = await openPglite();
    try {
      await assert.rejects(migrate(db, loadMigrations(dir + '/')));
      assert.deepEqual(await appliedIds(db), [1]);
      const { rows } = await db.query<{ t: string }>(`select table_name as t from information_schema.tables where table_name like 'm\\_%'`);
      assert.deepEqual(rows.map((r) => r.t), ['m_ok']);
    } finally {
      await db.close();
    }
  });

  it(onPostgres ? 'lets several nodes migrate one fresh PostgreSQL database at once' : 'lets concurrent migrate() calls on one database both succeed', async () => {
    if (!onPostgres) {
      const db = await openPglite();
      try {
        const runs = await Promise.all([migrate(db), migrate(db)]);
        assert.deepEqual(runs.flat().sort(), loadMigrations().map((m) => m.name).sort());
        assert.deepEqual(await appliedIds(db), loadMigrations().map((m) => m.id));
      } finally {
        await db.close();
      }
      return;
    }
    const fresh = await createFreshDatabase();
    const handles = await Promise.all(Array.from({ length: 4 }, () => openPostgres(fresh.url, { poolSize: 2 })));
    try {
      const runs = await Promise.all(handles.map((db) => migrate(db)));
      // Every migration was applied by exactly one of them.
      assert.deepEqual(runs.flat().sort(), loadMigrations().map((m) => m.name).sort());
      assert.deepEqual(await appliedIds(handles[0]), loadMigrations().map((m) => m.id));
    } finally {
      for (const db of handles) await db.close();
      await fresh.drop();
    }
  });

  it('lets two `weir migrate` processes race on one fresh database', { skip: !onPostgres && 'PostgreSQL only: the embedded database is one process per folder' }, async () => {
    const fresh = await createFreshDatabase();
    try {
      const results = await Promise.all([0, 1, 2].map(() => runWeirToEnd(['migrate'], cleanEnv({ DATABASE_URL: fresh.url }))));
      for (const r of results) assert.equal(r.code, 0, r.stderr);
      const applied = results.flatMap((r) => (/^applied: (.*)$/m.exec(r.stdout)?.[1] ?? '').split(', ').filter(Boolean));
      assert.deepEqual(applied.sort(), loadMigrations().map((m) => m.name).sort());
      const again = await runWeirToEnd(['migrate'], cleanEnv({ DATABASE_URL: fresh.url }));
      assert.match(again.stdout, /database is up to date/);
    } finally {
      await fresh.drop();
    }
  });
});
