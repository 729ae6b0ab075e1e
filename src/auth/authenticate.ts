import type { Db, Queryable } from '../db/db.ts';
import type { PlanName } from '../orgs/plans.ts';
import { hashKey, isWellFormedKey } from './key-format.ts';
import { lowerRole, type AccessMode, type Role } from './permissions.ts';

/** NOTIFY channel on which key, member and organization changes are announced to every node. */
export const AUTH_CHANNEL = 'weir_auth';

/** Who is calling: resolved from the API key on every /v1 request. */
export interface AuthContext {
  keyId: string;
  keyName: string;
  organizationId: string;
  organizationName: string;
  plan: PlanName;
  region: string;
  memberId: string;
  memberEmail: string;
  /** The key owner's role as it is now. */
  memberRole: Role;
  /**
   * What the key may do, from live roles: the owner's role, lowered to the
   * creator's when another member minted the key for them, so a key never
   * exceeds its creator's role as it is now, not as it was when the key was made.
   */
  role: Role;
  accessMode: AccessMode;
  scopes: readonly string[];
  expiresAt: Date | null;
}

interface KeyRow {
  key_id: string;
  key_name: string;
  access_mode: AccessMode;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  member_id: string;
  member_email: string;
  role: Role;
  active: boolean;
  created_by: string | null;
  creator_role: Role | null;
  creator_active: boolean | null;
  organization_id: string;
  organization_name: string;
  plan: PlanName;
  region: string;
}

interface CacheEntry {
  ctx: AuthContext | null;
  cachedAt: number;
}

// A safety net only: NOTIFY normally invalidates within milliseconds, and the
// cache is bypassed whenever the LISTEN connection is down.
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 10_000;
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Resolves `Authorization: Bearer <key>` to an AuthContext or null (401).
 *
 * Each node caches by key hash and drops the whole cache on any message on
 * AUTH_CHANNEL: key, role and plan changes are rare, so precision buys
 * nothing and a full flush cannot miss a case. A generation counter stops a
 * lookup that raced with an invalidation from caching what it read before it.
 *
 * The cache is only trusted while the LISTEN connection is up: while it is
 * down nothing is cached or read from the cache, and it is flushed when the
 * loss is seen and again on reconnection, since notifications sent in
 * between are lost. The node that makes a change flushes its own cache when
 * the change commits (commitChange), so the very next request it serves
 * already sees it; other nodes follow on the NOTIFY, within milliseconds.
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private generation = 0;
  private unlisten: (() => Promise<void>) | undefined;
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    this.unlisten ??= await this.db.listen(AUTH_CHANNEL, () => this.invalidate(), () => this.invalidate());
  }

  async stop(): Promise<void> {
    const unlisten = this.unlisten;
    this.unlisten = undefined;
    this.invalidate();
    await unlisten?.();
  }

  invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  /**
   * Runs a change to keys, members or organizations in one transaction (the
   * domain function sends the NOTIFY inside it) and flushes this node's cache
   * once it has committed.
   */
  async commitChange<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(fn);
    } finally {
      this.invalidate();
    }
  }

  async authenticate(header: string | undefined, now = Date.now()): Promise<AuthContext | null> {
    const key = parseBearer(header);
    if (key === undefined || !isWellFormedKey(key)) return null;
    const hash = hashKey(key);
    const cacheKey = hash.toString('base64');
    // Without a live subscription an entry could outlive a change it never heard of.
    const useCache = this.unlisten !== undefined && this.db.listening();
    if (!useCache && this.cache.size > 0) this.invalidate();
    let entry = useCache ? this.cache.get(cacheKey) : undefined;
    if (entry && now - entry.cachedAt > CACHE_TTL_MS) entry = undefined;
    if (!entry) {
      const gen = this.generation;
      const row = await this.lookup(hash);
      entry = { ctx: row && isUsable(row) ? toContext(row) : null, cachedAt: now };
      if (useCache && gen === this.generation) {
        if (this.cache.size >= CACHE_MAX) this.cache.clear();
        this.cache.set(cacheKey, entry);
      }
    }
    const ctx = entry.ctx;
    if (!ctx) return null;
    if (ctx.expiresAt && ctx.expiresAt.getTime() <= now) return null;
    this.touch(ctx.keyId, now);
    return ctx;
  }

  private async lookup(hash: Buffer): Promise<KeyRow | undefined> {
    const { rows } = await this.db.query<KeyRow>(
      `select k.id as key_id, k.name as key_name, k.access_mode, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
              m.id as member_id, m.email as member_email, m.role, m.active,
              k.created_by, c.role as creator_role, c.active as creator_active,
              o.id as organization_id, o.name as organization_name, o.plan, o.region
         from api_keys k
         join members m on m.id = k.member_id
         join organizations o on o.id = k.organization_id
         left join members c on c.id = k.created_by
        where k.key_hash = $1`,
      [hash],
    );
    return rows[0];
  }

  /** Records last use at most once a minute per key, off the request path. */
  private touch(keyId: string, now: number): void {
    const last = this.lastUsedWritten.get(keyId) ?? 0;
    if (now - last < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(keyId, now);
    if (this.lastUsedWritten.size > CACHE_MAX) this.lastUsedWritten.clear();
    this.db.query('update api_keys set last_used_at = now() where id = $1::uuid', [keyId]).catch(() => {});
  }
}

/**
 * Revoked keys never work; nor do keys whose owner, or whose creator when
 * someone else minted it, is deactivated. The operator API mints keys with
 * no creator (created_by null): only the owner counts then.
 */
function isUsable(row: KeyRow): boolean {
  return row.revoked_at === null && row.active && (row.created_by === null || row.creator_active === true);
}

function toContext(row: KeyRow): AuthContext {
  return {
    keyId: row.key_id,
    keyName: row.key_name,
    organizationId: row.organization_id,
    organizationName: row.organization_name,
    plan: row.plan,
    region: row.region,
    memberId: row.member_id,
    memberEmail: row.member_email,
    memberRole: row.role,
    role: row.creator_role === null ? row.role : lowerRole(row.role, row.creator_role),
    accessMode: row.access_mode,
    scopes: row.scopes,
    expiresAt: row.expires_at,
  };
}

export function parseBearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m?.[1];
}
