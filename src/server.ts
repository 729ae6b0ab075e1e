import pino, { type Logger } from 'pino';
import { Authenticator } from './auth/authenticate.ts';
import { urlHost, type Config } from './config.ts';
import type { Db } from './db/db.ts';
import { migrate } from './db/migrate.ts';
import { openDb } from './db/open.ts';
import { AgentGateway } from './agents/gateway.ts';
import { releaseOrphanedLeases } from './delivery/claim.ts';
import { nodeName, startDelivery } from './delivery/start.ts';
import { buildApp } from './http/app.ts';
import type { AppDeps } from './http/deps.ts';
import { startIncidents } from './incidents/start.ts';
import { startIngest } from './ingest/server.ts';
import { startMetricsListener } from './metrics/listener.ts';
import { WeirMetrics } from './metrics/metrics.ts';
import { bootstrapIfEmpty, type BootstrapResult } from './orgs/bootstrap.ts';
import { startCaptureMaintenance } from './requests/retention.ts';
import { startDedupPruning } from './routing/dedup.ts';
import { startTableMaintenance } from './db/table-maintenance.ts';
import { routeModules } from './routes.ts';
import { startSubscriptions } from './subscriptions/start.ts';
import { startUsageRollup } from './usage/start.ts';

export interface RunningWeir {
  db: Db;
  apiPort: number;
  ingestPort: number;
  /** The WEIR_METRICS_PORT listener's port, when metrics have one of their own. */
  metricsPort: number | undefined;
  urls: { publicUrl: string; ingestUrl: string };
  bootstrap: BootstrapResult | undefined;
  logger: Logger;
  /** Stops taking new work, drains in-flight requests, then closes the database. */
  close(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: { pid: process.pid } });
}

export interface StartOptions {
  /**
   * Told when this node can no longer go on (another process took its
   * PGlite folder over). The node has already stopped writing; the CLI exits
   * with status 1. Without it the node closes itself.
   */
  onFatal?: (msg: string) => void;
  /** The data-directory lock's heartbeat period (tests). */
  lockHeartbeatMs?: number;
}

