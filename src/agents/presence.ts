import type { Queryable } from '../db/db.ts';
import type { TargetInfo } from './protocol.ts';

/**
 * Where an agent's link is, kept in its row so that any node can answer
 * "connected?" and every node can tell that its socket was superseded,
 * re-issued or revoked. One connection per agent: the newest wins.
 */

export interface ConnectInfo {
  agentId: string;
  connectionId: string;
  node: string;
  agentVersion: string | null;
  hostname: string | null;
}

/** Claims the agent's row for a new connection; false when it was revoked meanwhile. */
export async function registerConnection(db: Queryable, c: ConnectInfo): Promise<boolean> {
  const { rowCount } = await db.query(
    `update agents
        set connection_id = $2::uuid, connected_node = $3, connected_at = now(), heartbeat_at = now(), last_seen_at = now(),
            agent_version = $4, hostname = $5
      where id = $1::uuid and revoked_at is null`,
    [c.agentId, c.connectionId, c.node, c.agentVersion, c.hostname],
  );
  return rowCount > 0;
}

export interface RowState {
  agent_id: string;
  connection_id: string | null;
  revoked: boolean;
}

/**
 * What the rows of this node's agents say now (refreshing the heartbeat of
 * the connections they still name when `touch`): a socket whose connection
 * id the row no longer names was replaced by a newer connection, or its
 * token re-issued, or its agent revoked, and must be closed.
 */
export async function readConnections(db: Queryable, links: ReadonlyArray<{ agentId: string; connectionId: string }>, touch: boolean): Promise<RowState[]> {
  if (links.length === 0) return [];
  if (touch) {
    await db.query(
      `update agents set heartbeat_at = now(), last_seen_at = now() where connection_id = any($1::uuid[]) and revoked_at is null`,
      [links.map((l) => l.connectionId)],
    );
  }
  const { rows } = await db.query<RowState>(
    `select id as agent_id, connection_id, revoked_at is not null as revoked from agents where id = any($1::uuid[])`,
    [links.map((l) => l.agentId)],
  );
  return rows;
}

/** The enabled destinations an agent serves, for the banner it prints when it connects. */
export async function listAgentTargets(db: Queryable, agentId: string): Promise<TargetInfo[]> {
  const { rows } = await db.query<TargetInfo>(
    `select fd.name as destination, e.name as endpoint, fd.target_port as port, fd.target_path as path,
            coalesce(fd.environment_override, a.environment) as environment
       from forward_destinations fd
       join endpoints e on e.id = fd.endpoint_id
       join agents a on a.id = fd.agent_id
      where fd.agent_id = $1::uuid and fd.enabled
      order by e.name, fd.sort_order, fd.id`,
    [agentId],
  );
  return rows;
}

/** Marks the connection gone, unless a newer one already holds the row. */
export async function unregisterConnection(db: Queryable, agentId: string, connectionId: string): Promise<void> {
  await db.query(
    `update agents set connection_id = null, heartbeat_at = null, last_seen_at = now()
      where id = $1::uuid and connection_id = $2::uuid`,
    [agentId, connectionId],
  );
}
