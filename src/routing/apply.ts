import type { Queryable } from '../db/db.ts';
import { compileFilter, evaluate, filterInput, type CompiledFilter, type FilterInput, type Verdict } from './filter.ts';

/** What the delivery worker knows of a claimed delivery, as routing needs it. */
export interface RoutedDelivery {
  id: string;
  leaseId: string;
  forwardDestinationId: string | null;
  /** The destination's filter as it is now, and the version it was read at (its updated_at). */
  filter?: unknown;
  filterVersion?: string | null;
  capture: { id: string; headers: ReadonlyArray<readonly [string, string]>; path: string; query: string; body: Buffer } | null;
}

const MAX_FILTERS = 10_000;
const MAX_INPUTS = 256;

/**
 * The delivery worker's side of filters (docs/routing.md): each claimed
 * delivery is checked against its destination's CURRENT filter just before
 * it would be sent. A filter is compiled once per destination version (the
 * destination's id and updated_at), and a capture's request (headers,
 * query, parsed body) is built once for all of its destinations claimed
 * close together, so a capture with three filtered destinations parses its
 * JSON body once.
 */
export class FilterGate {
  private readonly filters = new Map<string, { version: string | null; compiled: CompiledFilter }>();
  private readonly inputs = new Map<string, { input: FilterInput; withBody: boolean }>();

  /** The verdict for a delivery; a delivery without a filter always matches. */
  check(d: RoutedDelivery): Verdict {
    if (d.filter === null || d.filter === undefined || d.forwardDestinationId === null || d.capture === null) return { matches: true, reason: null };
    let entry = this.filters.get(d.forwardDestinationId);
    const version = d.filterVersion ?? null;
    if (!entry || entry.version !== version) {
      if (this.filters.size >= MAX_FILTERS) this.filters.clear();
      entry = { version, compiled: safeCompile(d.filter) };
      this.filters.set(d.forwardDestinationId, entry);
    }
    const c = d.capture;
    let cached = this.inputs.get(c.id);
    if (!cached || (entry.compiled.usesBody && !cached.withBody)) {
      if (this.inputs.size >= MAX_INPUTS) this.inputs.clear();
      cached = { input: filterInput(c, entry.compiled.usesBody), withBody: entry.compiled.usesBody };
      this.inputs.set(c.id, cached);
    }
    return evaluate(entry.compiled, cached.input);
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
