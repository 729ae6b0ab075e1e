import { notify, type Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { recordAudit, type Actor } from './audit.ts';
import { AUTH_CHANNEL } from './authenticate.ts';
import { displayPrefix, generateKey, hashKey } from './key-format.ts';
import { grantProblem } from './grants.ts';
import { scopeSetProblem, type AccessMode, type Role } from './permissions.ts';

export interface ApiKey {
  id: string;
  organization_id: string;
  member_id: string;
  name: string;
  display_prefix: string;
  access_mode: AccessMode;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_by: string | null;
  created_at: Date;
}

const COLUMNS = 'id, organization_id, member_id, name, display_prefix, access_mode, scopes, expires_at, revoked_at, last_used_at, created_by, created_at';

export interface NewKeyInput {
  memberId: string;
  name: string;
  accessMode: AccessMode;
  scopes: string[];
  expiresAt?: Date;
}

export type CreateKeyResult =
  | { ok: true; apiKey: ApiKey; key: string }
  | { ok: false; reason: 'member_not_found' }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'escalation'; message: string };

/**
 * Mints a key for a member. The plain key is returned once, here, and never
 * stored. `actorRole` (a member acting through the API) refuses a key for a
 * member who outranks the actor: whoever mints a key holds it, so it must
 * not act above the actor's role (and the authenticator also lowers such a
 * key to its creator's live role for good).
 */
export async function createApiKey(
  db: Queryable,
  input: NewKeyInput,
  actor: Actor,
  opts: { organizationId?: string; actorRole?: Role } = {},
): Promise<CreateKeyResult> {
  const { organizationId, actorRole } = opts;
  const problem = scopeSetProblem(input.accessMode, input.scopes);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) return { ok: false, reason: 'invalid', message: 'Field "expires_at" must be in the future.' };
  const { rows: owners } = await db.query<{ organization_id: string; region: string; active: boolean; role: Role }>(
    `select m.organization_id, o.region, m.active, m.role
       from members m join organizations o on o.id = m.organization_id
      where m.id = $1::uuid and ($2::uuid is null or m.organization_id = $2::uuid)`,
    [input.memberId, organizationId ?? null],
  );
  const owner = owners[0];
  if (!owner) return { ok: false, reason: 'member_not_found' };
  if (!owner.active) return { ok: false, reason: 'invalid', message: 'The member is deactivated; reactivate them before creating a key.' };
  const refused = grantProblem(actorRole, { kind: 'key', ownerRole: owner.role, verb: 'create' });
  if (refused) return { ok: false, reason: 'escalation', message: refused };
  const key = generateKey(owner.region);
  const { rows } = await db.query<ApiKey>(
    `insert into api_keys (id, organization_id, member_id, name, key_hash, display_prefix, access_mode, scopes, expires_at, created_by)
     values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8::text[], $9, $10::uuid)
     returning ${COLUMNS}`,
    [
      newId(),
      owner.organization_id,
      input.memberId,
      input.name,
      hashKey(key),
      displayPrefix(key),
      input.accessMode,
      input.accessMode === 'custom' ? [...new Set(input.scopes)] : [],
      input.expiresAt ?? null,
      actor.type === 'member' ? actor.memberId : null,
    ],
  );
  const apiKey = rows[0];
  await recordAudit(db, owner.organization_id, actor, 'api_key.created', { type: 'api_key', id: apiKey.id, name: apiKey.name }, {
    member_id: input.memberId,
    access_mode: apiKey.access_mode,
    scopes: apiKey.scopes,
  });
  return { ok: true, apiKey, key };
}

export async function getApiKey(db: Queryable, id: string, organizationId?: string): Promise<ApiKey | undefined> {
  const { rows } = await db.query<ApiKey>(
    `select ${COLUMNS} from api_keys where id = $1::uuid and ($2::uuid is null or organization_id = $2::uuid)`,
    [id, organizationId ?? null],
  );
  return rows[0];
}

export async function listApiKeys(db: Queryable, filter: { organizationId: string; memberId?: string }): Promise<ApiKey[]> {
  const { rows } = await db.query<ApiKey>(
    `select ${COLUMNS} from api_keys
      where organization_id = $1::uuid and ($2::uuid is null or member_id = $2::uuid)
      order by id desc`,
    [filter.organizationId, filter.memberId ?? null],
  );
  return rows;
}

/**
 * Revokes a key for good. Revoking an already revoked key is a no-op that
 * still answers the key (idempotent DELETE). Every node stops accepting it
 * from its next request: the NOTIFY goes out with the commit.
 */
