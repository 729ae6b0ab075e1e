import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';

/** Who did something: the operator (operator API, no member), a member through an API key, or Weir itself. */
export type Actor = { type: 'operator' } | { type: 'member'; memberId: string } | { type: 'system' };

export interface AuditEntry {
  id: string;
  organization_id: string;
  actor_type: 'operator' | 'member' | 'system';
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  target_name: string | null;
  details: Record<string, unknown>;
  created_at: Date;
}

export async function recordAudit(
  db: Queryable,
  organizationId: string,
  actor: Actor,
  action: string,
  target: { type: string; id?: string; name?: string },
  details: Record<string, unknown> = {},
): Promise<void> {
  await db.query(
    `insert into audit_log (id, organization_id, actor_type, actor_id, action, target_type, target_id, target_name, details)
     values ($1::uuid, $2::uuid, $3, $4::uuid, $5, $6, $7::uuid, $8, $9::jsonb)`,
    [newId(), organizationId, actor.type, actor.type === 'member' ? actor.memberId : null, action, target.type, target.id ?? null, target.name ?? null, JSON.stringify(details)],
  );
}

/** Newest first, paged by id (ids are time-ordered). */
export async function listAudit(db: Queryable, organizationId: string, limit: number, before?: string): Promise<AuditEntry[]> {
  const { rows } = await db.query<AuditEntry>(
    `select id, organization_id, actor_type, actor_id, action, target_type, target_id, target_name, details, created_at
       from audit_log
      where organization_id = $1::uuid and ($2::uuid is null or id < $2::uuid)
      order by id desc
      limit $3`,
    [organizationId, before ?? null, limit],
  );
  return rows;
}
