import { recordAudit, type Actor } from '../auth/audit.ts';
import { notify, type Db } from '../db/db.ts';
import { failRevokedAgentDeliveries } from '../delivery/revoked-agent.ts';
import type { PlanTable } from '../orgs/plans.ts';
import { getOrganization } from '../orgs/organizations.ts';
import {
  AGENT_ENVIRONMENTS,
  AGENT_NAME_MAX,
  COLUMNS,
  generateAgentToken,
  getAgent,
  hashAgentToken,
  isAgentEnvironment,
  productionCapReached,
  type Agent,
  type AgentEnvironment,
} from './agents.ts';

/**
 * Members' management of enrolled agents: rename, change environment,
 * re-issue the token, revoke. A re-issued or revoked token must stop working
 * at once, including the live connection, which may sit on another node: the
 * row's connection_id is cleared and `NOTIFY weir_agents` tells every node to
 * re-check its sockets (src/agents/gateway.ts), which close what no longer matches.
 */
export const AGENTS_CHANNEL = 'weir_agents';

export type ManageResult =
  | { ok: true; agent: Agent; token?: string }
  | { ok: false; reason: 'not_found' | 'revoked' }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'plan_limit'; message: string; limit: number };

export interface AgentPatch {
  name?: string;
  environment?: AgentEnvironment;
}

/** Loads the agent under a row lock, refusing unknown and revoked ones. */
async function lockLive(tx: Parameters<Parameters<Db['transaction']>[0]>[0], organizationId: string, id: string) {
  const { rows } = await tx.query<{ id: string; revoked_at: Date | null }>(
    `select id, revoked_at from agents where id = $1::uuid and organization_id = $2::uuid for update`,
    [id, organizationId],
  );
  if (rows.length === 0) return { ok: false as const, reason: 'not_found' as const };
  if (rows[0].revoked_at) return { ok: false as const, reason: 'revoked' as const };
  return { ok: true as const };
}

/**
 * Renames an agent or changes its environment. Marking it production
 * counts against the plan's max_agents (the specification: "when enrolling
 * or marking agents production"); development is never capped.
 */
export async function updateAgent(db: Db, organizationId: string, id: string, patch: AgentPatch, actor: Actor, plans: PlanTable): Promise<ManageResult> {
  const name = patch.name === undefined ? undefined : patch.name.trim();
  if (name !== undefined && (name.length === 0 || name.length > AGENT_NAME_MAX)) return { ok: false, reason: 'invalid', message: `name must be 1-${AGENT_NAME_MAX} characters` };
  if (patch.environment !== undefined && !isAgentEnvironment(patch.environment)) {
    return { ok: false, reason: 'invalid', message: `environment must be one of ${AGENT_ENVIRONMENTS.join(', ')}` };
  }
  return db.transaction(async (tx) => {
    const live = await lockLive(tx, organizationId, id);
    if (!live.ok) return live;
    const before = (await getAgent(tx, organizationId, id))!;
    if (patch.environment === 'production' && before.environment !== 'production') {
      const org = (await getOrganization(tx, organizationId))!;
      const full = await productionCapReached(tx, org, plans);
      if (full) return full;
    }
    const { rows } = await tx.query<Agent>(
      `update agents set name = coalesce($3, name), environment = coalesce($4, environment), updated_at = now()
        where id = $1::uuid and organization_id = $2::uuid returning ${COLUMNS}`,
      [id, organizationId, name ?? null, patch.environment ?? null],
    );
    const agent = rows[0];
    const details: Record<string, unknown> = {};
    if (name !== undefined && name !== before.name) details.name = { from: before.name, to: name };
    if (patch.environment !== undefined && patch.environment !== before.environment) details.environment = { from: before.environment, to: patch.environment };
    if (Object.keys(details).length > 0) await recordAudit(tx, organizationId, actor, 'agent.updated', { type: 'agent', id, name: agent.name }, details);
    return { ok: true, agent };
  });
}

/** A new token for the agent; the old one stops at once, and so does the connection made with it. */
export async function reissueAgentToken(db: Db, organizationId: string, id: string, actor: Actor): Promise<ManageResult> {
  return db.transaction(async (tx) => {
    const live = await lockLive(tx, organizationId, id);
    if (!live.ok) return live;
    const token = generateAgentToken();
    const { rows } = await tx.query<Agent>(
      `update agents set token_hash = $3, connection_id = null, updated_at = now()
        where id = $1::uuid and organization_id = $2::uuid returning ${COLUMNS}`,
      [id, organizationId, hashAgentToken(token)],
    );
    await recordAudit(tx, organizationId, actor, 'agent.token_reissued', { type: 'agent', id, name: rows[0].name });
    await notify(tx, AGENTS_CHANNEL, id);
    return { ok: true, agent: rows[0], token };
  });
}

/**
 * Revokes an agent for good: its token stops, its connection closes on
 * whichever node holds it, it no longer counts toward max_agents, and the
 * deliveries it still owes end `failed` (src/delivery/revoked-agent.ts).
 * Revoking a revoked agent changes nothing and records nothing.
 */
export async function revokeAgent(db: Db, organizationId: string, id: string, actor: Actor): Promise<ManageResult> {
  return db.transaction(async (tx) => {
    const live = await lockLive(tx, organizationId, id);
    if (!live.ok && live.reason === 'not_found') return live;
    if (!live.ok) return { ok: true, agent: (await getAgent(tx, organizationId, id))! };
    const { rows } = await tx.query<Agent>(
      `update agents set revoked_at = now(), connection_id = null, updated_at = now()
        where id = $1::uuid and organization_id = $2::uuid returning ${COLUMNS}`,
      [id, organizationId],
    );
    // its waiting deliveries end now, in the same transaction: none can be claimed for a revoked agent in between
    let failed = 0;
    for (let n = -1; n !== 0; failed += n) n = await failRevokedAgentDeliveries(tx, id);
    await recordAudit(tx, organizationId, actor, 'agent.revoked', { type: 'agent', id, name: rows[0].name }, failed > 0 ? { deliveries_failed: failed } : undefined);
    await notify(tx, AGENTS_CHANNEL, id);
    return { ok: true, agent: rows[0] };
  });
}
