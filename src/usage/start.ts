import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Db } from '../db/db.ts';
import { rollupUsage } from './rollup.ts';

const ROLLUP_EVERY_MS = 10 * 60_000;

/**
 * Rolls up closed days at start (before capture retention can delete
 * anything of a day not rolled up yet) and every ten minutes after; any node
 * may, one at a time.
 */
export async function startUsageRollup(db: Db, logger: Logger, loopMetrics?: LoopMetrics): Promise<{ stop(): Promise<void> }> {
  const log = logger.child({ component: 'usage' });
  const loop = createLoop({
    name: 'usage_rollup',
    everyMs: ROLLUP_EVERY_MS,
    metrics: loopMetrics,
    onError: (err) => log.warn({ err }, 'usage roll-up failed; retrying in ten minutes'),
    async pass() {
      const days = await rollupUsage(db);
      if (days && days.length > 0) log.info({ days }, 'rolled up usage');
    },
  });
  await loop.runOnce();
  loop.start();
  return { stop: () => loop.stop() };
}
