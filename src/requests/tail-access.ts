import type { Logger } from 'pino';
import { AUTH_CHANNEL, type Authenticator } from '../auth/authenticate.ts';
import type { Db } from '../db/db.ts';
import { ENDPOINTS_CHANNEL, getEndpoint } from '../endpoints/endpoints.ts';
import { authorizationProblem, type RouteAuth } from '../auth/route-access.ts';
import type { TailStream } from './tail-stream.ts';

/** How often every open stream's access is checked again, whatever was announced. */
export const TAIL_REAUTH_MS = 30_000;

interface Watched {
  stream: TailStream;
  authorization: string | undefined;
  organizationId: string;
  endpointId: string;
  expiry?: NodeJS.Timeout;
}

/**
 * Keeps open live-tail streams authorized: each is checked again with the
 * same rule the route declares (authorizationProblem, the one place it
 * lives), every TAIL_REAUTH_MS, at its key's expiry, and at once when a key,
 * member, organization or endpoint change is announced on any node. A
 * stream whose key no longer works (revoked, expired, owner or creator
 * deactivated), whose role or scopes no longer allow the route, or whose
 * endpoint is gone ends with a final `closed` event saying why.
 */
export class TailAccess {
  private readonly open = new Set<Watched>();
  private readonly timer: NodeJS.Timeout;
  private unlisten: Array<() => Promise<void>> = [];
  private pending: NodeJS.Timeout | undefined;
  private checking: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly authenticator: Authenticator,
    private readonly rule: RouteAuth,
    private readonly logger: Logger,
    everyMs = TAIL_REAUTH_MS,
  ) {
    this.timer = setInterval(() => this.checkAll(), everyMs);
    this.timer.unref();
  }

  async start(): Promise<void> {
    const soon = () => {
      // the authenticator drops its cache on the same notification; drop it here too, whichever runs first
      this.authenticator.invalidate();
      clearTimeout(this.pending);
      this.pending = setTimeout(() => this.checkAll(), 20);
      this.pending.unref();
    };
    for (const channel of [AUTH_CHANNEL, ENDPOINTS_CHANNEL]) this.unlisten.push(await this.db.listen(channel, soon, soon));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.pending);
    for (const w of this.open) clearTimeout(w.expiry);
    this.open.clear();
    await Promise.all(this.unlisten.splice(0).map((u) => u().catch(() => {})));
  }

  /** Watches a stream until it ends; `expiresAt` is its key's expiry. */
  watch(stream: TailStream, w: Omit<Watched, 'stream' | 'expiry'>, expiresAt: Date | null): () => void {
    const entry: Watched = { stream, ...w };
    if (expiresAt) {
      // setTimeout holds at most about 24.8 days; the periodic check covers a later expiry
      const ms = Math.min(expiresAt.getTime() - Date.now() + 10, 2 ** 31 - 1);
      entry.expiry = setTimeout(() => void this.check(entry), Math.max(0, ms));
      entry.expiry.unref();
    }
    this.open.add(entry);
    return () => {
      clearTimeout(entry.expiry);
      this.open.delete(entry);
    };
  }

  /** Checks every open stream now (tests call it to skip the wait). */
  checkAll(): Promise<void> {
    this.checking = this.checking.then(() => Promise.all([...this.open].map((w) => this.check(w))).then(() => {}));
    return this.checking;
  }

  private async check(w: Watched): Promise<void> {
    try {
      const ctx = await this.authenticator.authenticate(w.authorization);
      if (!ctx || ctx.organizationId !== w.organizationId) {
        return w.stream.close('unauthorized', 'The API key no longer works (revoked, expired, or its owner was deactivated).');
      }
      const problem = authorizationProblem(ctx, this.rule);
      if (problem) return w.stream.close('forbidden', problem);
      if (!(await getEndpoint(this.db, w.organizationId, w.endpointId))) return w.stream.close('not_found', `Endpoint ${w.endpointId} was deleted.`);
    } catch (err) {
      // a failed check is tried again on the next one; access is not withdrawn on a database hiccup
      this.logger.warn({ err }, 'checking a live tail stream failed; trying again');
    }
  }
}
