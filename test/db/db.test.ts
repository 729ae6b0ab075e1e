import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { asBuffer, NAMED_PLAN_CACHE_MODE, notify, sqlState, type Queryable } from '../../src/db/db.ts';
import { newId, isUuid } from '../../src/db/ids.ts';
import { onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';

// The Db contract, on whichever adapter this run uses (PGlite, or PostgreSQL with DATABASE_URL).

let tdb: TestDb;

// Every warning this process prints: node-postgres warns (once a process)
// when a query is sent on a connection still running another one, a
// behaviour it will drop. Recorded from the start, so a test later in the
// file cannot miss a warning an earlier one caused.
const warnings: string[] = [];
process.on('warning', (w) => warnings.push(`${w.name}: ${w.message}`));

before(async () => {
  tdb = await openTestDb();
  await tdb.db.exec('create table if not exists db_test (id int primary key, v text, b bytea)');
});

after(async () => {
  await tdb.close();
});

const until = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('queries', () => {
  it('runs named statements: prepared once, reused with new parameters, bytea in binary, inside transactions too', async () => {
    await tdb.db.query('delete from db_test');
    const insert = 'insert into db_test (id, v, b) select * from unnest($1::int[], $2::text[]) as u(id, v), (select $3::bytea) as b returning id';
    const bytes = Buffer.from([0, 0x5c, 0x78, 255, 0]);
    const first = await tdb.db.query<{ id: number }>(insert, [[1, 2], ['a', null], bytes], { name: 'db_test_insert' });
    assert.deepEqual(first.rows.map((r) => r.id), [1, 2]);
    // an array literal given as text, as src/ingest/store.ts sends them
    const second = await tdb.db.query<{ id: number }>(insert, ['{3,4}', '{"{\\"x\\":1}","NULL"}', Buffer.alloc(0)], { name: 'db_test_insert' });
    assert.deepEqual(second.rows.map((r) => r.id), [3, 4]);
    const { rows } = await tdb.db.query<{ id: number; v: string | null; b: Buffer }>('select id, v, b from db_test order by id');
    assert.deepEqual(rows.map((r) => [r.id, r.v, r.b.toString('hex')]), [[1, 'a', '005c78ff00'], [2, null, '005c78ff00'], [3, '{"x":1}', ''], [4, 'NULL', '']]);
    await tdb.db.transaction(async (tx) => {
      await tx.query('update db_test set v = $1 where id = $2', ['in tx', 3], { name: 'db_test_update' });
    });
    assert.equal((await tdb.db.query<{ v: string }>('select v from db_test where id = 3')).rows[0].v, 'in tx');
    await assert.rejects(tdb.db.query('select 1/$1::int as n', [0], { name: 'db_test_div' }), (e) => sqlState(e) === '22012');
    assert.equal((await tdb.db.query<{ n: number }>('select 1/$1::int as n', [1], { name: 'db_test_div' })).rows[0].n, 1, 'usable after an error');
  });

  it('runs named statements with one generic plan from the first run, on every connection the adapter opens (QueryOptions.name)', async () => {
    const mode = `select current_setting('plan_cache_mode') as mode`;
    const read = async (q: { query: typeof tdb.db.query }) => (await q.query<{ mode: string }>(mode)).rows[0].mode;
    assert.equal(NAMED_PLAN_CACHE_MODE, 'force_generic_plan');
    // several at once: the pool opens more than one connection on PostgreSQL
    assert.deepEqual(new Set(await Promise.all([1, 2, 3].map(() => read(tdb.db)))), new Set([NAMED_PLAN_CACHE_MODE]));
    assert.equal(await tdb.db.transaction((tx) => read(tx)), NAMED_PLAN_CACHE_MODE);
    assert.equal(await tdb.db.withSettings({ enable_seqscan: 'off' }, (q) => read(q)), NAMED_PLAN_CACHE_MODE);
    assert.equal(await tdb.db.session((c) => read(c)), NAMED_PLAN_CACHE_MODE);
    // a named statement's first run: no plan made with its values
    await tdb.db.session(async (c) => {
      await c.query('select count(*) from db_test where id = $1::int', [1], { name: 'db_test_plan_mode' });
      const { rows } = await c.query<{ generic: number; custom: number }>(
        `select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements where name = 'db_test_plan_mode'`,
      );
      // PGlite keeps its named statements on its one connection, as PostgreSQL does on each
      assert.deepEqual(rows, [{ generic: 1, custom: 0 }]);
    });
  });

  it('returns the same rows and counts from a named statement as from a plain query, for every type the statements read', async () => {
    const select = `select $1::int as i, 9007199254740993::int8 as big, 1.5::float8 as f, true as yes, null::text as nothing,
                           $2::text as t, '{"a":[1,"ä"]}'::json as js, '{"b":null}'::jsonb as jb, array['x','y,z',null]::text[] as arr,
                           array[1,2]::int[] as ints, '2026-11-28 22:00:00.123456+00'::timestamptz as at, '12.50'::numeric as num,
                           'a0ee6f1e-5b8e-4f5a-9d52-0a1b2c3d4e5f'::uuid as id, '\\x00ff'::bytea as b, ''::text as empty
                      from generate_series(1, $3::int)`;
    const params = [7, 'ä€𝄞 "quoted" \\ back\nline', 3];
    const plain = await tdb.db.query(select, params);
    const named = await tdb.db.query(select, params, { name: 'db_test_types' });
    assert.deepEqual(named.rows, plain.rows);
    assert.equal(named.rows.length, 3);
    assert.equal(named.rowCount, plain.rowCount);
    await tdb.db.query('delete from db_test');
    await tdb.db.query('insert into db_test (id) select generate_series(41, 45)');
    const updated = await tdb.db.query('update db_test set v = $1 where id > $2', ['u', 42], { name: 'db_test_count' });
    assert.equal(updated.rowCount, 3);
    assert.deepEqual(updated.rows, []);
  });

  it('delivers the notifications a named statement commits to Db.listen', async () => {
    const got: string[] = [];
    const unlisten = await tdb.db.listen('db_test_named', (p) => got.push(p));
    try {
      const sent = await tdb.db.query<{ n: number }>("select pg_notify('db_test_named', $1) is null as sent, 1 as n", ['from a named statement'], { name: 'db_test_notify' });
      assert.equal(sent.rows[0].n, 1);
      await tdb.db.transaction(async (tx) => {
        await tx.query("select pg_notify('db_test_named', $1)", ['inside a transaction'], { name: 'db_test_notify_tx' });
      });
      await until(() => got.length === 2);
      assert.deepEqual(got, ['from a named statement', 'inside a transaction']);
    } finally {
      await unlisten();
    }
    await tdb.db.query("select pg_notify('db_test_named', $1) is null as sent, 1 as n", ['after unlisten'], { name: 'db_test_notify' });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(got.length, 2, 'nothing after unlisten');
  });

  it('binds parameters and returns rows and row counts', async () => {
    await tdb.db.query('delete from db_test');
    const ins = await tdb.db.query('insert into db_test (id, v) values ($1, $2), ($3, $4)', [1, "o'brien", 2, null]);
    assert.equal(ins.rowCount, 2);
    const { rows } = await tdb.db.query<{ id: number; v: string | null }>('select id, v from db_test order by id');
    assert.deepEqual(rows, [{ id: 1, v: "o'brien" }, { id: 2, v: null }]);
  });

  it('returns bytea as a Buffer, byte for byte', async () => {
    const bytes = Buffer.from([0, 255, 1, 128, 10, 13]);
    await tdb.db.query('insert into db_test (id, b) values (10, $1)', [bytes]);
    const { rows } = await tdb.db.query<{ b: Buffer }>('select b from db_test where id = 10');
    assert.ok(Buffer.isBuffer(rows[0].b));
    assert.deepEqual(rows[0].b, bytes);
    assert.deepEqual(asBuffer(new Uint8Array([1, 2])), Buffer.from([1, 2]));
  });

  it('reports SQLSTATE codes of driver errors', async () => {
    // its own row: a test that relied on an earlier test's row would break when run alone
    await tdb.db.query('insert into db_test (id) values (30)');
    const err = await tdb.db.query('insert into db_test (id) values (30)').catch((e) => e);
    assert.equal(sqlState(err), '23505');
    assert.equal(sqlState(new Error('x')), undefined);
  });

  // node-postgres takes the stack again where its promise settles; the adapter
  // runs statements through its callbacks (src/db/postgres.ts, run) and does the same
  it("gives a failed statement's error its SQLSTATE and a stack that leads back to its caller: on the pool, with settings, in a transaction", { skip: !onPostgres && 'the PostgreSQL adapter' }, async () => {
    await tdb.db.query('insert into db_test (id) values (31) on conflict do nothing');
    const duplicate = (q: Queryable) => q.query('insert into db_test (id) values ($1::int)', [31], { name: 'db_test_duplicate' });
    const errors = [
      await duplicate(tdb.db).catch((e: Error) => e),
      await tdb.db.withSettings({ enable_seqscan: 'off' }, duplicate).catch((e: Error) => e),
      await tdb.db.transaction(duplicate).catch((e: Error) => e),
    ];
    for (const err of errors) {
      assert.equal(sqlState(err), '23505');
      assert.match((err as Error).stack ?? '', /db\.test\.ts/, 'the stack names this file, not only the socket that read the answer');
    }
  });
});

describe('transactions', () => {
  it('commits when the function resolves', async () => {
    const n = await tdb.db.transaction(async (tx) => {
      await tx.query('insert into db_test (id, v) values (20, $1)', ['committed']);
      return 7;
    });
    assert.equal(n, 7);
    assert.equal((await tdb.db.query('select 1 from db_test where id = 20')).rows.length, 1);
  });

  it('rolls back when the function throws, and rethrows', async () => {
    await assert.rejects(
      tdb.db.transaction(async (tx) => {
        await tx.query('insert into db_test (id) values (21)');
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.equal((await tdb.db.query('select 1 from db_test where id = 21')).rows.length, 0);
  });

  it('refuses to report a transaction as committed when a statement in it failed, even if the error was caught', async () => {
    const err = await tdb.db
      .transaction(async (tx) => {
        await tx.query('insert into db_test (id) values (22)');
        await tx.query('insert into db_test (id) values (22)').catch(() => {});
        return 'looks fine';
      })
      .catch((e) => e);
    assert.ok(err instanceof Error, 'the transaction throws');
    assert.equal(sqlState(err), '25P02');
    assert.equal((await tdb.db.query('select 1 from db_test where id = 22')).rows.length, 0);
  });

  it('keeps the database usable after a failed transaction', async () => {
    await assert.rejects(tdb.db.transaction((tx) => tx.query('select * from no_such_table')));
    assert.equal((await tdb.db.query<{ one: number }>('select 1 as one')).rows[0].one, 1);
  });

  it('opens with its settings, which end with it, committed or rolled back', async () => {
    const setting = async (q: { query: typeof tdb.db.query }) => (await q.query<{ s: string }>(`select current_setting('lock_timeout') as s`)).rows[0].s;
    const outside = await setting(tdb.db);
    const settings = `set local lock_timeout = '1234ms'; set local enable_seqscan = off`;
    assert.deepEqual(await tdb.db.transaction(async (tx) => [await setting(tx), (await tx.query<{ s: string }>(`select current_setting('enable_seqscan') as s`)).rows[0].s], { settings }), ['1234ms', 'off']);
    await assert.rejects(
      tdb.db.transaction(async (tx) => {
        assert.equal(await setting(tx), '1234ms');
        throw new Error('rollback');
      }, { settings }),
      /rollback/,
    );
    // every pooled connection is back to its own setting
    const seen = await Promise.all(Array.from({ length: 12 }, () => setting(tdb.db)));
    assert.deepEqual(new Set(seen), new Set([outside]));
  });

  it('runs statements with settings in force for them alone, also on connections opened for several at once', async () => {
    const settings = { lock_timeout: '4321', enable_seqscan: 'off' };
    const read = async (q: { query: typeof tdb.db.query }) => (await q.query<{ s: string }>(`select current_setting('lock_timeout') || ' ' || current_setting('enable_seqscan') as s`)).rows[0].s;
    const outside = await read(tdb.db);
    // at once: on PostgreSQL the first statement of each new connection already runs with them
    const seen = await Promise.all(Array.from({ length: 6 }, () => tdb.db.withSettings(settings, async (q) => [await read(q), await read(q)])));
    assert.deepEqual(new Set(seen.flat()), new Set(['4321ms off']));
    // a failing statement in fn: the error reaches the caller, and the settings' statements go on working
    await assert.rejects(tdb.db.withSettings(settings, (q) => q.query('select * from no_such_table')), /no_such_table/);
    assert.equal(await tdb.db.withSettings(settings, read), '4321ms off');
    const others = await Promise.all(Array.from({ length: 12 }, () => read(tdb.db)));
    assert.deepEqual(new Set(others), new Set([outside]));
    assert.notEqual(outside, '4321ms off');
    // the settings were applied before the first statement, not queued under it
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings.filter((w) => /already executing a query/.test(w)), []);
  });

  it('runs named statements with settings: each commits with them in force, counts its rows, delivers its notifications, and a failure rolls back alone', async () => {
    await tdb.db.query('delete from db_test');
    const settings = { lock_timeout: '4321', enable_seqscan: 'off' };
    const insert = `insert into db_test (id, v) select g, current_setting('lock_timeout') || ' ' || current_setting('enable_seqscan')
                      from generate_series($1::int, $2::int) g returning id`;
    const heard: string[] = [];
    const unlisten = await tdb.db.listen('db_test_settled', (p) => heard.push(p));
    try {
      const res = await tdb.db.withSettings(settings, async (q) => {
        const first = await q.query<{ id: number }>(insert, [1, 3], { name: 'db_test_settled_insert' });
        await q.query(`select pg_notify('db_test_settled', $1)`, ['from a named statement'], { name: 'db_test_settled_notify' });
        // a failing named statement: its own transaction rolls back, the rows before it stay
        await assert.rejects(q.query('insert into db_test (id, v) values ($1::int, $2::text), ($1::int, $2::text)', [10, 'twice'], { name: 'db_test_settled_dup' }), (e) => sqlState(e) === '23505');
        const again = await q.query<{ id: number }>(insert, [4, 4], { name: 'db_test_settled_insert' });
        return [first, again];
      });
      assert.deepEqual(res.map((r) => [r.rowCount, r.rows.map((x) => x.id)]), [[3, [1, 2, 3]], [1, [4]]]);
      const { rows } = await tdb.db.query<{ id: number; v: string }>('select id, v from db_test order by id');
      assert.deepEqual(rows.map((r) => [r.id, r.v]), [1, 2, 3, 4].map((id) => [id, '4321ms off']), 'committed, with the settings in force, and nothing of the failed one');
      await until(() => heard.length === 1);
      assert.deepEqual(heard, ['from a named statement']);
      // no transaction was left open: outside, the settings are the connection's own, and a transaction can begin
      const outside = (await tdb.db.query<{ s: string }>(`select current_setting('enable_seqscan') as s`)).rows[0].s;
      assert.equal(outside, 'on');
      assert.equal(await tdb.db.transaction(async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from db_test')).rows[0].n), 4);
    } finally {
      await unlisten();
    }
  });

  it('refuses a setting that is not a plain name and value', async () => {
    await assert.rejects(tdb.db.withSettings({ 'lock_timeout = 0; drop table db_test; --': 'x' }, async () => 1), /not a setting/);
    await tdb.db.query('select 1 from db_test limit 1'); // the table is still there
  });

  it('rejects settings that do not parse, runs nothing of the transaction, and leaves the database usable', async () => {
    let ran = false;
    await assert.rejects(
      tdb.db.transaction(
        async (tx) => {
          ran = true;
          await tx.query('insert into db_test (id) values (23)');
        },
        { settings: 'set local no_such_setting_at_all = on' },
      ),
    );
    assert.equal(ran, false);
    assert.equal((await tdb.db.query('select 1 from db_test where id = 23')).rows.length, 0);
    assert.equal((await tdb.db.query<{ one: number }>('select 1 as one')).rows[0].one, 1);
  });
});

describe('LISTEN/NOTIFY', () => {
  it('delivers a notification sent inside a transaction on commit, and none on rollback', async () => {
    const got: string[] = [];
    const unlisten = await tdb.db.listen('db_test_channel', (p) => got.push(p));
    try {
      await assert.rejects(
        tdb.db.transaction(async (tx) => {
          await notify(tx, 'db_test_channel', 'rolled back');
          throw new Error('no');
        }),
      );
      await tdb.db.transaction(async (tx) => {
        await notify(tx, 'db_test_channel', 'first');
        await notify(tx, 'db_test_channel', 'second');
      });
      // Notifications arrive in commit order: once this later one is heard,
      // anything the two transactions above sent has been heard too.
      await notify(tdb.db, 'db_test_channel', 'marker');
      await until(() => got.includes('marker'));
      assert.deepEqual(got, ['first', 'second', 'marker']);
      assert.equal(tdb.db.listening(), true);
    } finally {
      await unlisten();
    }
  });

  it('stops delivering after unlisten, and keeps other subscribers of the channel', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const unA = await tdb.db.listen('db_test_two', (p) => a.push(p));
    const unB = await tdb.db.listen('db_test_two', (p) => b.push(p));
    await notify(tdb.db, 'db_test_two', '1');
    await until(() => a.length === 1 && b.length === 1);
    await unA();
    await notify(tdb.db, 'db_test_two', '2');
    await until(() => b.length === 2);
    assert.deepEqual(a, ['1']);
    await unB();
  });
});

describe('ids', () => {
  it('makes UUIDv7s that sort by creation time', () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    assert.ok(ids.every(isUuid));
    assert.ok(ids.every((id) => id[14] === '7'));
    assert.ok(ids.every((id) => '89ab'.includes(id[19])), 'RFC 9562 variant');
    const now = Date.now();
    const ms = parseInt(newId(now).slice(0, 8) + newId(now).slice(9, 13), 16);
    assert.ok(ms >= now && ms <= now + 1, 'the first 48 bits are the millisecond');
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });
});
