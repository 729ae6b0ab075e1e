import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Db } from '../db/db.ts';
import { correlateAll } from './correlate.ts';
import { QUIET_PERIOD_MS, resolveRecovered } from './lifecycle.ts';
import { superviseReplayBatches } from './replay.ts';

/** How often each node looks for failures to correlate, incidents to resolve and batches to supervise. */
export const INCIDENT_TICK_MS = 1_000;
/** Automatic resolution looks at quiet incidents less often: a 10-minute quiet period needs no second-level precision. */
const RESOLVE_EVERY_MS = 10_000;

export interface IncidentDeps {
  db: Db;
  logger: Logger;
  asnCsv?: string;
  tickMs?: number;
  quietMs?: number;
  resolveEveryMs?: number;
  loopMetrics?: LoopMetrics;
}

/**
 * This node's share of incident work, once a tick: correlate recorded
 * failures (one node at a time takes the correlator lock; the others skip)
 * and supervise replay batches; every 10 s, resolve recovered incidents
 * (both safe on every node at once). A tick that fails is logged and retried on the next:
 * the failures wait, durable, in their table.
 */
export function startIncidents(deps: IncidentDeps): { stop(): Promise<void>; runOnce(): Promise<void> } {
  const log = deps.logger.child({ component: 'incidents' });
  let lastResolve = 0;
  const loop = createLoop({
    name: 'incidents',
    everyMs: deps.tickMs ?? INCIDENT_TICK_MS,
    metrics: deps.loopMetrics,
    onError: (err) => log.error({ err }, 'incident tick failed; retrying'),
    async pass() {
      await correlateAll(deps.db, { asnCsv: deps.asnCsv });
      if (Date.now() - lastResolve >= (deps.resolveEveryMs ?? RESOLVE_EVERY_MS)) {
        lastResolve = Date.now();
        const resolved = await resolveRecovered(deps.db, { quietMs: deps.quietMs ?? QUIET_PERIOD_MS });
        if (resolved.length > 0) log.info({ incidents: resolved }, 'resolved incidents whose destination recovered');
      }
      const { paused } = await superviseReplayBatches(deps.db);
      if (paused.length > 0) log.warn({ batches: paused }, 'paused replay batches whose destination fails again');
    },
  });
  loop.start();
  return { stop: () => loop.stop(), runOnce: async () => void (await loop.runOnce()) };
}
