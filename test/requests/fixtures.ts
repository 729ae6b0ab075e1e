import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/db.ts';
import { storeCaptures as storeCaptureGroup } from '../../src/ingest/store.ts';
import { idFloor } from '../../src/requests/capture-ids.ts';
import type { Capture } from '../../src/requests/captures.ts';
import { captureOf } from '../helpers/fixtures.ts';

/**
 * A UUIDv7 of exactly millisecond `ms` (newId() never goes back in time, so
 * it cannot make ids for the past that tests of time filters and retention need).
 */
export function idAt(ms: number): string {
  const floor = idFloor(ms).replace(/-/g, '');
  const rand = randomBytes(10).toString('hex');
  const hex = floor.slice(0, 12) + '7' + rand.slice(0, 3) + ((parseInt(rand[3], 16) & 0x3) | 0x8).toString(16) + rand.slice(4, 19);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export type CaptureSpec = Partial<Capture> & { at?: number };

/**
 * Stores captures directly (not through HTTP, but through the ingest's own
 * capture statement, src/ingest/store.ts), each at its `at` millisecond,
 * oldest given first. Throws unless every one was stored.
 */
export async function storeCaptures(db: Db, e: { id: string; organization_id: string }, items: CaptureSpec[]): Promise<Capture[]> {
  const caps = items.map(({ at, ...it }) =>
    captureOf(e, {
      ...it,
      id: at === undefined ? undefined : idAt(at),
      body: it.body ?? Buffer.from('{}'),
      headers: it.headers ?? [['Content-Type', 'application/json']],
      content_type: it.content_type === undefined ? 'application/json' : it.content_type,
      source_ip: '192.0.2.1',
    }),
  );
  const outcomes = await storeCaptureGroup(db, caps);
  assert.deepEqual(outcomes, caps.map(() => 'stored'), 'every capture stored');
  return caps;
}
