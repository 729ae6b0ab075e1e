import { createHash, randomBytes } from 'node:crypto';
import { recordAudit, type Actor } from '../auth/audit.ts';
import type { Db, Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { getOrganization } from '../orgs/organizations.ts';
import type { PlanTable } from '../orgs/plans.ts';

/**
 * Agents: machines that dial out to Weir and perform forwards against their
 * own loopback ports. This module holds their records and enrollment rules;
 * the WebSocket gateway and the agent client live elsewhere.
 */
export const AGENT_ENVIRONMENTS = ['production', 'development'] as const;
export type AgentEnvironment = (typeof AGENT_ENVIRONMENTS)[number];

export interface Agent {
  id: string;
  organization_id: string;
  name: string;
  environment: AgentEnvironment;
  created_by: string | null;
  revoked_at: Date | null;
  last_seen_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** A node holds its link and vouched for it within PRESENCE_STALE_SECONDS. */
  connected: boolean;
  connected_node: string | null;
  connected_at: Date | null;
  agent_version: string | null;
  hostname: string | null;
}

/**
 * A holding node refreshes heartbeat_at every few seconds
 * (src/agents/presence.ts); a row it stopped refreshing (the node died) reads
 * as disconnected after this long, on every node.
 */
export const PRESENCE_STALE_SECONDS = 15;

export const COLUMNS = `id, organization_id, name, environment, created_by, revoked_at, last_seen_at, created_at, updated_at,
  (connection_id is not null and heartbeat_at > now() - interval '${PRESENCE_STALE_SECONDS} seconds') as connected,
  connected_node, connected_at, agent_version, hostname`;

/** Prefix of agent tokens, so secret scanners and humans can tell them from API keys (`wr_live_...`). */
export const AGENT_TOKEN_PREFIX = 'wr_agent_';
const TOKEN_RE = /^wr_agent_[A-Za-z0-9_-]{43}$/;
export const AGENT_NAME_MAX = 100;

export function hashAgentToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export function generateAgentToken(): string {
  // 256 bits from the CSPRNG; only its sha256 is stored.
  return AGENT_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function isAgentEnvironment(v: unknown): v is AgentEnvironment {
  return typeof v === 'string' && (AGENT_ENVIRONMENTS as readonly string[]).includes(v);
}

/** An agent of the organization, revoked or not (callers decide what a revoked agent means to them). */
export async function getAgent(db: Queryable, organizationId: string, id: string): Promise<Agent | undefined> {
  const { rows } = await db.query<Agent>(`select ${COLUMNS} from agents where id = $1::uuid and organization_id = $2::uuid`, [id, organizationId]);
  return rows[0];
}

/** The organization's agents newest first, paged by id like every other list; revoked ones only when asked. */
export async function listAgents(
  db: Queryable,
  organizationId: string,
  opts: { limit?: number; before?: string; includeRevoked?: boolean } = {},
): Promise<Agent[]> {
  const { rows } = await db.query<Agent>(
    `select ${COLUMNS} from agents
      where organization_id = $1::uuid
        and ($2::uuid is null or id < $2::uuid)
        and ($3::boolean or revoked_at is null)
      order by id desc
      limit $4`,
    [organizationId, opts.before ?? null, opts.includeRevoked ?? false, opts.limit ?? 1000],
  );
  return rows;
}

/** The live (not revoked) agent a connection token belongs to, for the gateway's handshake. */
export async function findAgentByToken(db: Queryable, token: string): Promise<Agent | undefined> {
  if (!TOKEN_RE.test(token)) return undefined;
  const { rows } = await db.query<Agent>(`select ${COLUMNS} from agents where token_hash = $1 and revoked_at is null`, [hashAgentToken(token)]);
  return rows[0];
}

export interface EnrollAgentInput {
  organizationId: string;
  name: string;
  environment: AgentEnvironment;
  /** The member who enrolled it; null when the operator API did. */
  createdBy: string | null;
}

export type EnrollAgentResult =
  | { ok: true; agent: Agent; token: string }
  | { ok: false; reason: 'organization_not_found' }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'plan_limit'; message: string; limit: number };

/**
 * Enrolls an agent and returns its connection token, shown this once and
 * never stored. The plan's `max_agents` caps live production agents only:
 * development agents never retry and are what a laptop runs, so they are
 * free (the specification applies the cap "when enrolling or marking agents
 * production, not when assigning"). Runs in its own transaction unless handed one.
 */
export async function enrollAgent(db: Db | Queryable, input: EnrollAgentInput, plans: PlanTable): Promise<EnrollAgentResult> {
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name.length === 0 || name.length > AGENT_NAME_MAX) return { ok: false, reason: 'invalid', message: `name must be 1-${AGENT_NAME_MAX} characters` };
  if (!isAgentEnvironment(input.environment)) return { ok: false, reason: 'invalid', message: `environment must be one of ${AGENT_ENVIRONMENTS.join(', ')}` };
  return inTransaction(db, async (tx) => {
    const org = await getOrganization(tx, input.organizationId);
    if (!org) return { ok: false, reason: 'organization_not_found' };
    if (input.environment === 'production') {
      const full = await productionCapReached(tx, org, plans);
      if (full) return full;
    }
    const token = generateAgentToken();
    const { rows } = await tx.query<Agent>(
      `insert into agents (id, organization_id, name, environment, token_hash, created_by)
       values ($1::uuid, $2::uuid, $3, $4, $5, $6::uuid) returning ${COLUMNS}`,
      [newId(), org.id, name, input.environment, hashAgentToken(token), input.createdBy],
    );
    const agent = rows[0];
    const actor: Actor = input.createdBy ? { type: 'member', memberId: input.createdBy } : { type: 'operator' };
    await recordAudit(tx, org.id, actor, 'agent.enrolled', { type: 'agent', id: agent.id, name: agent.name }, { environment: agent.environment });
    return { ok: true, agent, token };
  });
}

/**
 * The plan_limit refusal when the organization already has `max_agents` live
 * production agents, else undefined. Takes a per-organization advisory lock
 * (held to commit) first: two enrollments or promotions racing past the count
 * would both fit under the cap, and the lock serialises them without locking
 * the organizations row every other table references.
 */
export async function productionCapReached(
  tx: Queryable,
  org: { id: string; plan: keyof PlanTable },
  plans: PlanTable,
): Promise<{ ok: false; reason: 'plan_limit'; message: string; limit: number } | undefined> {
  await tx.query(`select pg_advisory_xact_lock(hashtextextended('weir.agents.enroll:' || $1::text, 0))`, [org.id]);
  const limit = plans[org.plan].max_agents;
  const { rows } = await tx.query<{ n: number }>(
    `select count(*)::int as n from agents where organization_id = $1::uuid and environment = 'production' and revoked_at is null`,
    [org.id],
  );
  if (rows[0].n < limit) return undefined;
  return {
    ok: false,
    reason: 'plan_limit',
    limit,
    message: `The ${org.plan} plan allows ${limit} production agent${limit === 1 ? '' : 's'}; revoke one or use a development agent.`,
  };
}

/** fn in a transaction: a new one on a Db, the caller's own when handed a transaction. */
export function inTransaction<T>(db: Db | Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return 'transaction' in db ? db.transaction(fn) : fn(db);
}
