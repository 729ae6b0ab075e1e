import { notify, sqlState, UNIQUE_VIOLATION, type Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { AUTH_CHANNEL } from '../auth/authenticate.ts';
import { recordAudit, type Actor } from '../auth/audit.ts';
import type { Role } from '../auth/permissions.ts';
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
  try {
    const { rows } = await db.query<Member>(
      `insert into members (id, organization_id, email, role, password_hash)
       values ($1::uuid, $2::uuid, $3, $4, $5) returning ${COLUMNS}`,
      [newId(), input.organizationId, input.email, input.role, passwordHash],
    );
    await recordAudit(db, input.organizationId, actor, 'member.created', { type: 'member', id: rows[0].id, name: input.email }, { role: input.role });
    return { ok: true, member: rows[0] };
  } catch (err) {
    if (sqlState(err) === UNIQUE_VIOLATION) return { ok: false, reason: 'email_taken' };
    throw err;
  }
}

export async function getMember(db: Queryable, id: string, organizationId?: string): Promise<Member | undefined> {
  const { rows } = await db.query<Member>(
    `select ${COLUMNS} from members where id = $1::uuid and ($2::uuid is null or organization_id = $2::uuid)`,
    [id, organizationId ?? null],
  );
  return rows[0];
}

export async function listMembers(db: Queryable, organizationId: string): Promise<Member[]> {
  const { rows } = await db.query<Member>(`select ${COLUMNS} from members where organization_id = $1::uuid order by id`, [organizationId]);
  return rows;
}

/**
 * Changes a member's role or active flag. Their keys follow at once: every
 * node drops its cached auth contexts on the NOTIFY sent with the commit.
 */
export async function updateMember(
  db: Queryable,
  id: string,
  patch: { role?: Role; active?: boolean },
  actor: Actor,
  organizationId?: string,
): Promise<Member | undefined> {
  const before = await getMember(db, id, organizationId);
  if (!before) return undefined;
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
  return after;
}
