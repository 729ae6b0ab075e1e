import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { AUTH_CHANNEL } from '../auth/authenticate.ts';
import { notify } from '../db/db.ts';
import type { PlanName } from './plans.ts';

export interface Organization {
  id: string;
  name: string;
  plan: PlanName;
  region: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, plan, region, created_at, updated_at';

export async function createOrganization(db: Queryable, input: { name: string; plan: PlanName; region: string }): Promise<Organization> {
  const { rows } = await db.query<Organization>(
    `insert into organizations (id, name, plan, region) values ($1::uuid, $2, $3, $4) returning ${COLUMNS}`,
    [newId(), input.name, input.plan, input.region],
  );
  return rows[0];
}

/**
 * Locks an organization's row until the transaction ends, so changes that
 * check an organization-wide rule (a plan limit, the last super_admin) run
 * one after another, on every node. FOR NO KEY UPDATE, not FOR UPDATE: it
 * does not conflict with the KEY SHARE lock that every insert referencing
 * the organization takes (a capture group's deliveries), so ingest and
 * forwarding go on meanwhile. Returns its plan, or undefined when there is no
 * such organization.
 */
export async function lockOrganization(tx: Queryable, id: string): Promise<{ plan: string } | undefined> {
  const { rows } = await tx.query<{ plan: string }>('select plan from organizations where id = $1::uuid for no key update', [id]);
  return rows[0];
}

export async function getOrganization(db: Queryable, id: string): Promise<Organization | undefined> {
  const { rows } = await db.query<Organization>(`select ${COLUMNS} from organizations where id = $1::uuid`, [id]);
  return rows[0];
}

export async function listOrganizations(db: Queryable, limit: number, before?: string): Promise<Organization[]> {
  const { rows } = await db.query<Organization>(
    `select ${COLUMNS} from organizations where ($1::uuid is null or id < $1::uuid) order by id desc limit $2`,
    [before ?? null, limit],
  );
  return rows;
}

export async function updateOrganization(db: Queryable, id: string, patch: { plan?: PlanName; name?: string }): Promise<Organization | undefined> {
  const { rows } = await db.query<Organization>(
    `update organizations set plan = coalesce($2, plan), name = coalesce($3, name), updated_at = now()
      where id = $1::uuid returning ${COLUMNS}`,
    [id, patch.plan ?? null, patch.name ?? null],
  );
  // Cached auth contexts carry the plan.
  if (rows[0]) await notify(db, AUTH_CHANNEL, `org:${id}`);
  return rows[0];
}

export async function countOrganizations(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from organizations');
  return rows[0].n;
}
