import type { Queryable } from '../db/db.ts';
import { getEndpoint } from '../endpoints/endpoints.ts';

/** What destinations need to know about an endpoint. */
export interface EndpointRef {
  id: string;
  name: string;
}

/**
 * The one place destinations read endpoints. A plain lookup is the endpoints
 * module's own getEndpoint.
 *
 * With `lock`, the row is locked until the transaction ends so that two
 * attachments racing on one endpoint cannot both pass the plan's
 * max_forward_destinations count. FOR NO KEY UPDATE rather than FOR UPDATE:
 * it serialises attachments (and endpoint edits) the same way but does not
 * conflict with the KEY SHARE lock a foreign-key insert takes, so captures
 * being stored for this endpoint never wait on an attachment. src/endpoints
 * has no locking lookup and no lookup of several names at once, hence the
 * two queries of its table below.
 */
export async function findEndpoint(db: Queryable, organizationId: string, id: string, opts: { lock?: boolean } = {}): Promise<EndpointRef | undefined> {
  if (!opts.lock) return getEndpoint(db, organizationId, id);
  const { rows } = await db.query<EndpointRef>('select id, name from endpoints where id = $1::uuid and organization_id = $2::uuid for no key update', [
    id,
    organizationId,
  ]);
  return rows[0];
}

/** Names of the organization's endpoints among `ids` (ids of other organizations are simply absent). */
export async function endpointNames(db: Queryable, organizationId: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<EndpointRef>(
    'select id, name from endpoints where id = any($1::uuid[]) and organization_id = $2::uuid',
    [[...new Set(ids)], organizationId],
  );
  return new Map(rows.map((r) => [r.id, r.name]));
}
