import type { Db } from '../../src/db/db.ts';
import { ENDPOINTS_CHANNEL } from '../../src/endpoints/endpoints.ts';

/**
 * Runs `change` (an endpoint write through the API) and, when it succeeded,
 * waits until its NOTIFY for `slug` is heard on `db`. The ingest listener's
 * endpoint cache subscribes on the same handle (one LISTEN connection per
 * process, its subscribers called in order), so by then the cache has
 * evicted the slug: the next capture sees the change. Without the wait, a
 * capture sent at once may beat the notification on PostgreSQL and be
 * answered from the cache, as it is meant to for a few milliseconds.
 */
export async function afterEndpointNotify<R extends { status: number }>(db: Db, slug: string, change: () => Promise<R>): Promise<R> {
  let heard!: () => void;
  const invalidated = new Promise<void>((r) => (heard = r));
  const unlisten = await db.listen(ENDPOINTS_CHANNEL, (payload) => payload === slug && heard());
  try {
    const res = await change();
    if (res.status >= 200 && res.status < 300) await invalidated;
    return res;
  } finally {
    await unlisten();
  }
}
