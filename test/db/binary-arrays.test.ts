import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { boolArray, byteaArray, float8Array, int4Array, textArray, timestamptzArray, uuidArray } from '../../src/db/binary-arrays.ts';
import { newId } from '../../src/db/ids.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

// Binary array parameters read by the server as the same arrays the text
// literals give, on whichever adapter this run uses, as named statements
// (the way the hot statements run them) and as plain ones.

let tdb: TestDb;

before(async () => {
  tdb = await openTestDb();
});

after(async () => {
  await tdb.close();
});

/** The array the server reads from `binary`, as text, both named and plain; and whether it equals `literal`. */
async function roundTrip(type: string, binary: Buffer, literal: unknown[]): Promise<string> {
  const sql = `select $1::${type}[]::text as got, $1::${type}[] is not distinct from $2::${type}[] as same, cardinality($1::${type}[]) as n`;
  const named = await tdb.db.query<{ got: string; same: boolean; n: number }>(sql, [binary, literal], { name: `binary_arrays_${type}` });
  const plain = await tdb.db.query<{ got: string; same: boolean; n: number }>(sql, [binary, literal]);
  assert.deepEqual(plain.rows, named.rows, 'a plain statement reads it as a named one does');
  assert.equal(named.rows[0].same, true, `${type}[]: ${named.rows[0].got} is the literal's array`);
  assert.equal(Number(named.rows[0].n), literal.length);
  return named.rows[0].got;
}

describe('binary array parameters', () => {
  it('uuid[]: canonical ids in either case, with nulls, and empty', async () => {
    const ids = [newId(), '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-ABCD-EF01-2345-6789abcdef00', null, newId()];
    const got = await roundTrip('uuid', uuidArray(ids), ids);
    assert.equal(got, `{${ids.map((id) => (id === null ? 'NULL' : id.toLowerCase())).join(',')}}`);
    assert.equal(await roundTrip('uuid', uuidArray([]), []), '{}');
  });

  it('int4[], float8[] and bool[]: extremes, fractions, nulls', async () => {
    const ints = [0, 1, -1, 2147483647, -2147483648, null, 42];
    assert.equal(await roundTrip('int', int4Array(ints), ints), '{0,1,-1,2147483647,-2147483648,NULL,42}');
    const floats = [0, 0.5, -1.25, 1e300, 3600, null];
    await roundTrip('float8', float8Array(floats), floats);
    const bools = [true, false, null, true];
    assert.equal(await roundTrip('bool', boolArray(bools), bools), '{t,f,NULL,t}');
  });

  it('timestamptz[]: milliseconds exact, before 2000 and far ahead, with nulls', async () => {
    const times = [new Date('2026-12-04T21:09:43.123Z'), new Date('1999-12-31T23:59:59.999Z'), new Date('1970-01-01T00:00:00.000Z'), null, new Date('2262-04-12T00:00:00.001Z'), new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999))];
    await roundTrip('timestamptz', timestamptzArray(times), times.map((t) => t?.toISOString() ?? null));
    const { rows } = await tdb.db.query<{ ms: number[] }>('select array(select (extract(epoch from t) * 1000)::float8 from unnest($1::timestamptz[]) t) as ms', [timestamptzArray(times)]);
    assert.deepEqual(rows[0].ms.map((m) => (m === null ? null : Number(m))), times.map((t) => t?.getTime() ?? null));
  });

  it('text[]: quotes, braces, backslashes, commas, the word NULL, empty and non-ASCII texts travel unescaped', async () => {
    const texts = ['plain', 'with "quotes"', '{braces}', 'back\\slash', 'a,b', 'NULL', '', 'grüße ✓ 𝄞', null, ' padded '];
    await roundTrip('text', textArray(texts), texts);
    const { rows } = await tdb.db.query<{ t: string | null }>('select t from unnest($1::text[]) with ordinality as u(t, i) order by i', [textArray(texts)]);
    assert.deepEqual(rows.map((r) => r.t), texts);
  });

  it('bytea[]: bytes as they are, zeros and empty included', async () => {
    const blobs = [Buffer.from([0, 1, 2, 255]), Buffer.alloc(0), null, Buffer.from('{"a":"\\\\"}')];
    const { rows } = await tdb.db.query<{ b: Buffer | null }>('select b from unnest($1::bytea[]) with ordinality as u(b, i) order by i', [byteaArray(blobs)]);
    assert.deepEqual(rows.map((r) => (r.b === null ? null : Buffer.from(r.b).toString('hex'))), blobs.map((b) => (b === null ? null : b.toString('hex'))));
  });

  it('refuses values that are not of the element type instead of coercing them', () => {
    assert.throws(() => uuidArray(['not-a-uuid']), TypeError);
    assert.throws(() => uuidArray(['0000000000000000000000000000000000000']), TypeError);
    assert.throws(() => uuidArray(['g0000000-0000-0000-0000-000000000000']), TypeError);
    assert.throws(() => int4Array([1.5]), TypeError);
    assert.throws(() => int4Array([2147483648]), TypeError);
    assert.throws(() => float8Array(['1' as unknown as number]), TypeError);
    assert.throws(() => boolArray([1 as unknown as boolean]), TypeError);
    assert.throws(() => timestamptzArray([new Date(NaN)]), TypeError);
    assert.throws(() => textArray([1 as unknown as string]), TypeError);
    assert.throws(() => byteaArray(['x' as unknown as Buffer]), TypeError);
  });

  it('is refused by the server when the element type is not the parameter\'s, not read as another type', async () => {
    await assert.rejects(tdb.db.query('select $1::int[] as v', [textArray(['1'])]), /array element type 25 \(text\) instead of expected 23/);
  });

  it('refuses a NUL in a text, as PostgreSQL\'s text does in any format', async () => {
    await assert.rejects(tdb.db.query('select $1::text[] as v', [textArray(['a\u0000b'])]), /invalid byte sequence|0x00/);
  });
});
