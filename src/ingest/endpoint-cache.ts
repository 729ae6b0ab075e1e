import type { Db } from '../db/db.ts';
import { ENDPOINTS_CHANNEL, findIngestTarget, type IngestTarget } from '../endpoints/endpoints.ts';

interface Entry {
  target: IngestTarget | undefined;
  cachedAt: number;
}

// The TTL is a safety net only: every create, edit and delete NOTIFYs its
// slug, and the cache is bypassed while the LISTEN connection is down.
const TTL_MS = 60_000;
const MAX_ENTRIES = 100_000;

/**
 * slug -> endpoint for the ingest listener, so a burst of webhooks costs one
 * lookup instead of one per request. It is a fast path, not the authority:
 * the capture transaction re-reads paused and existence (ingest/batcher.ts),
 * and the listener re-checks a cached "paused" before answering 423.
 * Unknown slugs are cached too (a scanner hammering random slugs should not
 * reach the database each time); creation notifies the new slug, which
 * evicts such an entry.
 *
 * Invalidation: a NOTIFY on ENDPOINTS_CHANNEL evicts its slug; a reconnect of
 * the LISTEN connection drops everything (notifications sent meanwhile are
 * lost); while not listening the cache is neither read nor written. A
 * generation counter keeps a lookup that raced with a notification from
 * caching what it read before the change.
 */
export class EndpointCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, { generation: number; promise: Promise<IngestTarget | undefined> }>();
  private generation = 0;
  private unlisten: (() => Promise<void>) | undefined;

  /** `ingestBase()`: the public ingest address, which Twilio verification signs over (known once the listener is bound). */
  constructor(
    private readonly db: Db,
    private readonly ingestBase: () => string = () => '',
  ) {}

  async start(): Promise<void> {
    this.unlisten = await this.db.listen(
      ENDPOINTS_CHANNEL,
      (slug) => {
        this.generation++;
        this.entries.delete(slug);
      },
      () => this.clear(),
    );
  }

  async stop(): Promise<void> {
    await this.unlisten?.();
    this.unlisten = undefined;
    this.clear();
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  /** `fresh` skips reading the cache (the answer still refreshes it). */
  async lookup(slug: string, opts: { fresh?: boolean; now?: number } = {}): Promise<IngestTarget | undefined> {
    const now = opts.now ?? Date.now();
    if (!this.db.listening()) {
      if (this.entries.size > 0) this.clear();
      return findIngestTarget(this.db, slug, this.ingestBase());
    }
    const hit = opts.fresh ? undefined : this.entries.get(slug);
    if (hit && now - hit.cachedAt < TTL_MS) return hit.target;
    // Concurrent misses on one slug share one query (a cold start under load).
    const running = this.inflight.get(slug);
    if (running && running.generation === this.generation && !opts.fresh) return running.promise;
    const generation = this.generation;
    const promise = findIngestTarget(this.db, slug, this.ingestBase()).finally(() => {
      if (this.inflight.get(slug)?.promise === promise) this.inflight.delete(slug);
    });
    this.inflight.set(slug, { generation, promise });
    const target = await promise;
    if (generation === this.generation && this.db.listening()) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(slug, { target, cachedAt: now });
    }
    return target;
  }
}
