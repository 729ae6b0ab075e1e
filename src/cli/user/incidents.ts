import { SingleBar } from 'cli-progress';
import { unwrap } from '../../client/index.ts';
import type { WeirApi } from './api-client.ts';
import type { Io } from './io.ts';
import { table } from './format.ts';

/** `weir incidents ls | show | replay`: each API call is one line below, through the typed client (weir/client). */

type IncidentStatus = 'open' | 'investigating' | 'resolved' | 'all';
const listIncidents = (api: WeirApi, status: string) =>
  unwrap(api.client.GET('/v1/incidents', { params: { query: { status: status as IncidentStatus, limit: 100 } } }));
const getIncident = (api: WeirApi, id: string) => unwrap(api.client.GET('/v1/incidents/{id}', { params: { path: { id } } }));
const replayIncident = (api: WeirApi, id: string, rpm: number) =>
  unwrap(api.client.POST('/v1/incidents/{id}/replay', { params: { path: { id } }, body: { requests_per_minute: rpm } }));
const getReplayBatch = (api: WeirApi, id: string) => unwrap(api.client.GET('/v1/replay-batches/{id}', { params: { path: { id } } }));

const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';

export async function incidentsLs(api: WeirApi, status: string, io: Io, asJson: boolean): Promise<void> {
  const page = await listIncidents(api, status);
  if (asJson) return io.out(json(page));
  if (page.data.length === 0) return io.out(`No ${status === 'all' ? '' : status + ' '}incidents.\n`);
  io.out(
    table([
      ['ID', 'STATUS', 'DESTINATION', 'FAILURES', 'LAST FAILURE', 'LIKELY CAUSE'],
      ...page.data.map((i: any) => [i.id, i.status, i.destination_name ?? '-', String(i.failure_count), i.last_failure_at, i.likely_cause]),
    ]),
  );
}

export async function incidentsShow(api: WeirApi, id: string, io: Io, asJson: boolean): Promise<void> {
  const i = await getIncident(api, id);
  if (asJson) return io.out(json(i));
  const network = i.destination_url?.startsWith('agent://') ? `an agent (${i.destination_url.slice(8)})` : i.asn === null ? 'unknown ASN' : `AS${i.asn}${i.asn_org ? ' ' + i.asn_org : ''}`;
  const lines = [
    `${i.destination_name ?? 'destination'}: ${i.status}${i.is_recurring ? ' (recurring)' : ''}`,
    `id: ${i.id}`,
    `likely cause: ${i.likely_cause}`,
    `destination: ${i.destination_url ?? '-'}  network: ${network}`,
    `failures: ${i.failure_count} on ${i.endpoint_count} endpoint(s), ${i.unreplayed_count} not replayed; first ${i.first_failure_at}, last ${i.last_failure_at}`,
    '',
  ];
  if (i.failures.length > 0) {
    lines.push(
      table([
        ['FAILED', 'REQUEST', 'STATUS', 'ANSWER', 'NEXT ATTEMPT', 'ERROR'],
        ...i.failures.map((f: any) => [f.failed_at, f.request_id, f.status, f.status_code ? `HTTP ${f.status_code}` : (f.error_class ?? '-'), f.next_attempt_at ?? '-', f.error ?? '']),
      ]).trimEnd(),
      '',
    );
  }
  lines.push('updates (newest first):', ...i.updates.map((u: any) => `  ${u.created_at}  ${u.body}`));
  io.out(lines.join('\n') + '\n');
}

/**
 * Queues the incident's paced replay and follows its batch until it
 * finishes, pauses or is cancelled: a progress bar on a terminal, a line
 * per change otherwise (or the final batch with --json). Resolves with the
 * batch's failed count.
 */
export async function incidentsReplay(api: WeirApi, id: string, rpm: number, io: Io, asJson: boolean, opts: { pollMs?: number; follow?: boolean } = {}): Promise<number> {
  const queued = await replayIncident(api, id, rpm);
  if (!asJson) io.out(`Replay batch ${queued.replay_batch_id}: ${queued.queued_count} request(s) at ${queued.requests_per_minute}/min\n`);
  if (opts.follow === false) {
    if (asJson) io.out(json(queued));
    return 0;
  }
  const bar = !asJson && process.stderr.isTTY ? new SingleBar({ format: 'replaying [{bar}] {value}/{total} delivered {delivered}, failed {failed}', stream: process.stderr, hideCursor: true }) : undefined;
  bar?.start(queued.queued_count, 0, { delivered: 0, failed: 0 });
  let last = '';
  for (;;) {
    const b = await getReplayBatch(api, queued.replay_batch_id);
    const done = b.delivered_count + b.failed_count;
    const progress = `${done}/${b.queued_count} (delivered ${b.delivered_count}, failed ${b.failed_count}) ${b.status}`;
    if (bar) bar.update(done, { delivered: b.delivered_count, failed: b.failed_count });
    else if (!asJson && progress !== last) io.out(`${progress}\n`);
    last = progress;
    if (b.status !== 'running') {
      bar?.stop();
      if (asJson) io.out(json(b));
      else if (b.status === 'paused') io.out(`Paused: ${b.paused_reason}. Resume it from the dashboard or POST /v1/replay-batches/${b.id}/resume.\n`);
      else io.out(`Replay ${b.status}: ${b.delivered_count} delivered, ${b.failed_count} failed\n`);
      return b.failed_count + (b.status === 'paused' ? 1 : 0);
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
  }
}
