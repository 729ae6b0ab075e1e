import type { Role } from '../auth/permissions.ts';
import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { endpointNames } from './endpoint-ref.ts';
import { httpsUrlProblem, nameProblem, type Visibility } from './rules.ts';

/**
 * Saved destinations: the organization's library of HTTPS targets. Agent
 * targets are never saved.
 *
 * Visibility decides who sees a saved destination at all (anyone else gets
 * 404, as for an id of another organization):
 * - `org`: every member of the organization;
 * - `private`: its creator, and super_admins (so a departed member's entries
 *   can still be cleaned up);
 * - `restricted`: its creator, admins and super_admins.
 * It governs the library entry only: once attached, a forward destination is
 * seen by whoever may see the endpoint's destinations.
 */
export interface SavedDestination {
  id: string;
  organization_id: string;
  created_by: string | null;
  name: string;
  url: string;
  visibility: Visibility;
  is_reusable: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface SavedDestinationListItem extends SavedDestination {
  endpoint_count: number;
}

export interface Attachment {
  endpoint_id: string;
  endpoint_name: string;
  forward_destination_id: string;
}

/** Who is looking: visibility depends on the member and their live role. */
export interface Viewer {
  memberId: string;
  role: Role;
}

const COLUMNS = 'id, organization_id, created_by, name, url, visibility, is_reusable, created_at, updated_at';

/** SQL condition: the row is visible to the member in parameter $m with the role in parameter $r. */
function visibleTo(m: number, r: number): string {
  return `(visibility = 'org'
    or created_by = $${m}::uuid
    or (visibility = 'restricted' and $${r}::text in ('admin', 'super_admin'))
    or (visibility = 'private' and $${r}::text = 'super_admin'))`;
}

export async function insertSavedDestination(
  db: Queryable,
  input: { organizationId: string; createdBy: string; name: string; url: string; visibility: Visibility; isReusable: boolean },
): Promise<SavedDestination> {
  const { rows } = await db.query<SavedDestination>(
    `insert into destinations (id, organization_id, created_by, name, url, visibility, is_reusable)
     values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7) returning ${COLUMNS}`,
    [newId(), input.organizationId, input.createdBy, input.name, input.url, input.visibility, input.isReusable],
  );
  return rows[0];
}

/**
 * Saved destinations the viewer may see, newest first (ids are UUIDv7, so id
 * order is creation order), with how many endpoints each is attached to.
 * Fetch one more than the page size to learn whether there is more.
 */
export async function listSavedDestinations(
  db: Queryable,
  organizationId: string,
  viewer: Viewer,
  page: { limit: number; before?: string },
): Promise<SavedDestinationListItem[]> {
  const { rows } = await db.query<SavedDestinationListItem>(
    `select ${COLUMNS},
            (select count(distinct f.endpoint_id)::int from forward_destinations f where f.saved_destination_id = d.id) as endpoint_count
       from destinations d
      where organization_id = $1::uuid
        and ${visibleTo(2, 3)}
        and ($4::uuid is null or id < $4::uuid)
      order by id desc
      limit $5`,
    [organizationId, viewer.memberId, viewer.role, page.before ?? null, page.limit],
  );
  return rows;
}

export async function getSavedDestination(
  db: Queryable,
  organizationId: string,
  viewer: Viewer,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<SavedDestination | undefined> {
  const { rows } = await db.query<SavedDestination>(
    `select ${COLUMNS} from destinations
      where id = $1::uuid and organization_id = $2::uuid and ${visibleTo(3, 4)}${opts.lock ? ' for update' : ''}`,
    [id, organizationId, viewer.memberId, viewer.role],
  );
  return rows[0];
}

/** The https forward destinations made from a saved destination, in attachment order. */
export async function listAttachments(db: Queryable, organizationId: string, savedDestinationId: string): Promise<Attachment[]> {
  const { rows } = await db.query<{ id: string; endpoint_id: string }>(
    `select id, endpoint_id from forward_destinations
      where saved_destination_id = $1::uuid and organization_id = $2::uuid and destination_type = 'https'
      order by id`,
    [savedDestinationId, organizationId],
  );
  const names = await endpointNames(db, organizationId, rows.map((r) => r.endpoint_id));
  return rows.map((r) => ({ endpoint_id: r.endpoint_id, endpoint_name: names.get(r.endpoint_id) ?? '', forward_destination_id: r.id }));
}

export interface SavedPatch {
  name?: string;
  url?: string;
  visibility?: Visibility;
  is_reusable?: boolean;
}

export type UpdateSavedResult =
  | { ok: true; destination: SavedDestination }
  | { ok: false; reason: 'not_found'; message: string }
  | { ok: false; reason: 'invalid'; message: string };

/**
 * Edits a saved destination the viewer can see. A new URL is carried to
 * every forward destination attached from it in the same transaction: an
 * attachment is the saved target put to work, and a library entry whose
 * endpoints quietly kept forwarding to the old address would be a trap.
 */
export async function updateSavedDestination(tx: Queryable, organizationId: string, viewer: Viewer, id: string, patch: SavedPatch): Promise<UpdateSavedResult> {
  const problem = (patch.name !== undefined ? nameProblem(patch.name) : undefined) ?? (patch.url !== undefined ? httpsUrlProblem(patch.url) : undefined);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  const current = await getSavedDestination(tx, organizationId, viewer, id, { lock: true });
  if (!current) return { ok: false, reason: 'not_found', message: `Destination ${id} not found.` };
  const { rows } = await tx.query<SavedDestination>(
    `update destinations
        set name = coalesce($2, name), url = coalesce($3, url), visibility = coalesce($4, visibility),
            is_reusable = coalesce($5::boolean, is_reusable), updated_at = now()
      where id = $1::uuid
      returning ${COLUMNS}`,
    [current.id, patch.name?.trim() ?? null, patch.url ?? null, patch.visibility ?? null, patch.is_reusable ?? null],
  );
  const updated = rows[0];
  if (updated.url !== current.url) {
    await tx.query(`update forward_destinations set url = $2, updated_at = now() where saved_destination_id = $1::uuid and destination_type = 'https'`, [
      current.id,
      updated.url,
    ]);
  }
  return { ok: true, destination: updated };
}

/**
 * Deletes a saved destination the viewer can see. Its attachments keep
 * forwarding: they become stand-alone https forward destinations (the
 * foreign key sets saved_destination_id to null). Removing a library entry
 * must not silently stop production traffic; detach on the endpoint for that.
 */
export async function deleteSavedDestination(db: Queryable, organizationId: string, viewer: Viewer, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`delete from destinations where id = $1::uuid and organization_id = $2::uuid and ${visibleTo(3, 4)}`, [
    id,
    organizationId,
    viewer.memberId,
    viewer.role,
  ]);
  return rowCount > 0;
}
