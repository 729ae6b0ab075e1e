import type { Logger } from 'pino';
import type { Db } from '../db/db.ts';
import { idFloor, idTime, idTimestamp } from './capture-ids.ts';
import type { CaptureSummary } from './captures.ts';

const SUMMARY = 'id, organization_id, endpoint_id, received_at, method, path, query, headers, body_size, content_type, source_ip';

/**
 * How far back each look for new captures reaches. A capture's id carries
 * the millisecond it arrived, but it commits with its group a little later,
 * so a capture with an older id can become visible after a newer one: every
 * look re-reads this window and skips the ids it already announced.
 */
export const TAIL_LOOKBACK_MS = 5_000;
const ROWS_PER_LOOK = 2_000;
const BACKLOG_PAGE = 500;

/** Captures of an endpoint after `afterId`, oldest first: the backlog a reconnecting client missed. */
export async function capturesAfter(db: Db, organizationId: string, endpointId: string, afterId: string, limit = BACKLOG_PAGE): Promise<CaptureSummary[]> {
  const { rows } = await db.query<CaptureSummary>(
    `select ${SUMMARY} from captured_requests
      where endpoint_id = $1::uuid and organization_id = $2::uuid and id > $3::uuid and received_at >= $4::timestamptz
      order by id limit $5`,
    [endpointId, organizationId, afterId, idTimestamp(afterId), limit],
  );
  return rows;
}

export interface TailSubscriber {
  readonly organizationId: string;
  readonly endpointId: string;
  /** Called once per new capture, in id order within one look. */
  push(capture: CaptureSummary): void;
}

interface Watched {
  subscribers: Set<TailSubscriber>;
  /** Ids announced within the lookback window, with their time. */
  seen: Map<string, number>;
  /** The first look only records what is already there: a new subscriber is told about captures from then on. */
  primed: boolean;
  ready: Promise<void>;
  onPrimed: () => void;
}

/**
 * One node's live tail: while any client follows an endpoint, this looks for
 * new captures of the followed endpoints every `pollMs` (one indexed query
 * for all of them) and hands each new one to that endpoint's subscribers.
 *
 * Why a look at the table and not a NOTIFY from the capture statement: the
 * database is what every node shares, so captures taken on any node show up
 * on every node alike, and the capture path (the hot one) pays nothing
 * (a NOTIFY in every group commit would take PostgreSQL's notification-queue
 * lock on each commit, followed or not). The price is up to `pollMs` of
 * delay and one query per look, only while someone is watching.
 */
export class TailHub {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private looking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly pollMs = 250,
  ) {}

  /**
   * Starts following the subscriber's endpoint. `ready` resolves once every
   * capture committed from then on is sure to be pushed: a resuming client
   * reads its backlog after it, so nothing falls between the two.
   */
  subscribe(sub: TailSubscriber): { ready: Promise<void>; unsubscribe(): void } {
    let w = this.watched.get(sub.endpointId);
    if (!w) {
      let onPrimed!: () => void;
      const ready = new Promise<void>((resolve) => (onPrimed = resolve));
      this.watched.set(sub.endpointId, (w = { subscribers: new Set(), seen: new Map(), primed: false, ready, onPrimed }));
    }
    const entry = w;
    entry.subscribers.add(sub);
    this.schedule();
    return {
      ready: entry.ready,
      unsubscribe: () => {
        entry.subscribers.delete(sub);
        if (entry.subscribers.size === 0 && this.watched.get(sub.endpointId) === entry) this.watched.delete(sub.endpointId);
      },
    };
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer || this.stopped || this.watched.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.looking ??= this.look()
        .catch((err) => this.logger.warn({ err }, 'live tail look failed; trying again'))
        .finally(() => {
          this.looking = undefined;
          this.schedule();
        });
    }, this.pollMs);
    this.timer.unref();
  }

  private async look(): Promise<void> {
    // only what was followed when the query began: a later subscription is primed by the next look
    const looked = new Map(this.watched);
    if (looked.size === 0) return;
    const since = Date.now() - TAIL_LOOKBACK_MS;
    const ids = [...looked.keys()];
    const { rows } = await this.db.query<CaptureSummary>(
      `select ${SUMMARY} from captured_requests
        where endpoint_id = any($1::uuid[]) and id >= $2::uuid and received_at >= $3::timestamptz
        order by id limit ${ROWS_PER_LOOK}`,
      [ids, idFloor(since), new Date(since).toISOString()],
    );
    for (const row of rows) {
      const w = looked.get(row.endpoint_id);
      if (!w || w.seen.has(row.id)) continue;
      w.seen.set(row.id, idTime(row.id));
      if (!w.primed) continue;
      for (const sub of w.subscribers) if (sub.organizationId === row.organization_id) sub.push(row);
    }
    for (const w of looked.values()) {
      for (const [id, t] of w.seen) if (t < since) w.seen.delete(id);
      if (!w.primed) {
        w.primed = true;
        w.onPrimed();
      }
    }
  }
}
