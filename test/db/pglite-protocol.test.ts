import assert from 'node:assert/strict';
import { test } from 'node:test';
import { protocol } from '@electric-sql/pglite';
import { bindAndExecute } from '../../src/db/pglite.ts';

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
    }
  }
});
