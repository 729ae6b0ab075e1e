import { recordAudit, type Actor } from '../auth/audit.ts';
import { notify, type Db, type Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { lockOrganization } from '../orgs/organizations.ts';
import { isPlanName, type PlanTable } from '../orgs/plans.ts';
import { deleteEndpointCaptures } from '../requests/captures.ts';
import { prepareIngestResponse, storeIngestResponse, type PreparedIngestResponse, type StoredIngestResponse } from './ingest-response.ts';
import { planVerification, prepareVerifier, type CurrentVerification, type StoredVerification, type VerificationColumns, type VerificationWrite } from '../verification/settings.ts';
import type { Verifier } from '../verification/verify.ts';
import { generateSlug } from './slug.ts';
import { parseDeduplication, type DedupSettings } from '../routing/dedup.ts';
import { endpointInputProblem, type EndpointFields } from './validate.ts';

/**
 * NOTIFY channel carrying the slug of every endpoint created, edited or
 * deleted, so each node's ingest cache drops that slug at once
 * (src/ingest/endpoint-cache.ts).
 */
export const ENDPOINTS_CHANNEL = 'weir_endpoints';

export interface Endpoint extends VerificationColumns {
  id: string;
  organization_id: string;
  created_by: string | null;
  slug: string;
  name: string;
  description: string | null;
  forward_url: string | null;
  paused: boolean;
  /** The custom ingest answer, or null for the default 200 {"request_id"}. */
  response: StoredIngestResponse | null;
  /** Duplicate suppression (src/routing/dedup.ts), or null. */
  deduplication: DedupSettings | null;
  created_at: Date;
  updated_at: Date;
}

// Reads never select the verification secrets: only their last four
// characters (findIngestTarget alone reads the secrets themselves).
const COLUMNS =
  'id, organization_id, created_by, slug, name, description, forward_url, paused, response, created_at, updated_at, ' +
  'verification, right(verification_secret, 4) as secret_last4, verification_previous_expires_at, deduplication';

export type CreateEndpointResult =
  | { ok: true; endpoint: Endpoint }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'plan_limit'; plan: string; limit: number }
  | { ok: false; reason: 'organization_not_found' };

export type UpdateEndpointResult =
  | { ok: true; endpoint: Endpoint }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'not_found' };

export type DeleteEndpointResult = { ok: true; endpoint: Endpoint } | { ok: false; reason: 'not_found' };

/** An endpoint of an organization, or undefined (also for another organization's id). */
export async function getEndpoint(db: Queryable, organizationId: string, id: string): Promise<Endpoint | undefined> {
  const { rows } = await db.query<Endpoint>(`select ${COLUMNS} from endpoints where id = $1::uuid and organization_id = $2::uuid`, [id, organizationId]);
  return rows[0];
}

/** Every endpoint of an organization, newest first (the specification's list is not paged; plans cap its length). */
export async function listEndpoints(db: Queryable, organizationId: string): Promise<Endpoint[]> {
  const { rows } = await db.query<Endpoint>(`select ${COLUMNS} from endpoints where organization_id = $1::uuid order by id desc`, [organizationId]);
  return rows;
}

/** What the ingest listener needs to know about a slug. */
export interface IngestTarget {
  id: string;
  organization_id: string;
  paused: boolean;
  /** Prepared here, once per cache fill, so a capture's answer costs one property check. */
  response: PreparedIngestResponse | null;
  /** Signature verification (src/verification), keys prepared once per cache fill; null: none, and no cost. */
  verification: Verifier | null;
  /** Duplicate suppression (src/routing/dedup.ts); null: none, and no cost. */
  deduplication: DedupSettings | null;
}

interface IngestTargetRow {
  id: string;
  organization_id: string;
  paused: boolean;
  response: StoredIngestResponse | null;
  verification: StoredVerification | null;
  verification_secret: string | null;
  verification_previous_secret: string | null;
  verification_previous_expires_at: Date | null;
  deduplication: DedupSettings | null;
}

/** `ingestBase`: the public ingest address, which Twilio signs as part of the URL (docs/verification.md). */
export async function findIngestTarget(db: Queryable, slug: string, ingestBase = ''): Promise<IngestTarget | undefined> {
  const { rows } = await db.query<IngestTargetRow>(
    `select id, organization_id, paused, response, verification, verification_secret, verification_previous_secret, verification_previous_expires_at,
            deduplication
       from endpoints where slug = $1`,
    [slug],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    organization_id: row.organization_id,
    paused: row.paused,
    response: row.response && prepareIngestResponse(row.response),
    verification:
      row.verification && row.verification_secret !== null
        ? prepareVerifier(row.verification, row.verification_secret, row.verification_previous_secret, row.verification_previous_expires_at, ingestBase)
        : null,
    deduplication: row.deduplication ?? null,
  };
}