/** Starts one Weir node: database, migrations, first-run bootstrap, API and ingest listeners. */
export async function startWeir(config: Config, logger = createLogger(config), opts: StartOptions = {}): Promise<RunningWeir> {
  const metrics = config.metrics ? new WeirMetrics() : undefined;
  let closeNode: (() => Promise<void>) | undefined;
  const onLockLost = (msg: string) => {
    logger.fatal(msg);
    if (opts.onFatal) opts.onFatal(msg);
    else void closeNode?.().catch((err) => logger.error({ err }, 'shutdown after losing the data-directory lock failed'));
  };
  const db = await openDb(config, (msg, err) => logger.warn({ err }, msg), {
    onCheckpoint: metrics && ((s) => metrics.checkpointed(s)),
    loopMetrics: metrics?.loops,
    onLockLost,
    lockHeartbeatMs: opts.lockHeartbeatMs,
  });
  metrics?.observe({ db, poolStats: db.poolStats });
  // What is already running, stopped in reverse order if a later step fails.
  const started: (() => Promise<void>)[] = [() => db.close()];
  const stopAll = async () => {
    for (const stop of started.reverse()) await stop().catch(() => {});
  };
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
    const bootstrap = await bootstrapIfEmpty(db, config.region, config.bootstrapPlan);
    if (db.kind === 'pglite') {
      // The data-directory lock proves no other process uses this database:
      // deliveries still leased were held by a process that died.
      const orphaned = await releaseOrphanedLeases(db);
      if (orphaned > 0) logger.warn({ count: orphaned }, 'forwarding again the deliveries a previous process died holding');
    }
    // Capture partitions for the coming days exist before ingestion opens;
    // retention sweeps then run in the background (src/requests/retention.ts).
    // usage counts of closed days are rolled up before retention may delete their captures (src/usage/rollup.ts)
    const usage = await startUsageRollup(db, logger, metrics?.loops);
    started.push(() => usage.stop());
    const maintenance = await startCaptureMaintenance({ db, config, logger, loopMetrics: metrics?.loops });
    started.push(() => maintenance.stop());
    // expired deduplication keys (src/routing/dedup.ts)
    const dedupPruning = startDedupPruning(db, logger, metrics?.loops);
    started.push(() => dedupPruning.stop());
    // statistics and vacuum, which PGlite never does on its own (src/db/table-maintenance.ts)
    const tables = config.dbMaintenance === 'off' ? undefined : await startTableMaintenance(db, logger, { autovacuum: config.dbMaintenance === 'all' ? false : undefined, loopMetrics: metrics?.loops });
    started.push(async () => tables?.stop());
    const authenticator = new Authenticator(db);
    await authenticator.start();
    started.push(() => authenticator.stop());

    const urls = { publicUrl: config.publicUrl ?? '', ingestUrl: config.ingestUrl ?? '' };
    const deps: AppDeps = { db, config, authenticator, logger, urls, metrics };
    const app = await buildApp(deps, routeModules);
    started.push(() => app.close());
    await app.listen({ host: config.host, port: config.apiPort });
    const apiPort = (app.server.address() as { port: number }).port;
    const ingest = await startIngest({ db, config, logger, metrics: metrics?.ingest }, config.ingestPort);
    started.push(() => ingest.close());
    const metricsListener = metrics && config.metricsPort !== undefined ? await startMetricsListener({ metrics, config, logger }, config.metricsPort) : undefined;
    started.push(async () => metricsListener?.close());
    // forwarding: this node's share of the delivery queue (src/delivery/worker.ts)
    const delivery = await startDelivery({ db, config, logger, metrics: metrics?.delivery, loopMetrics: metrics?.loops });
    started.push(() => delivery.stop());
    // a fresh capture's forwards go from this node's worker without a claim when it has room (src/delivery/handoff.ts);
    // WEIR_FORWARD_HANDOFF=0: every forward waits for a claim, as before the hand-off
    if (config.forwardHandoff) ingest.handTo(delivery.worker.handoff());
    // incidents: correlation of recorded failures, automatic resolution, replay supervision (src/incidents/)
    const incidents = startIncidents({ db, logger, asnCsv: config.asnDb, loopMetrics: metrics?.loops });
    started.push(() => incidents.stop());
    // subscriptions: signed event sends and the request.captured producer (src/subscriptions/)
    const subscriptions = await startSubscriptions({ db, config, logger, loopMetrics: metrics?.loops });
    started.push(() => subscriptions.stop());
    // agents dial this listener; their deliveries are claimed by the node holding their socket (src/agents/gateway.ts)
    const agents = new AgentGateway({ db, config, logger: logger.child({ component: 'agents' }), node: nodeName(), metrics: metrics?.delivery, loopMetrics: metrics?.loops });
    metrics?.observe({ agentConnections: () => agents.connected, deliveriesHeld: () => delivery.worker.held() });
    await agents.start(app.server);
    started.push(() => agents.stop());
    urls.publicUrl ||= `http://${urlHost(config.host)}:${apiPort}`;
    urls.ingestUrl ||= `http://${urlHost(config.host)}:${ingest.port}`;

    let closing: Promise<void> | undefined;
    const running: RunningWeir = {
      db,
      apiPort,
      ingestPort: ingest.port,
      metricsPort: metricsListener?.port,
      urls,
      bootstrap,
      logger,
      close() {
        // Both listeners stop taking connections and finish what is in
        // flight first; only then do the notifications and the database go.
        closing ??= (async () => {
          // agent links first: they are upgraded sockets the API listener would wait for
          await agents.stop();
          await Promise.all([app.close(), ingest.close(), metricsListener?.close()]);
          // in-flight forwards finish (or give their leases back) before the database goes
          await delivery.stop();
          await incidents.stop();
          await subscriptions.stop();
          await maintenance.stop();
          await usage.stop();
          await tables?.stop();
          await authenticator.stop();
          await db.close();
        })();
        return closing;
      },
    };
    closeNode = () => running.close();
    return running;
  } catch (err) {
    await stopAll();
    throw err;
  }
}