export async function revokeApiKey(db: Queryable, id: string, actor: Actor, organizationId?: string): Promise<ApiKey | undefined> {
  // `was` is the revoked_at before this statement (the sub-select sees the
  // row as it was), so a repeated DELETE writes no second audit entry.
  const { rows } = await db.query<ApiKey & { was: Date | null }>(
    `update api_keys k set revoked_at = coalesce(k.revoked_at, now())
       from (select id, revoked_at as was from api_keys where id = $1::uuid for update) prev
      where k.id = prev.id and ($2::uuid is null or k.organization_id = $2::uuid)
      returning ${COLUMNS.split(', ').map((c) => `k.${c}`).join(', ')}, prev.was`,
    [id, organizationId ?? null],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { was, ...apiKey } = row;
  if (was === null) {
    await recordAudit(db, apiKey.organization_id, actor, 'api_key.revoked', { type: 'api_key', id: apiKey.id, name: apiKey.name });
    await notify(db, AUTH_CHANNEL, `key:${id}`);
  }
  return apiKey;
}

export type UpdateKeyResult =
  | { ok: true; apiKey: ApiKey }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'escalation'; message: string };

/** A change to a key: its access (mode and scopes together), its expiry (null: never), or both. */
export interface KeyPatch {
  access?: { accessMode: AccessMode; scopes: string[] };
  expiresAt?: Date | null;
}

/**
 * Changes a key's access mode and scopes and/or its expiry (the dashboard's
 * "edit key"); run it in a transaction. It passes the same rules as creating
 * the key: a valid scope set, an expiry in the future, and the rank rule of
 * grants.ts against the key's owner (`actorRole`, absent for the operator),
 * so an admin cannot widen or extend a super_admin's key.
 */
export async function updateApiKey(
  db: Queryable,
  id: string,
  patch: KeyPatch,
  actor: Actor,
  opts: { organizationId?: string; actorRole?: Role } = {},
): Promise<UpdateKeyResult> {
  if (patch.access) {
    const problem = scopeSetProblem(patch.access.accessMode, patch.access.scopes);
    if (problem) return { ok: false, reason: 'invalid', message: problem };
  }
  if (patch.expiresAt && patch.expiresAt.getTime() <= Date.now()) return { ok: false, reason: 'invalid', message: 'Field "expires_at" must be in the future.' };
  // The owner's role is read under the key's row lock, so the check and the write see one state.
  const { rows: found } = await db.query<{ owner_role: Role }>(
    `select m.role as owner_role from api_keys k join members m on m.id = k.member_id
      where k.id = $1::uuid and ($2::uuid is null or k.organization_id = $2::uuid) and k.revoked_at is null
      for update of k`,
    [id, opts.organizationId ?? null],
  );
  if (!found[0]) return { ok: false, reason: 'not_found' };
  const refused = grantProblem(opts.actorRole, { kind: 'key', ownerRole: found[0].owner_role, verb: 'change' });
  if (refused) return { ok: false, reason: 'escalation', message: refused };
  const { access } = patch;
  const { rows } = await db.query<ApiKey>(
    `update api_keys set access_mode = coalesce($2, access_mode), scopes = coalesce($3::text[], scopes),
                         expires_at = case when $4::boolean then $5::timestamptz else expires_at end
      where id = $1::uuid
      returning ${COLUMNS}`,
    [
      id,
      access?.accessMode ?? null,
      access ? (access.accessMode === 'custom' ? [...new Set(access.scopes)] : []) : null,
      patch.expiresAt !== undefined,
      patch.expiresAt ?? null,
    ],
  );
  const apiKey = rows[0];
  if (access) {
    await recordAudit(db, apiKey.organization_id, actor, 'api_key.access_changed', { type: 'api_key', id, name: apiKey.name }, {
      access_mode: apiKey.access_mode,
      scopes: apiKey.scopes,
    });
  }
  if (patch.expiresAt !== undefined) {
    await recordAudit(db, apiKey.organization_id, actor, 'api_key.expiry_changed', { type: 'api_key', id, name: apiKey.name }, { expires_at: apiKey.expires_at });
  }
  await notify(db, AUTH_CHANNEL, `key:${id}`);
  return { ok: true, apiKey };
}

/** Changes a key's access mode and scopes: updateApiKey with access only. */
export async function updateApiKeyAccess(
  db: Queryable,
  id: string,
  access: { accessMode: AccessMode; scopes: string[] },
  actor: Actor,
  opts: { organizationId?: string; actorRole?: Role } = {},
): Promise<UpdateKeyResult> {
  return updateApiKey(db, id, { access }, actor, opts);
}
