import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse, PGlite, protocol } from '@electric-sql/pglite';
import { bindAndExecute } from '../../src/db/pglite.ts';
import { RawOutput, readResult } from '../../src/db/pglite-results.ts';

// bindAndExecute writes a named statement's run itself (src/db/pglite.ts):
// byte for byte what PGlite's own serialiser writes for the same messages.
test('bindAndExecute writes the same Bind, Describe, Execute and Sync as the generic serialiser', () => {
  const big = Buffer.alloc(70_000, 0xab);
  const cases: (string | Uint8Array | null)[][] = [
    [],
    ['{1,2}', null, '', 'ä€𝄞 "quoted" \\ back'],
    [Buffer.from([0, 0x5c, 0xff]), Buffer.alloc(0), big],
    // a view into a larger buffer: only its own bytes travel
    [Buffer.from('xxhelloxx').subarray(2, 7), 'tail'],
  ];
  const { serialize } = protocol;
  for (const values of cases) {
    for (const name of ['weir_capture', 'é_statement']) {
      const expected = Buffer.concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute(), serialize.sync()]);
      assert.deepEqual(bindAndExecute(name, values), expected, `${name} with ${values.length} values`);
      // with result formats: the Bind ends with their count and one code a column, and its length counts them
      // (PGlite's serialiser, given binary, writes the count and no code, so the expected bytes are made here)
      const bind = serialize.bind({ statement: name, values });
      const withFormats = Buffer.concat([bind.subarray(0, bind.length - 2), Buffer.from([0, 2, 0, 1, 0, 0])]);
      withFormats.writeInt32BE(withFormats.length - 1, 1);
      assert.deepEqual(bindAndExecute(name, values, [1, 0]), Buffer.concat([withFormats, expected.subarray(bind.length)]), `${name} with ${values.length} values, result formats`);
    }
  }
});

// readResult reads a named statement's raw output (src/db/pglite-results.ts):
// the same rows, fields, counts and errors as PGlite's own reader makes of the
// same bytes, however the output is cut into chunks.
test('readResult makes of raw output what PGlite\'s reader makes of it, in one chunk or many', async () => {
  const pg = await PGlite.create();
  try {
    await pg.exec("create table t (id int primary key, v text); insert into t values (1, 'one')");
    const { serialize } = protocol;
    const run = async (name: string, text: string, values: (string | null)[]) => {
      await pg.execProtocol(Buffer.concat([serialize.parse({ name, text }), serialize.sync()]));
      const bytes = bindAndExecute(name, values);
      const raw = Buffer.from((await pg.execProtocolRaw(bytes, { syncToFs: false })).slice());
      return raw;
    };
    const cases: [string, string, (string | null)[]][] = [
      ['rows', "select g as n, 'ä€𝄞'::text || g as t, null::int as z, array[g, g]::int[] as a, json_build_object('g', g) as j from generate_series(1, $1::int) g", ['40']],
      ['none', 'select 1 as n where false', []],
      ['update', 'update t set v = $1 where id = 1', ['uno']],
      ['insert', 'insert into t select g, null from generate_series(2, $1::int) g', ['6']],
    ];
    for (const [name, text, values] of cases) {
      const raw = await run(name, text, values);
      const messages: unknown[] = [];
      new protocol.Parser().parse(raw, (m) => messages.push(m));
      const theirs = parse.parseResults(messages as Parameters<typeof parse.parseResults>[0], pg.parsers)[0];
      for (const size of [raw.length, 1, 7, 64]) {
        const out = new RawOutput();
        for (let i = 0; i < raw.length; i += size) out.take(raw.subarray(i, i + size));
        const ours = readResult(out.bytes(), pg.parsers, () => assert.fail('no notification here'));
        assert.deepEqual(ours.rows, theirs.rows, `${name}, chunks of ${size}`);
        assert.deepEqual(ours.fields, theirs.fields, name);
        assert.equal(ours.affectedRows, theirs.affectedRows, name);
      }
    }
    // a bytea column asked for in binary arrives as its bytes, in a Buffer of its own; the text column beside it as text
    await pg.execProtocol(Buffer.concat([serialize.parse({ name: 'bytes', text: "select 'x' as t, decode($1, 'hex') as b" }), serialize.sync()]));
    for (const hex of ['', '00ff5c78', 'ab'.repeat(70_000)]) {
      const raw = Buffer.from((await pg.execProtocolRaw(bindAndExecute('bytes', [hex], [0, 1]), { syncToFs: false })).slice());
      const [row] = readResult(raw, pg.parsers, () => {}).rows as { t: string; b: Buffer }[];
      assert.equal(row.t, 'x');
      assert.ok(Buffer.isBuffer(row.b));
      assert.equal(row.b.toString('hex'), hex);
      raw.fill(0);
      assert.equal(row.b.toString('hex'), hex, 'a copy, not a view of the output');
    }
    // an error: the same DatabaseError PGlite throws, code and all
    const failing = await run('dup', 'insert into t values ($1::int, null)', ['1']);
    const error = (() => {
      try {
        readResult(failing, pg.parsers, () => {});
      } catch (e) {
        return e as { code?: string; constraint?: string; message: string };
      }
    })();
    assert.equal(error?.code, '23505');
    assert.equal(error?.constraint, 't_pkey');
    assert.match(error?.message ?? '', /duplicate key/);
    // a notification to a channel this session listens on comes out with its channel and payload
    await pg.exec('listen "Chan_1"');
    const heard: [string, string][] = [];
    readResult(await run('note', "select pg_notify('Chan_1', $1)", ['pay,load ä']), pg.parsers, (c, p) => heard.push([c, p]));
    assert.deepEqual(heard, [['Chan_1', 'pay,load ä']]);
  } finally {
    await pg.close();
  }
});
