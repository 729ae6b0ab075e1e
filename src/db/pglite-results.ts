import { protocol } from '@electric-sql/pglite';

/**
 * A reader of PGlite's raw protocol output for the named statements
 * (pglite.ts): the rows of one Execute, its affected-row count, the error it
 * raised, and the notifications its commit delivered.
 *
 * PGlite's own reader (execProtocol, then parseResults) copied every field
 * into a new ArrayBuffer before decoding it, went through private-field
 * helpers for every integer, built a message object per row and then the
 * row itself with Object.fromEntries: about 30 µs of a forward's 385 on
 * PGlite (docs/forwarding.md). Here the raw bytes are read once, in place,
 * each text field decoded straight from them, each row built by assignment
 * in column order. Types are converted by PGlite's own parsers, so a row is
 * exactly what parseResults made of it.
 *
 * A statement's output can also carry notifications: PGlite is one session,
 * so a NOTIFY committed by this statement (a capture's wake-up) comes back
 * in its own output. PGlite delivers those to its listeners only when its
 * own reader sees them, so this reader hands them to `notify`.
 */

/** A result as parseResults made it, the part callers read. */
export interface RawResult {
  rows: Record<string, unknown>[];
  fields: { name: string; dataTypeID: number }[];
  affectedRows: number;
}

type Parsers = Record<number, ((text: string, typeId: number) => unknown) | undefined>;

/** Collects an Execute's output, chunk by chunk, as PGlite hands it over. */
export class RawOutput {
  private chunks: Buffer[] = [];
  private size = 0;

  /** onRawData for execProtocolRawStream: the chunk is a view of PGlite's memory, valid only during the call. */
  readonly take = (chunk: Uint8Array): void => {
    this.chunks.push(Buffer.from(chunk));
    this.size += chunk.byteLength;
  };

  bytes(): Buffer {
    return this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size);
  }
}

const ROW_DESCRIPTION = 0x54; // T
const DATA_ROW = 0x44; // D
const COMMAND_COMPLETE = 0x43; // C
const ERROR_RESPONSE = 0x45; // E
const NOTIFICATION = 0x41; // A

const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

/**
 * Reads one Bind/Describe/Execute/Sync's output. Throws the statement's
 * error as PGlite would (its DatabaseError, made by its own parser from the
 * ErrorResponse), after handing over any notification that came before it.
 */
export function readResult(buf: Buffer, parsers: Parsers, notify: (channel: string, payload: string) => void): RawResult {
  let fields: RawResult['fields'] = [];
  let convert: (((text: string, typeId: number) => unknown) | undefined)[] = [];
  /** Columns sent in binary: only bytea is asked for so (pglite.ts), and arrives as its bytes. */
  let binary: boolean[] = [];
  const rows: Record<string, unknown>[] = [];
  let affectedRows = 0;
  let error: Error | undefined;
  let off = 0;
  while (off + 5 <= buf.length) {
    const type = buf[off];
    const end = off + 1 + buf.readInt32BE(off + 1);
    let p = off + 5;
    switch (type) {
      case ROW_DESCRIPTION: {
        const n = buf.readInt16BE(p);
        p += 2;
        fields = new Array(n);
        convert = new Array(n);
        binary = new Array(n);
        for (let i = 0; i < n; i++) {
          const nul = buf.indexOf(0, p);
          const name = buf.toString('utf8', p, nul);
          // table oid (4), column number (2), the type's oid (4), its size (2), its modifier (4), the format (2)
          const dataTypeID = buf.readInt32BE(nul + 7);
          fields[i] = { name, dataTypeID };
          convert[i] = parsers[dataTypeID];
          binary[i] = buf.readInt16BE(nul + 17) === 1;
          p = nul + 19;
        }
        break;
      }
      case DATA_ROW: {
        const n = buf.readInt16BE(p);
        p += 2;
        const row: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) {
          const len = buf.readInt32BE(p);
          p += 4;
          if (len < 0) {
            row[fields[i].name] = null;
            continue;
          }
          if (binary[i]) {
            // a copy: a view would keep the whole output alive as long as the value
            row[fields[i].name] = Buffer.from(buf.subarray(p, p + len));
            p += len;
            continue;
          }
          const text = buf.toString('utf8', p, p + len);
          p += len;
          const parse = convert[i];
          row[fields[i].name] = parse ? parse(text, fields[i].dataTypeID) : text;
        }
        rows.push(row);
        break;
      }
      case COMMAND_COMPLETE: {
        const tag = buf.toString('utf8', p, end - 1).split(' ');
        const count = parseInt(tag[tag.length - 1], 10);
        if (COUNTED.has(tag[0]) && !Number.isNaN(count)) affectedRows += count;
        break;
      }
      case ERROR_RESPONSE:
        // the first error wins, as in PGlite's reader; made by its own parser so it is the same DatabaseError
        if (!error) new protocol.Parser().parse(buf.subarray(off, end), (message) => (error = message as unknown as Error));
        break;
      case NOTIFICATION: {
        const channelStart = p + 4; // after the sender's process id
        const channelEnd = buf.indexOf(0, channelStart);
        const payloadEnd = buf.indexOf(0, channelEnd + 1);
        notify(buf.toString('utf8', channelStart, channelEnd), buf.toString('utf8', channelEnd + 1, payloadEnd));
        break;
      }
      default:
      // ParseComplete, BindComplete, NoData, ReadyForQuery, notices: nothing to keep
    }
    off = end;
  }
  if (error) throw error;
  return { rows, fields, affectedRows };
}
