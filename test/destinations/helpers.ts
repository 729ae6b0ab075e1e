import assert from 'node:assert/strict';
import { enrollAgent, type Agent } from '../../src/agents/agents.ts';
import type { Queryable } from '../../src/db/db.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';

/** An enrolled agent of the organization (plans ignored: generous test limits). */
export async function enrolled(db: Queryable, organizationId: string, environment: 'production' | 'development' = 'development'): Promise<Agent> {
  const plans = structuredClone(DEFAULT_PLANS);
  for (const p of Object.values(plans)) p.max_agents = 1000;
  const r = await enrollAgent(db, { organizationId, name: `agent-${environment}`, environment, createdBy: null }, plans);
  assert.ok(r.ok);
  return r.agent;
}

/** Every saved and forward destination row, to prove a refused request changed nothing. */
export async function destinationState(db: Queryable): Promise<unknown> {
  const saved = await db.query('select * from destinations order by id');
  const forward = await db.query('select * from forward_destinations order by id');
  return JSON.parse(JSON.stringify({ saved: saved.rows, forward: forward.rows }));
}

export async function forwardCount(db: Queryable, endpointId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from forward_destinations where endpoint_id = $1::uuid', [endpointId]);
  return rows[0].n;
}

export async function savedCount(db: Queryable, organizationId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from destinations where organization_id = $1::uuid', [organizationId]);
  return rows[0].n;
}
