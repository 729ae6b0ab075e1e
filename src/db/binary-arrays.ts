/**
 * Array parameters in PostgreSQL's binary format, for the statements that
 * pass a column a row (`unnest($1::uuid[], ...)`: the capture statement,
 * the completion). A Buffer parameter travels in binary on both drivers
 * (PGlite's named statements, src/db/pglite.ts bindAndExecute, and
 * node-postgres), where the server reads it with array_recv and the
 * element type's own receive function: a uuid is 16 bytes copied, a
 * timestamp 8, a text its UTF-8 bytes, with nothing parsed. As an array
 * literal, the same parameter is scanned for quotes and braces by
 * array_in, and each element parsed by its input function (uuid_in reads
 * 36 characters of hex, timestamptz_in a date in any style), after the
 * caller built and escaped the literal: on PGlite that is CPU of the
 * thread the forwards and captures run on (docs/forwarding.md, "Array
 * parameters in binary").
 *
 * The format (src/backend/utils/adt/arrayfuncs.c, array_recv): int32 number
 * of dimensions (0 for an empty array), int32 flags (1: has nulls), int32
 * element type OID, then per dimension int32 length and int32 lower bound
 * (1), then per element int32 byte length (-1: NULL) and the bytes. The
 * server checks that the element type is the parameter's; one that is not
 * is an error, never a silent conversion.
 *
 * Each encoder takes exactly the JavaScript values its callers hold (ids as
 * canonical text, times as Date, counts as integers) and throws a TypeError
 * on anything else: these parameters are made by Weir, so a wrong value is
 * a bug to surface, not input to coerce.
 */

const OID = { bool: 16, int4: 23, text: 25, float8: 701, timestamptz: 1184, uuid: 2950, bytea: 17 } as const;

/** The array header for `n` elements, with `payload` more bytes after it. */
function header(n: number, elementOid: number, hasNull: boolean, payload: number): Buffer {
  const buf = Buffer.allocUnsafe((n === 0 ? 12 : 20) + payload);
  buf.writeInt32BE(n === 0 ? 0 : 1, 0);
  buf.writeInt32BE(hasNull ? 1 : 0, 4);
  buf.writeInt32BE(elementOid, 8);
  if (n > 0) {
    buf.writeInt32BE(n, 12);
    buf.writeInt32BE(1, 16);
  }
  return buf;
}

/** The count of nulls (null or undefined) among `values`. */
function nulls(values: readonly unknown[]): number {
  let n = 0;
  for (const v of values) if (v == null) n++;
  return n;
}

/** An array of fixed-size elements, each written by `write` at `at` (its length already written before it). */
function fixed<T>(values: readonly (T | null | undefined)[], elementOid: number, size: number, write: (buf: Buffer, v: T, at: number) => void): Buffer {
  const absent = nulls(values);
  const buf = header(values.length, elementOid, absent > 0, (values.length - absent) * (4 + size) + absent * 4);
  let at = values.length === 0 ? 12 : 20;
  for (const v of values) {
    if (v == null) {
      buf.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    buf.writeInt32BE(size, at);
    write(buf, v, at + 4);
    at += 4 + size;
  }
  return buf;
}

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) NIBBLE[65 + i] = NIBBLE[97 + i] = 10 + i;

/** Writes a canonical UUID (8-4-4-4-12 hex digits, either case) as its 16 bytes. */
function writeUuid(buf: Buffer, id: string, at: number): void {
  if (typeof id !== 'string' || id.length !== 36 || id[8] !== '-' || id[13] !== '-' || id[18] !== '-' || id[23] !== '-') {
    throw new TypeError(`not a UUID: ${JSON.stringify(id)}`);
  }
  let o = at;
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) i++;
    const c1 = id.charCodeAt(i);
    const c2 = id.charCodeAt(i + 1);
    const hi = c1 < 128 ? NIBBLE[c1] : -1;
    const lo = c2 < 128 ? NIBBLE[c2] : -1;
    if (hi < 0 || lo < 0) throw new TypeError(`not a UUID: ${JSON.stringify(id)}`);
    buf[o++] = (hi << 4) | lo;
  }
}

