import type { Queryable } from '../db/db.ts';
import { compileFilter, evaluate, filterInput, type CompiledFilter, type FilterInput, type Verdict } from './filter.ts';

/** What the delivery worker knows of a claimed delivery, as routing needs it. */
export interface RoutedDelivery {
  id: string;
  leaseId: string;
  forwardDestinationId: string | null;
  /** The version of the destination's filter at claim (its updated_at); null: it has none, or this delivery ignores it. */
  filterVersion?: string | null;
  capture: { id: string; headers: ReadonlyArray<readonly [string, string]>; path: string; query: string; body: Buffer } | null;
}

const MAX_FILTERS = 10_000;

interface FilterEntry {
  version: string;
  /** A promise while the filter is being read. */
  compiled: CompiledFilter | Promise<CompiledFilter>;
}
const MATCHES: Verdict = { matches: true, reason: null };

/**
 * The delivery worker's side of filters (docs/routing.md): each claimed
 * delivery is checked against its destination's CURRENT filter just before
 * it would be sent. The claim says only which version of the filter is
 * current (the destination's updated_at); the filter itself is read and
 * compiled once per destination version, here, so its JSON does not travel
 * (and, on PGlite, get parsed on this thread) with every claimed row. A
 * capture's request (headers, query, parsed body) is built once for all of
 * its destinations claimed together, so a capture with three filtered
 * destinations parses its JSON body once.
 *
 * Only the last capture's request is kept: a claim hands out its deliveries
 * sorted by id, which starts with the capture's id, and the worker checks
 * them as it launches them, so a capture's destinations come one after the
 * other. Keeping more (it kept the last 256) held each parsed body through
 * young-generation collections, which promote what survives them to the old
 * generation, for captures that would never be checked again.
 */
export class FilterGate {
  /** Per destination: the version a claim named, and the filter read for it (a promise while it is being read). */
  private readonly filters = new Map<string, FilterEntry>();
  /** The request of the capture checked last. */
  private last: { captureId: string; input: FilterInput; withBody: boolean } | null = null;

  constructor(private readonly db: Queryable) {}

  /** The verdict for a delivery; a delivery without a filter always matches. Synchronous unless the filter must be read. */
  check(d: RoutedDelivery): Verdict | Promise<Verdict> {
    const version = d.filterVersion ?? null;
    if (version === null || d.forwardDestinationId === null || d.capture === null) return MATCHES;
    let entry = this.filters.get(d.forwardDestinationId);
    if (!entry || entry.version !== version) {
      if (this.filters.size >= MAX_FILTERS) this.filters.clear();
      entry = this.read(d.forwardDestinationId, version);
    }
    const compiled = entry.compiled;
    if (compiled instanceof Promise) return compiled.then((c) => this.verdict(c, d.capture!));
    return this.verdict(compiled, d.capture);
  }

  /**
   * Reads and compiles the destination's filter as it is now, cached under
   * the version the claim named. It may be newer than that version (edited
   * in between): the newer one is the current one, and the claims after
   * the edit name its version, so it is read once more then. A failed read
   * is not cached: the next delivery tries again.
   */
  private read(destinationId: string, version: string): FilterEntry {
    const reading = this.db
      .query<{ filter: unknown }>('select filter from forward_destinations where id = $1::uuid', [destinationId])
      .then(({ rows }) => safeCompile(rows[0]?.filter ?? null));
    const entry: FilterEntry = { version, compiled: reading };
    this.filters.set(destinationId, entry);
    reading.then(
      (compiled) => void (entry.compiled = compiled),
      () => void (this.filters.get(destinationId) === entry && this.filters.delete(destinationId)),
    );
    return entry;
  }

  private verdict(compiled: CompiledFilter, c: NonNullable<RoutedDelivery['capture']>): Verdict {
    if (compiled.check === null) return MATCHES;
    let cached = this.last;
    if (cached?.captureId !== c.id || (compiled.usesBody && !cached.withBody)) {
      cached = { captureId: c.id, input: filterInput(c, compiled.usesBody), withBody: compiled.usesBody };
      this.last = cached;
    }
    return evaluate(compiled, cached.input);
  }
}

/** A stored filter was validated when written; should one not compile all the same, it matches nothing and says why. */
function safeCompile(filter: unknown): CompiledFilter {
  try {
    return compileFilter(filter);
  } catch {
    return { check: () => 'the stored filter is not valid; edit the destination', usesBody: false };
  }
}

/**
 * Ends a delivery whose capture did not match its destination's filter:
 * `filtered`, with the reason, no attempt row (nothing was sent), so no
 * incident and no request.forward_failed. Only while this worker's lease
 * holds. False when the lease was lost.
 */
export async function finishFiltered(db: Queryable, d: { id: string; leaseId: string }, reason: string): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(
    `update deliveries
        set status = 'filtered', filter_reason = $3, paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            updated_at = now()
      where id = $1::uuid and lease_id = $2::uuid and status = 'in_flight'
      returning id`,
    [d.id, d.leaseId, reason.replaceAll('\u0000', '\uFFFD')],
  );
  return rows.length > 0;
}
