import { lookup } from 'node:dns/promises';

/**
 * Host name -> first address, for the incident correlator's ASN lookups.
 * A lookup waits at most `timeoutMs`; answers are cached (`ttlMs`, and
 * `negativeTtlMs` for names that did not resolve in time), and callers
 * asking for the same name meanwhile share one lookup. The correlator
 * resolves before it opens its transaction (src/incidents/correlate.ts), so
 * a slow resolver delays only its own pass, never a database lock.
 */
export interface HostResolverOptions {
  timeoutMs?: number;
  ttlMs?: number;
  negativeTtlMs?: number;
  /** At most this many names are kept; the oldest go first. */
  maxEntries?: number;
  /** The system resolver by default; tests pass their own. */
  lookup?: (host: string) => Promise<string | undefined>;
}

export class HostResolver {
  private readonly cache = new Map<string, { address: string | undefined; until: number }>();
  private readonly pending = new Map<string, Promise<string | undefined>>();
  private readonly o: Required<HostResolverOptions>;

  constructor(o: HostResolverOptions = {}) {
    this.o = {
      timeoutMs: o.timeoutMs ?? 2_000,
      ttlMs: o.ttlMs ?? 5 * 60_000,
      negativeTtlMs: o.negativeTtlMs ?? 30_000,
      maxEntries: o.maxEntries ?? 10_000,
      lookup: o.lookup ?? ((host) => lookup(host).then((r) => r.address)),
    };
  }

  /** The cached answer, if still fresh; `null` when nothing is cached. */
  cached(host: string): string | undefined | null {
    const hit = this.cache.get(host);
    if (!hit) return null;
    if (hit.until > Date.now()) return hit.address;
    this.cache.delete(host);
    return null;
  }

  resolve(host: string): Promise<string | undefined> {
    const hit = this.cached(host);
    if (hit !== null) return Promise.resolve(hit);
    let p = this.pending.get(host);
    if (p) return p;
    let timer: NodeJS.Timeout | undefined;
    p = Promise.race([
      this.o.lookup(host).catch(() => undefined),
      new Promise<undefined>((r) => {
        timer = setTimeout(() => r(undefined), this.o.timeoutMs);
        timer.unref();
      }),
    ]).then((address) => {
      clearTimeout(timer);
      this.pending.delete(host);
      if (this.cache.size >= this.o.maxEntries) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(host, { address, until: Date.now() + (address ? this.o.ttlMs : this.o.negativeTtlMs) });
      return address;
    });
    this.pending.set(host, p);
    return p;
  }
}

/** The node's resolver: one cache shared by every correlator pass. */
export const defaultHostResolver = new HostResolver();