export function uuidArray(values: readonly (string | null | undefined)[]): Buffer {
  return fixed(values, OID.uuid, 16, writeUuid);
}

export function int4Array(values: readonly (number | null | undefined)[]): Buffer {
  return fixed(values, OID.int4, 4, (buf, v, at) => {
    if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647) throw new TypeError(`not a 32-bit integer: ${v}`);
    buf.writeInt32BE(v, at);
  });
}

export function float8Array(values: readonly (number | null | undefined)[]): Buffer {
  return fixed(values, OID.float8, 8, (buf, v, at) => {
    if (typeof v !== 'number') throw new TypeError(`not a number: ${String(v)}`);
    buf.writeDoubleBE(v, at);
  });
}

export function boolArray(values: readonly (boolean | null | undefined)[]): Buffer {
  return fixed(values, OID.bool, 1, (buf, v, at) => {
    if (typeof v !== 'boolean') throw new TypeError(`not a boolean: ${String(v)}`);
    buf[at] = v ? 1 : 0;
  });
}

/** PostgreSQL's timestamps count microseconds from 2000-01-01 00:00 UTC. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
const TWO_32 = 2 ** 32;

export function timestamptzArray(values: readonly (Date | null | undefined)[]): Buffer {
  return fixed(values, OID.timestamptz, 8, (buf, v, at) => {
    const ms = v instanceof Date ? v.getTime() : NaN;
    if (!Number.isFinite(ms)) throw new TypeError(`not a valid Date: ${String(v)}`);
    // Whole milliseconds (a Date has no finer part) times 1000 stay exact
    // integers in a double for any valid Date (at most 8.64e18 µs: beyond
    // 2^53, so split into two 32-bit halves by BigInt there).
    const us = (ms - POSTGRES_EPOCH_MS) * 1000;
    if (Number.isSafeInteger(us)) {
      const high = Math.floor(us / TWO_32);
      buf.writeInt32BE(high, at);
      buf.writeUInt32BE(us - high * TWO_32, at + 4);
    } else {
      buf.writeBigInt64BE(BigInt(ms - POSTGRES_EPOCH_MS) * 1000n, at);
    }
  });
}

/** Elements of their own length: each text's UTF-8, each Buffer's bytes. */
function variable<T extends string | Uint8Array>(values: readonly (T | null | undefined)[], elementOid: number, what: string, check: (v: unknown) => v is T): Buffer {
  let payload = 0;
  let absent = 0;
  const lengths = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v == null) {
      absent++;
      lengths[i] = -1;
      payload += 4;
      continue;
    }
    if (!check(v)) throw new TypeError(`not a ${what}: ${String(v)}`);
    lengths[i] = typeof v === 'string' ? Buffer.byteLength(v) : (v as Uint8Array).byteLength;
    payload += 4 + lengths[i];
  }
  const buf = header(values.length, elementOid, absent > 0, payload);
  let at = values.length === 0 ? 12 : 20;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    buf.writeInt32BE(lengths[i], at);
    at += 4;
    if (v == null) continue;
    if (typeof v === 'string') at += buf.write(v, at, 'utf8');
    else {
      buf.set(v as Uint8Array, at);
      at += (v as Uint8Array).byteLength;
    }
  }
  return buf;
}

/**
 * Texts as UTF-8, unescaped. A NUL character is refused by the server
 * (invalid byte sequence), as PostgreSQL's text refuses it in any format:
 * callers replace it first, as they did for the literals.
 */
export function textArray(values: readonly (string | null | undefined)[]): Buffer {
  return variable(values, OID.text, 'string', (v): v is string => typeof v === 'string');
}

export function byteaArray(values: readonly (Uint8Array | null | undefined)[]): Buffer {
  return variable(values, OID.bytea, 'Buffer', (v): v is Uint8Array => v instanceof Uint8Array);
}
