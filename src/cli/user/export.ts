import { SingleBar } from 'cli-progress';
import { createWriteStream, renameSync, rmSync, type WriteStream } from 'node:fs';
import { allPages, unwrap } from '../../client/index.ts';
import { ApiFailure, type WeirApi } from './api-client.ts';
import type { Io } from './io.ts';

export interface ExportOptions {
  endpointId: string;
  /** A file to write; undefined = stdout. */
  out?: string;
  since?: string;
  until?: string;
  json: boolean;
}

export interface ExportSummary {
  endpoint_id: string;
  exported: number;
  /** Listed, then gone before their turn came (deleted, or removed by retention). */
  skipped: number;
  body_bytes: number;
  out: string;
  since: string | null;
  until: string | null;
}

/** Captures fetched at once: enough to hide a round trip, few enough to leave the server alone. */
const IN_FLIGHT = 4;

/**
 * `weir requests export <endpoint>`: every capture of the endpoint (within
 * --since/--until) as NDJSON, oldest first, one capture per line with its
 * body in base64 so the bytes survive exactly (docs/capture.md "Export").
 *
 * The ids are listed first (pages of 100 summaries), so the progress bar
 * knows its total; then each capture is fetched, a few at a time, and
 * written in order. A file is written as FILE.partial and renamed when
 * complete, so an interrupted export never looks finished. The summary goes
 * to stdout with --out, else to stderr (stdout carries the NDJSON).
 */
export async function exportCaptures(api: WeirApi, o: ExportOptions, io: Io): Promise<ExportSummary> {
  const listed = await allPages((before) =>
    api.client.GET('/v1/endpoints/{id}/requests', { params: { path: { id: o.endpointId }, query: { limit: 100, before, since: o.since, until: o.until } } }),
  );
  const ids = listed.map((c) => c.id).reverse();

  const partial = o.out ? `${o.out}.partial` : undefined;
  const file = partial ? await openFile(partial) : undefined;
  const write = (line: string) => (file ? new Promise<void>((resolve, reject) => file.write(line, (err) => (err ? reject(err) : resolve()))) : io.out(line));
  const bar = process.stderr.isTTY && ids.length > 0 ? new SingleBar({ format: 'exporting [{bar}] {value}/{total} captures', stream: process.stderr, hideCursor: true }) : undefined;
  bar?.start(ids.length, 0);
  const summary: ExportSummary = { endpoint_id: o.endpointId, exported: 0, skipped: 0, body_bytes: 0, out: o.out ?? '-', since: o.since ?? null, until: o.until ?? null };
  try {
    const fetchOne = (id: string) =>
      unwrap(api.client.GET('/v1/requests/{id}', { params: { path: { id } } })).catch((err) => {
        // listed a moment ago, gone now: retention or a deletion, not a failure of the export
        if (err instanceof ApiFailure && err.status === 404) return undefined;
        throw err;
      });
    const pending: Promise<any>[] = ids.slice(0, IN_FLIGHT).map(fetchOne);
    for (let i = 0; i < ids.length; i++) {
      const capture = await pending[i];
      if (i + IN_FLIGHT < ids.length) pending.push(fetchOne(ids[i + IN_FLIGHT]));
      pending[i] = Promise.resolve();
      if (capture) {
        const { body, body_encoding, ...rest } = capture;
        const bytes = Buffer.from(body, body_encoding === 'base64' ? 'base64' : 'utf8');
        await write(JSON.stringify({ ...rest, body: bytes.toString('base64'), body_encoding: 'base64' }) + '\n');
        summary.exported++;
        summary.body_bytes += bytes.length;
      } else {
        summary.skipped++;
      }
      bar?.increment();
    }
    bar?.stop();
    if (file && partial) {
      await new Promise<void>((resolve, reject) => file.end((err?: Error | null) => (err ? reject(err) : resolve())));
      renameSync(partial, o.out!);
    }
  } catch (err) {
    bar?.stop();
    file?.destroy();
    if (partial) rmSync(partial, { force: true });
    throw err;
  }
  const text = o.json
    ? JSON.stringify(summary) + '\n'
    : `Exported ${summary.exported} capture${summary.exported === 1 ? '' : 's'} (${summary.body_bytes} body bytes)${o.out ? ` to ${o.out}` : ''}${summary.skipped ? `; ${summary.skipped} deleted meanwhile, skipped` : ''}\n`;
  if (o.out) io.out(text);
  else io.err(text);
  return summary;
}

/** Opens FILE.partial for writing, or fails with one line naming it. */
async function openFile(path: string): Promise<WriteStream> {
  const stream = createWriteStream(path, { flags: 'w', mode: 0o600 });
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (err: NodeJS.ErrnoException) => reject(new ApiFailure(0, err.code ?? 'io_error', `cannot write ${path}: ${err.message}`)));
  });
  return stream;
}
