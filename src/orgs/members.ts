import { notify, type Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { AUTH_CHANNEL } from '../auth/authenticate.ts';
import { recordAudit, type Actor } from '../auth/audit.ts';
import { grantProblem } from '../auth/grants.ts';
import type { Role } from '../auth/permissions.ts';
import { lockOrganization } from './organizations.ts';
import { hashPassword } from './passwords.ts';

export interface Member {
  id: string;
  organization_id: string;
  email: string;
  role: Role;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, organization_id, email, role, active, created_at, updated_at';
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export function isEmail(v: unknown): v is string {
  return typeof v === 'string' && v.length <= 320 && EMAIL_RE.test(v);
}

export type CreateMemberResult = { ok: true; member: Member } | { ok: false; reason: 'email_taken' };

export async function createMember(
  db: Queryable,
  input: { organizationId: string; email: string; role: Role; password?: string },
  actor: Actor,
): Promise<CreateMemberResult> {
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  // ON CONFLICT rather than catching the unique violation: an error inside
  // the caller's transaction would abort all of it.
  const { rows } = await db.query<Member>(
    `insert into members (id, organization_id, email, role, password_hash)
     values ($1::uuid, $2::uuid, $3, $4, $5)
     on conflict (organization_id, lower(email)) do nothing
     returning ${COLUMNS}`,
    [newId(), input.organizationId, input.email, input.role, passwordHash],
  );
  const member = rows[0];
  if (!member) return { ok: false, reason: 'email_taken' };
  await recordAudit(db, input.organizationId, actor, 'member.created', { type: 'member', id: member.id, name: input.email }, { role: input.role });
  return { ok: true, member };
}

export async function getMember(db: Queryable, id: string, organizationId?: string): Promise<Member | undefined> {
  const { rows } = await db.query<Member>(
    `select ${COLUMNS} from members where id = $1::uuid and ($2::uuid is null or organization_id = $2::uuid)`,
    [id, organizationId ?? null],
  );
  return rows[0];
}

/** Newest first, paged by id (ids are time-ordered); pass limit + 1 to learn whether there is more. */
export async function listMembers(db: Queryable, organizationId: string, limit: number, before?: string): Promise<Member[]> {
  const { rows } = await db.query<Member>(
    `select ${COLUMNS} from members
      where organization_id = $1::uuid and ($2::uuid is null or id < $2::uuid)
      order by id desc limit $3`,
    [organizationId, before ?? null, limit],
  );
  return rows;
}

export type UpdateMemberResult =
  | { ok: true; member: Member }
  | { ok: false; reason: 'not_found' }
  /** The acting member would grant a role above their own, or touch a member who outranks them. */
  | { ok: false; reason: 'escalation'; message: string }
  /** The change would leave the organization without an active super_admin. */
  | { ok: false; reason: 'last_super_admin' };

/**
 * Changes a member's role or active flag; run it in a transaction. Their keys
 * follow at once: every node drops its cached auth contexts on the NOTIFY
 * sent with the commit. `actorRole` is the acting member's live role (absent
 * for the operator): members cannot raise anyone above themselves. Nobody
 * may demote or deactivate the last active super_admin, or the organization
 * could never again invite or manage anyone.
 */
export async function updateMember(
  db: Queryable,
  id: string,
  patch: { role?: Role; active?: boolean },
  actor: Actor,
  opts: { organizationId?: string; actorRole?: Role } = {},
): Promise<UpdateMemberResult> {
  const found = await getMember(db, id, opts.organizationId);
  if (!found) return { ok: false, reason: 'not_found' };
  // Locking the organization row serialises member changes within it, so two
  // super_admins demoting each other at once cannot both see the other one
  // still standing; the member is read again under the lock.
  await lockOrganization(db, found.organization_id);
  const before = (await getMember(db, id)) ?? found;
  const refused = grantProblem(opts.actorRole, { kind: 'member', currentRole: before.role, newRole: patch.role });
  if (refused) return { ok: false, reason: 'escalation', message: refused };
  const losesSuperAdmin =
    before.role === 'super_admin' && before.active && ((patch.role !== undefined && patch.role !== 'super_admin') || patch.active === false);
  if (losesSuperAdmin) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from members
        where organization_id = $1::uuid and role = 'super_admin' and active and id <> $2::uuid`,
      [before.organization_id, id],
    );
    if (rows[0].n === 0) return { ok: false, reason: 'last_super_admin' };
  }
  const { rows } = await db.query<Member>(
    `update members set role = coalesce($2, role), active = coalesce($3, active), updated_at = now()
      where id = $1::uuid returning ${COLUMNS}`,
    [id, patch.role ?? null, patch.active ?? null],
  );
  const after = rows[0];
  if (after.role !== before.role) {
    await recordAudit(db, after.organization_id, actor, 'member.role_changed', { type: 'member', id, name: after.email }, { from: before.role, to: after.role });
  }
  if (after.active !== before.active) {
    await recordAudit(db, after.organization_id, actor, after.active ? 'member.reactivated' : 'member.deactivated', { type: 'member', id, name: after.email });
  }
  await notify(db, AUTH_CHANNEL, `member:${id}`);
  return { ok: true, member: after };
}
