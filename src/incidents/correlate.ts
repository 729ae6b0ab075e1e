import type { Db, Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { getForwardDestination } from '../destinations/forward-destinations.ts';
import { asnOfUrl, type AsnInfo } from './asn.ts';
import type { HostResolver } from './host-resolver.ts';
import { likelyCause, withProviderOutage, type CauseEvidence } from './cause.ts';
import { announceForwardFailures } from './failure-events.ts';
import { announceIncident } from './events.ts';
import { addUpdate, destinationIdOf, INCIDENT_COLUMNS, type IncidentRow } from './store.ts';

/**
 * The correlator: turns recorded failures (incident_failures rows with no
 * incident yet, written by the delivery completion statement) into
 * incidents, in batches. One node at a time runs it, under a
 * transaction-level advisory lock: the delivery workers never wait on it
 * (they only insert failure rows), and because a single correlator assigns
 * failures and moves the incident's counters on by exactly the failures it
 * assigns, in the same transaction, the counters are exact whichever node
 * recorded each failure, and a crash mid-batch rolls back the assignment
 * and the counts together.
 */

/** Any constant works; every Weir node must use the same one. */
export const CORRELATOR_LOCK_KEY = 7_420_913_011;

/** A failure of a scope whose last incident was resolved less than this ago reopens as a recurrence. */
export const RECURRENCE_WINDOW_MS = 24 * 60 * 60_000;
/** Destinations of one ASN with failures within this window read as one provider outage. */
export const ASN_WINDOW_MS = 15 * 60_000;
/** The likely cause is read from this many most recent failures, so it follows the evidence as it changes. */
const CAUSE_SAMPLE = 100;
export const CORRELATE_BATCH = 1000;

export interface CorrelateOptions {
  batchSize?: number;
  /** WEIR_ASN_DB. */
  asnCsv?: string;
  /** DNS for destination hosts; the node's shared cache by default. */
  resolver?: HostResolver;
}

interface FailureRow {
  id: string;
  organization_id: string;
  scope_key: string;
  endpoint_id: string;
  forward_destination_id: string | null;
  destination_url: string;
}

/**
 * Correlates one batch of uncorrelated failures. Returns how many were
 * correlated, or null when another node holds the correlator lock.
 *
 * DNS happens before the transaction: the batch's destination URLs are read
 * without the lock, their ASNs looked up (timeout and cache in
 * host-resolver.ts), and only then does the transaction take the lock and
 * correlate the failures of that batch whose URL was looked up. A failure
 * recorded meanwhile with another URL waits for the next batch, so no
 * lookup ever runs while the lock and the transaction are held.
 */
export async function correlateFailures(db: Db, o: CorrelateOptions = {}): Promise<number | null> {
  const limit = o.batchSize ?? CORRELATE_BATCH;
  const { rows: peek } = await db.query<{ destination_url: string; last: string }>(
    `select destination_url, max(id::text) as last from (
       select id, destination_url from incident_failures where incident_id is null order by id limit $1) b
      group by destination_url`,
    [limit],
  );
  if (peek.length === 0) return 0;
  const urls = peek.map((p) => p.destination_url);
  const last = peek.reduce((m, p) => (p.last > m ? p.last : m), peek[0].last);
  // Looked up for every URL of the batch, even those whose incident is open
  // already (they need none): the cache makes the repeat cheap, and knowing
  // which scopes open an incident needs the transaction.
  const asnOfDestination = new Map(await Promise.all(urls.map(async (u) => [u, await asnOfUrl(u, o.asnCsv, o.resolver).catch(() => undefined)] as const)));
  return db.transaction(async (tx) => {
    const { rows: lock } = await tx.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [CORRELATOR_LOCK_KEY]);
    if (!lock[0].ok) return null;
    const { rows } = await tx.query<FailureRow>(
      `select id, organization_id, scope_key, endpoint_id, forward_destination_id, destination_url
         from incident_failures
        where incident_id is null and id <= $2::uuid and destination_url = any($3::text[])
        order by id limit $1`,
      [limit, last, urls],
    );
    const groups = new Map<string, FailureRow[]>();
    for (const r of rows) {
      const k = `${r.organization_id} ${r.scope_key}`;
      const g = groups.get(k);
      if (g) g.push(r);
      else groups.set(k, [r]);
    }
    const latest = new Map<string, IncidentRow | undefined>();
    for (const [k, failures] of groups) latest.set(k, await latestIncident(tx, failures[0]));
    const opening = [...groups].filter(([k]) => latest.get(k)?.status !== 'open' && latest.get(k)?.status !== 'investigating');
    const asns = new Map(opening.map(([k, f]) => [k, asnOfDestination.get(f[0].destination_url)] as const));
    const asnsTouched = new Set<string>();
    const opened: IncidentRow[] = [];
    for (const [k, failures] of groups) {
      const last = latest.get(k);
      const incident = asns.has(k) ? await openIncident(tx, failures[0], last, asns.get(k)) : last!;
      await addToIncident(tx, incident.id, failures);
      if (incident.asn !== null) asnsTouched.add(`${incident.organization_id} ${incident.asn}`);
      else await refreshCause(tx, incident.id);
      if (asns.has(k)) opened.push(incident);
    }
    for (const k of asnsTouched) {
      const [org, asn] = k.split(' ');
      await refreshAsnGroup(tx, org, asn);
    }
    // subscriptions: each new incident with its first failures counted and its cause known, then the failures themselves
    for (const i of opened) await announceIncident(tx, i.organization_id, i.id, { type: 'incident.opened' });
    await announceForwardFailures(tx, rows.map((r) => r.id));
    return rows.length;
  });
}