/**
 * Creates an endpoint within the plan's limit. The organization row is locked
 * (lockOrganization) before counting, so two concurrent creates on different nodes
 * run one after the other and cannot both see "one below the limit". The plan
 * is read from that locked row, not from a cached auth context. `newSlug` is
 * a parameter so tests can force the collision paths.
 */
export async function createEndpoint(
  db: Db,
  plans: PlanTable,
  organizationId: string,
  input: EndpointFields & { name: string; createdBy: string | null },
  newSlug: () => string = generateSlug,
): Promise<CreateEndpointResult> {
  const problem = endpointInputProblem(input);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  const verification = planVerification(input.verification ?? null, null);
  if (!verification.ok) return { ok: false, reason: 'invalid', message: verification.message };
  const v = verification.write;
  const dedup = parseDeduplication(input.deduplication ?? null);
  if (!dedup.ok) return { ok: false, reason: 'invalid', message: dedup.message };
  return db.transaction(async (tx) => {
    const plan = (await lockOrganization(tx, organizationId))?.plan;
    if (plan === undefined) return { ok: false, reason: 'organization_not_found' } as const;
    const limit = isPlanName(plan) ? plans[plan].max_endpoints : 0;
    const { rows: counted } = await tx.query<{ n: number }>('select count(*)::int as n from endpoints where organization_id = $1::uuid', [organizationId]);
    if (counted[0].n >= limit) return { ok: false, reason: 'plan_limit', plan, limit } as const;

    // A fresh slug collides with a live or retired one with odds of about
    // 2^-82; the loop is there so that even then nothing fails.
    for (;;) {
      const slug = newSlug();
      const { rows } = await tx.query<Endpoint>(
        `insert into endpoints (id, organization_id, created_by, slug, name, description, forward_url, response,
                                verification, verification_secret, verification_previous_secret, verification_previous_expires_at, deduplication)
         select $1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12::timestamptz, $13::jsonb
          where not exists (select 1 from retired_slugs where slug = $4)
         on conflict (slug) do nothing
         returning ${COLUMNS}`,
        [newId(), organizationId, input.createdBy, slug, input.name, input.description ?? null, input.forwardUrl ?? null, responseParam(input.response),
          ...verificationParams(v), dedup.value && JSON.stringify(dedup.value)],
      );
      const endpoint = rows[0];
      if (!endpoint) continue;
      // A node may have cached "no such slug" for it: tell every node.
      await notify(tx, ENDPOINTS_CHANNEL, slug);
      await recordAudit(tx, organizationId, actorOf(input.createdBy), 'endpoint.created', { type: 'endpoint', id: endpoint.id, name: endpoint.name });
      return { ok: true, endpoint } as const;
    }
  });
}

/**
 * Applies a partial update. Every field is validated before anything is
 * written, so a rejected request changes nothing. Pausing takes effect on
 * every node's ingest listener through ENDPOINTS_CHANNEL.
 */
