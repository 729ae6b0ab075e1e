import type { Logger } from 'pino';
import type { Db } from '../db/db.ts';
import { rollupUsage } from './rollup.ts';

const ROLLUP_EVERY_MS = 10 * 60_000;

/**
 * Rolls up closed days at start (before capture retention can delete
 * anything of a day not rolled up yet) and every ten minutes after; any node
 * may, one at a time.
 */
export async function startUsageRollup(db: Db, logger: Logger): Promise<{ stop(): Promise<void> }> {
  const log = logger.child({ component: 'usage' });
  let running: Promise<unknown> = Promise.resolve();
  const run = () =>
    (running = running
      .then(() => rollupUsage(db))
      .then(
        (days) => days && days.length > 0 && log.info({ days }, 'rolled up usage'),
        (err) => log.warn({ err }, 'usage roll-up failed; retrying in ten minutes'),
      ));
  await run();
  const timer = setInterval(run, ROLLUP_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