/** Correlates until nothing is left (or another node holds the lock); returns the number correlated here. */
export async function correlateAll(db: Db, o: CorrelateOptions = {}): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await correlateFailures(db, o);
    if (n === null || n === 0) return total;
    total += n;
    if (n < (o.batchSize ?? CORRELATE_BATCH)) return total;
  }
}

/** The latest incident of the failure's scope: failures join it unless it is resolved. */
async function latestIncident(tx: Queryable, f: FailureRow): Promise<IncidentRow | undefined> {
  const { rows } = await tx.query<IncidentRow>(
    `select ${INCIDENT_COLUMNS} from incidents where organization_id = $1::uuid and scope_key = $2 order by id desc limit 1`,
    [f.organization_id, f.scope_key],
  );
  return rows[0];
}

/** A new incident for the failure's scope: a recurrence when the last one was resolved within the window. */
async function openIncident(tx: Queryable, f: FailureRow, last: IncidentRow | undefined, asn: AsnInfo | undefined): Promise<IncidentRow> {
  const recurring = last?.resolved_at != null && Date.now() - new Date(last.resolved_at).getTime() < RECURRENCE_WINDOW_MS;
  const name = await destinationName(tx, f);
  const { rows: created } = await tx.query<IncidentRow>(
    `insert into incidents (id, organization_id, scope, scope_key, destination_id, destination_name, destination_url, asn, asn_org,
                            first_failure_at, last_failure_at, is_recurring, previous_incident_id)
     values ($1::uuid, $2::uuid, 'destination', $3, $4::uuid, $5, $6, $7, $8,
             (select failed_at from incident_failures where id = $9::uuid), (select failed_at from incident_failures where id = $9::uuid), $10, $11::uuid)
     returning ${INCIDENT_COLUMNS}`,
    [
      newId(),
      f.organization_id,
      f.scope_key,
      destinationIdOf(f.organization_id, f.forward_destination_id, f.destination_url),
      name,
      f.destination_url,
      asn?.asn ?? null,
      asn?.org ?? null,
      f.id,
      recurring,
      recurring ? last!.id : null,
    ],
  );
  const incident = created[0];
  const body = recurring
    ? `Incident recurred: forwards to ${name} fail again after incident ${last!.id} was resolved.`
    : `Incident opened: forwards to ${name} fail.`;
  await addUpdate(tx, { organizationId: f.organization_id, incidentId: incident.id, body });
  return incident;
}