export async function updateEndpoint(
  db: Db,
  organizationId: string,
  id: string,
  patch: EndpointFields & { paused?: boolean },
  actorMemberId: string | null,
): Promise<UpdateEndpointResult> {
  const problem = endpointInputProblem(patch);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  const has = (k: keyof typeof patch) => patch[k] !== undefined;
  const changed = (['name', 'description', 'forwardUrl', 'paused', 'response', 'verification', 'deduplication'] as const).filter(has);
  const dedup = parseDeduplication(patch.deduplication ?? null);
  if (!dedup.ok) return { ok: false, reason: 'invalid', message: dedup.message };
  if (changed.length === 0) {
    const endpoint = await getEndpoint(db, organizationId, id);
    return endpoint ? { ok: true, endpoint } : { ok: false, reason: 'not_found' };
  }
  return db.transaction(async (tx) => {
    // A new setting builds on the stored secrets (kept, or rotated out), read
    // under the row's lock so two edits cannot both rotate the same secret.
    let v: VerificationWrite | undefined;
    if (has('verification')) {
      const current = await lockedVerification(tx, organizationId, id);
      if (current === undefined) return { ok: false, reason: 'not_found' } as const;
      const planned = planVerification(patch.verification!, current);
      if (!planned.ok) return { ok: false, reason: 'invalid', message: planned.message } as const;
      v = planned.write;
    }
    const { rows } = await tx.query<Endpoint>(
      `update endpoints set
          name = case when $3::boolean then $4 else name end,
          description = case when $5::boolean then $6 else description end,
          forward_url = case when $7::boolean then $8 else forward_url end,
          paused = case when $9::boolean then $10::boolean else paused end,
          response = case when $11::boolean then $12::jsonb else response end,
          verification = case when $13::boolean then $14::jsonb else verification end,
          verification_secret = case when $13::boolean then $15 else verification_secret end,
          verification_previous_secret = case when $13::boolean then $16 else verification_previous_secret end,
          verification_previous_expires_at = case when $13::boolean then $17::timestamptz else verification_previous_expires_at end,
          deduplication = case when $18::boolean then $19::jsonb else deduplication end,
          updated_at = now()
        where id = $1::uuid and organization_id = $2::uuid
        returning ${COLUMNS}`,
      [id, organizationId, has('name'), patch.name ?? null, has('description'), patch.description ?? null, has('forwardUrl'), patch.forwardUrl ?? null, has('paused'), patch.paused ?? null,
        has('response'), responseParam(patch.response), v !== undefined, ...verificationParams(v),
        has('deduplication'), dedup.value && JSON.stringify(dedup.value)],
    );
    const endpoint = rows[0];
    if (!endpoint) return { ok: false, reason: 'not_found' } as const;
    await notify(tx, ENDPOINTS_CHANNEL, endpoint.slug);
    await recordAudit(tx, organizationId, actorOf(actorMemberId), 'endpoint.updated', { type: 'endpoint', id, name: endpoint.name }, {
      fields: changed.map((k) => (k === 'forwardUrl' ? 'forward_url' : k)),
    });
    return { ok: true, endpoint } as const;
  });
}

/**
 * Deletes an endpoint and its captured requests (its forward destinations
 * and deliveries go by their foreign keys' cascade). The slug moves to
 * retired_slugs so the old public URL can never capture into another
 * endpoint, and every node forgets it at once.
 */
export async function deleteEndpoint(db: Db, organizationId: string, id: string, actorMemberId: string | null): Promise<DeleteEndpointResult> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<Endpoint>(`delete from endpoints where id = $1::uuid and organization_id = $2::uuid returning ${COLUMNS}`, [id, organizationId]);
    const endpoint = rows[0];
    if (!endpoint) return { ok: false, reason: 'not_found' } as const;
    await deleteEndpointCaptures(tx, id);
    await tx.query('insert into retired_slugs (slug) values ($1) on conflict (slug) do nothing', [endpoint.slug]);
    await notify(tx, ENDPOINTS_CHANNEL, endpoint.slug);
    await recordAudit(tx, organizationId, actorOf(actorMemberId), 'endpoint.deleted', { type: 'endpoint', id, name: endpoint.name }, { slug: endpoint.slug });
    return { ok: true, endpoint } as const;
  });
}

/** The stored verification of an endpoint, its row locked for this transaction; undefined when there is no such endpoint. */
async function lockedVerification(tx: Queryable, organizationId: string, id: string): Promise<CurrentVerification | null | undefined> {
  const { rows } = await tx.query<{ provider: CurrentVerification['provider']; secret: string | null; previous_secret: string | null; previous_expires_at: Date | null }>(
    `select verification->>'provider' as provider, verification_secret as secret, verification_previous_secret as previous_secret,
            verification_previous_expires_at as previous_expires_at
       from endpoints where id = $1::uuid and organization_id = $2::uuid for update`,
    [id, organizationId],
  );
  const r = rows[0];
  if (!r) return undefined;
  return { provider: r.provider, secret: r.secret, previousSecret: r.previous_secret, previousExpiresAt: r.previous_expires_at };
}

/** The four verification parameters of a write (all null when there is none). */
function verificationParams(v: VerificationWrite | undefined): [string | null, string | null, string | null, string | null] {
  if (!v) return [null, null, null, null];
  return [v.verification && JSON.stringify(v.verification), v.secret, v.previousSecret, v.previousExpiresAt?.toISOString() ?? null];
}

/** The jsonb parameter for a validated `response` (null: the default answer). */
function responseParam(v: EndpointFields['response']): string | null {
  const stored = v === undefined ? null : storeIngestResponse(v);
  return stored === null ? null : JSON.stringify(stored);
}

function actorOf(memberId: string | null): Actor {
  return memberId ? { type: 'member', memberId } : { type: 'system' };
}
