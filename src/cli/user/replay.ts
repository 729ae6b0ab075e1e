import { SingleBar } from 'cli-progress';
import { allPages, unwrap } from '../../client/index.ts';
import { ApiFailure, type WeirApi } from './api-client.ts';
import type { Io } from './io.ts';

/**
 * `weir replay <id...>`: queues each replay in turn. Several show a progress
 * bar on stderr (only on a terminal: piped output stays clean); a failed one
 * is reported on its own line and the rest go on. Resolves with the number
 * of failures.
 */
export async function replayAll(api: WeirApi, ids: string[], destination: string | undefined, io: Io, json: boolean): Promise<number> {
  const bar = ids.length > 1 && process.stderr.isTTY ? new SingleBar({ format: 'replaying [{bar}] {value}/{total} {id}', stream: process.stderr, hideCursor: true }) : undefined;
  bar?.start(ids.length, 0, { id: '' });
  const results: Array<{ request_id: string; queued: boolean; error?: { code: string; message: string } }> = [];
  for (const id of ids) {
    try {
      await unwrap(api.client.POST('/v1/requests/{id}/replay', { params: { path: { id } }, body: destination ? { destination_id: destination } : {} }));
      results.push({ request_id: id, queued: true });
      if (!json && !bar) io.out(`Replay of ${id} queued\n`);
    } catch (err) {
      if (!(err instanceof ApiFailure) || err.status === 0 || err.status === 401) {
        bar?.stop();
        throw err;
      }
      results.push({ request_id: id, queued: false, error: { code: err.code, message: err.message } });
      if (!json) io.err(`weir: ${id}: ${err.message} (${err.code}, HTTP ${err.status})\n`);
    }
    bar?.increment(1, { id });
  }
  bar?.stop();
  const failed = results.filter((r) => !r.queued).length;
  if (json) io.out(JSON.stringify(results, null, 2) + '\n');
  else if (bar) io.out(`${results.length - failed} of ${results.length} replays queued\n`);
  return failed;
}

/**
 * The ids of an endpoint's captures whose delivery status is failed (some
 * destination has no retry left), newest first, optionally since a time:
 * what `weir replay --failed --endpoint` replays. One API call, in one place.
 */
export async function failedRequestIds(api: WeirApi, endpointId: string, since?: string): Promise<string[]> {
  const items = await allPages((before) =>
    api.client.GET('/v1/endpoints/{id}/requests', { params: { path: { id: endpointId }, query: { delivery_status: 'failed', limit: 100, before, ...(since ? { since } : {}) } } }),
  );
  return items.map((c) => c.id);
}
