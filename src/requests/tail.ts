import type { Logger } from 'pino';
import type { Db } from '../db/db.ts';
import { idFloor, idTime, idTimestamp } from './capture-ids.ts';
import { SUMMARY, type CaptureSummary } from './captures.ts';

/**
 * How far back a look checks for captures that committed late: a capture's
 * id carries the millisecond it arrived, but it commits with its group a
 * little later, so a capture with an older id can become visible after a
 * newer one was pushed. Each look pushes every capture past the endpoint's
 * cursor (page after page: no cap), and about once a second compares the
 * ids of the last LATE_WINDOW_MS (an index-only read) with those pushed, to
 * push the late ones. A capture that became visible more than this after
 * it arrived is not pushed (it is in the list API); ingest commits a group
 * in milliseconds.
 */
export const LATE_WINDOW_MS = 10_000;
const PAGE = 2_000;
const LATE_CHECK_EVERY = 4;
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
  /** Ids pushed (or there when the endpoint was first looked at) within the late window, with their time. */
  seen: Map<string, number>;
  /** The highest id pushed: the next look reads after it. */
  cursor: string | null;
  /** The first look only records what is already there: a new subscriber is told about captures from then on. */
  primed: boolean;
  ready: Promise<void>;
  onPrimed: () => void;
}

/**
 * One node's live tail: while any client follows an endpoint, this looks for
 * new captures of the followed endpoints every `pollMs` (one indexed query
 * for all of them, repeated while pages come back full) and hands each new
 * one to that endpoint's subscribers, in id order, and each late one as it
 * is found (see LATE_WINDOW_MS).
 *
 * Why a look at the table and not a NOTIFY from the capture statement: the
 * database is what every node shares, so captures taken on any node show up
 * on every node alike, and the capture path (the hot one) pays nothing
 * (a NOTIFY in every group commit would take PostgreSQL's notification-queue
 * lock on each commit, followed or not). The price is up to `pollMs` of
 * delay and a query per look, only while someone is watching.
 */
export class TailHub {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private looking: Promise<void> | undefined;
  private stopped = false;
  private looks = 0;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly pollMs = 250,
  ) {}

  /**
   * Starts following the subscriber's endpoint. `ready` resolves once every
   * capture committed from then on is sure to be pushed: the stream's
   * headers go out only then, and a resuming client reads its backlog after
   * it, so nothing falls between the two.
   */
  subscribe(sub: TailSubscriber): { ready: Promise<void>; unsubscribe(): void } {
    let w = this.watched.get(sub.endpointId);
    if (!w) {
      let onPrimed!: () => void;
      const ready = new Promise<void>((resolve) => (onPrimed = resolve));
      this.watched.set(sub.endpointId, (w = { subscribers: new Set(), seen: new Map(), cursor: null, primed: false, ready, onPrimed }));
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

  private deliver(w: Watched, row: CaptureSummary): void {
    if (w.seen.has(row.id)) return;
    w.seen.set(row.id, idTime(row.id));
    if (!w.primed) return;
    for (const sub of w.subscribers) if (sub.organizationId === row.organization_id) sub.push(row);
  }

  private async look(): Promise<void> {
    // only what was followed when the look began: a later subscription is primed by the next look
    const looked = new Map(this.watched);
    if (looked.size === 0) return;
    const since = Date.now() - LATE_WINDOW_MS;
    const floor = idFloor(since);
    // late captures first (about once a second, and on an endpoint's first look nothing is late)
    if (this.looks++ % LATE_CHECK_EVERY === 0) {
      const checked = [...looked.entries()].filter(([, w]) => w.primed && w.cursor !== null);
      if (checked.length > 0) {
        const { rows: ids } = await this.db.query<{ id: string; endpoint_id: string }>(
          `select c.id, c.endpoint_id from unnest($1::uuid[], $2::uuid[]) as w(endpoint_id, upto)
             cross join lateral (select id, endpoint_id from captured_requests c
                                  where c.endpoint_id = w.endpoint_id and c.id >= $3::uuid and c.id <= w.upto and c.received_at >= $4::timestamptz) c`,
          [checked.map(([id]) => id), checked.map(([, w]) => w.cursor), floor, new Date(since).toISOString()],
        );
        const missing = ids.filter((r) => !looked.get(r.endpoint_id)!.seen.has(r.id)).map((r) => r.id);
        if (missing.length > 0) {
          const { rows } = await this.db.query<CaptureSummary>(
            `select ${SUMMARY} from captured_requests where id = any($1::uuid[]) and received_at >= $2::timestamptz order by id`,
            [missing, new Date(since).toISOString()],
          );
          for (const row of rows) this.deliver(looked.get(row.endpoint_id)!, row);
        }
      }
    }
    // then everything past each cursor, page after page
    let open = [...looked.entries()];
    while (open.length > 0) {
      const { rows } = await this.db.query<CaptureSummary>(
        `select c.* from unnest($1::uuid[], $2::uuid[]) as w(endpoint_id, after)
           cross join lateral (select ${SUMMARY} from captured_requests c
                                where c.endpoint_id = w.endpoint_id and c.id > w.after and c.received_at >= $3::timestamptz
                                order by c.id limit ${PAGE}) c
          order by c.id`,
        [open.map(([id]) => id), open.map(([, w]) => (w.cursor !== null && w.cursor > floor ? w.cursor : floor)), new Date(since).toISOString()],
      );
      const counts = new Map<string, number>();
      for (const row of rows) {
        const w = looked.get(row.endpoint_id)!;
        this.deliver(w, row);
        if (w.cursor === null || row.id > w.cursor) w.cursor = row.id;
        counts.set(row.endpoint_id, (counts.get(row.endpoint_id) ?? 0) + 1);
      }
      open = open.filter(([id]) => counts.get(id) === PAGE);
    }
    for (const w of looked.values()) {
      for (const [id, t] of w.seen) if (t < since) w.seen.delete(id);
      if (!w.primed) {
        w.cursor ??= floor;
        w.primed = true;
        w.onPrimed();
      }
    }
  }
}
