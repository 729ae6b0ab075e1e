import { notify, type Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { recordAudit, type Actor } from './audit.ts';
import { AUTH_CHANNEL } from './authenticate.ts';
import { displayPrefix, generateKey, hashKey } from './key-format.ts';
import { scopeSetProblem, type AccessMode } from './permissions.ts';

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
  | { ok: false; reason: 'invalid'; message: string };

/** Mints a key for a member. The plain key is returned once, here, and never stored. */
export async function createApiKey(db: Queryable, input: NewKeyInput, actor: Actor, organizationId?: string): Promise<CreateKeyResult> {
  const problem = scopeSetProblem(input.accessMode, input.scopes);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) return { ok: false, reason: 'invalid', message: 'expires_at must be in the future' };
  const { rows: owners } = await db.query<{ organization_id: string; region: string; active: boolean }>(
    `select m.organization_id, o.region, m.active
       from members m join organizations o on o.id = m.organization_id
      where m.id = $1::uuid and ($2::uuid is null or m.organization_id = $2::uuid)`,
    [input.memberId, organizationId ?? null],
  );
  const owner = owners[0];
  if (!owner) return { ok: false, reason: 'member_not_found' };
  if (!owner.active) return { ok: false, reason: 'invalid', message: 'the member is deactivated; reactivate them before creating a key' };
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
  const { rows } = await db.query<ApiKey>(
    `update api_keys set revoked_at = coalesce(revoked_at, now())
      where id = $1::uuid and ($2::uuid is null or organization_id = $2::uuid)
      returning ${COLUMNS}`,
    [id, organizationId ?? null],
  );
  const apiKey = rows[0];
  if (!apiKey) return undefined;
  await recordAudit(db, apiKey.organization_id, actor, 'api_key.revoked', { type: 'api_key', id: apiKey.id, name: apiKey.name });
  await notify(db, AUTH_CHANNEL, `key:${id}`);
  return apiKey;
}

export type UpdateScopesResult = { ok: true; apiKey: ApiKey } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'invalid'; message: string };

/** Changes a key's access mode and scopes (the dashboard's "edit key"). */
export async function updateApiKeyAccess(
  db: Queryable,
  id: string,
  access: { accessMode: AccessMode; scopes: string[] },
  actor: Actor,
  organizationId?: string,
): Promise<UpdateScopesResult> {
  const problem = scopeSetProblem(access.accessMode, access.scopes);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  const { rows } = await db.query<ApiKey>(
    `update api_keys set access_mode = $3, scopes = $4::text[]
      where id = $1::uuid and ($2::uuid is null or organization_id = $2::uuid) and revoked_at is null
      returning ${COLUMNS}`,
    [id, organizationId ?? null, access.accessMode, access.accessMode === 'custom' ? [...new Set(access.scopes)] : []],
  );
  const apiKey = rows[0];
  if (!apiKey) return { ok: false, reason: 'not_found' };
  await recordAudit(db, apiKey.organization_id, actor, 'api_key.access_changed', { type: 'api_key', id, name: apiKey.name }, {
    access_mode: apiKey.access_mode,
    scopes: apiKey.scopes,
  });
  await notify(db, AUTH_CHANNEL, `key:${id}`);
  return { ok: true, apiKey };
}