/** A forward destination's name; for an endpoint's forward_url, "forward_url <url>". */
async function destinationName(tx: Queryable, f: FailureRow): Promise<string> {
  if (f.forward_destination_id) {
    const fd = await getForwardDestination(tx, f.organization_id, f.endpoint_id, f.forward_destination_id);
    if (fd) return fd.name;
  }
  return `forward_url ${f.destination_url}`;
}

/**
 * Assigns a batch of failures to their incident and moves its counters on
 * by the batch: failure_count by its size, endpoint_count by its endpoints
 * the incident had no failure of yet (an index probe each), first and last
 * failure by its extremes. Exact because only the correlator lock holder
 * assigns failures, in the same transaction as this; and the cost is the
 * batch's, not the incident's size.
 */
async function addToIncident(tx: Queryable, incidentId: string, failures: readonly FailureRow[]): Promise<void> {
  const ids = failures.map((f) => f.id);
  await tx.query(
    `update incidents i
        set failure_count = i.failure_count + b.n,
            endpoint_count = i.endpoint_count + (
              select count(distinct e.endpoint_id) from incident_failures e
               where e.id = any($2::uuid[])
                 and not exists (select 1 from incident_failures f where f.incident_id = i.id and f.endpoint_id = e.endpoint_id)),
            first_failure_at = least(i.first_failure_at, b.first), last_failure_at = greatest(i.last_failure_at, b.last), updated_at = now()
       from (select count(*)::int as n, min(failed_at) as first, max(failed_at) as last from incident_failures where id = any($2::uuid[])) b
      where i.id = $1::uuid`,
    [incidentId, ids],
  );
  await tx.query(`update incident_failures set incident_id = $1::uuid where id = any($2::uuid[])`, [incidentId, ids]);
}

/** Every unresolved incident of one ASN of an organization: the outage count and the causes that mention it. */
async function refreshAsnGroup(tx: Queryable, organizationId: string, asn: string): Promise<void> {
  const { rows } = await tx.query<{ id: string }>(
    `select id from incidents where organization_id = $1::uuid and asn = $2 and status <> 'resolved'
        and last_failure_at > now() - $3 * interval '1 millisecond'`,
    [organizationId, asn, ASN_WINDOW_MS],
  );
  for (const r of rows) await refreshCause(tx, r.id, rows.length);
}

/**
 * Recomputes the likely cause from the most recent failures (and the ASN
 * outage count when given); a change after the opening is told in a
 * system update.
 */
async function refreshCause(tx: Queryable, incidentId: string, asnDestinations = 1): Promise<void> {
  const { rows: evidence } = await tx.query<{ error_class: string | null; status_code: number | null; n: number; retry_after: number | null }>(
    `select error_class, status_code, count(*)::int as n, max(retry_after_s) as retry_after
       from (select error_class, status_code, retry_after_s from incident_failures where incident_id = $1::uuid order by id desc limit $2) recent
      group by error_class, status_code`,
    [incidentId, CAUSE_SAMPLE],
  );
  const { rows } = await tx.query<IncidentRow>(`select ${INCIDENT_COLUMNS} from incidents where id = $1::uuid`, [incidentId]);
  const incident = rows[0];
  const items: CauseEvidence[] = evidence.map((e) => ({ errorClass: e.error_class, statusCode: e.status_code, count: e.n, retryAfterSeconds: e.retry_after }));
  const cause = withProviderOutage(likelyCause(items), incident.asn === null ? null : Number(incident.asn), incident.asn_org, asnDestinations);
  if (cause === incident.likely_cause && asnDestinations === incident.asn_destination_count) return;
  await tx.query(`update incidents set likely_cause = $2, asn_destination_count = $3, updated_at = now() where id = $1::uuid`, [
    incidentId,
    cause,
    asnDestinations,
  ]);
  if (cause === incident.likely_cause) return;
  const body = incident.likely_cause === '' ? `Likely cause: ${cause}` : `Likely cause changed: ${cause}`;
  await addUpdate(tx, { organizationId: incident.organization_id, incidentId, body });
  // the first cause is part of the opening (incident.opened carries it); a later one is news
  if (incident.likely_cause !== '') {
    await announceIncident(tx, incident.organization_id, incidentId, { type: 'incident.updated', change: 'cause', previousCause: incident.likely_cause });
  }
}
