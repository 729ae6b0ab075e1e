import { Command, CommanderError } from 'commander';
import { unwrap } from '../../client/index.ts';
import { ApiFailure, connect, findEndpoint } from './api-client.ts';
import { loadCredentials, saveCredentials } from './credentials.ts';
import { exportCaptures } from './export.ts';
import { prettyBody, table } from './format.ts';
import { listen } from './listen.ts';
import { incidentsLs, incidentsReplay, incidentsShow } from './incidents.ts';
import type { Env, Io } from './io.ts';
import { failedRequestIds, replayAll } from './replay.ts';
import { tail } from './tail.ts';

/** A failure a command expects (bad argument, not logged in): one line, exit code 2. */
class UsageFailure extends Error {}

const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';

/**
 * The user CLI: `weir login | endpoints | requests (ls, show, export) | tail | replay | incidents | listen`.
 * Every command takes --json; an API error becomes one line on stderr and
 * exit code 1, bad usage exit code 2.
 */
export async function runUserCli(argv: string[], env: Env, io: Io): Promise<number> {
  const api = () => {
    const c = loadCredentials(env);
    if ('missing' in c) throw new UsageFailure(c.missing);
    return connect(c);
  };
  const program = new Command('weir')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showSuggestionAfterError();

  program
    .command('login')
    .description('store the server and API key for the other commands (0600, in your config directory)')
    .requiredOption('--server <url>', 'the Weir base URL, e.g. http://127.0.0.1:8080')
    .requiredOption('--key <key>', 'an API key, wr_live_...')
    .option('--json', 'JSON output')
    .action(async (o: { server: string; key: string; json?: boolean }) => {
      if (!URL.canParse(o.server) || !/^https?:$/.test(new URL(o.server).protocol)) throw new UsageFailure(`--server must be an http:// or https:// URL, got "${o.server}"`);
      const creds = { server: o.server.replace(/\/+$/, ''), key: o.key };
      // check the pair before storing it, so a typo is caught now
      const me = await unwrap(connect(creds).client.GET('/v1/me'));
      const path = saveCredentials(env, creds);
      io.out(o.json ? json({ server: creds.server, path, organization: me.organization ?? null }) : `Logged in to ${creds.server}; stored in ${path}\n`);
    });

  const endpoints = program.command('endpoints').description('list, create, pause and delete endpoints');
  endpoints
    .command('ls')
    .option('--json', 'JSON output')
    .action(async (o: { json?: boolean }) => {
      const items = await unwrap(api().client.GET('/v1/endpoints'));
      if (o.json) return io.out(json(items));
      io.out(table([['ID', 'NAME', 'STATE', 'INGEST URL'], ...items.map((e) => [e.id, e.name, e.paused ? 'paused' : 'active', e.ingest_url])]));
    });
  endpoints
    .command('create <name>')
    .option('--forward-url <url>', 'forward each capture to this HTTPS URL')
    .option('--json', 'JSON output')
    .action(async (name: string, o: { forwardUrl?: string; json?: boolean }) => {
      const e = await unwrap(api().client.POST('/v1/endpoints', { body: { name, ...(o.forwardUrl ? { forward_url: o.forwardUrl } : {}) } }));
      io.out(o.json ? json(e) : `Created ${e.name} (${e.id})\nIngest URL: ${e.ingest_url}\n`);
    });
  for (const [verb, paused] of [['pause', true], ['resume', false]] as const) {
    endpoints
      .command(`${verb} <endpoint>`)
      .description(`${verb} capture (by id or name)`)
      .option('--json', 'JSON output')
      .action(async (ref: string, o: { json?: boolean }) => {
        const client = api();
        const e = await unwrap(client.client.PATCH('/v1/endpoints/{id}', { params: { path: { id: (await findEndpoint(client, ref)).id } }, body: { paused } }));
        io.out(o.json ? json(e) : `${e.name} is ${e.paused ? 'paused: ingestion answers 423' : 'active'}\n`);
      });
  }
  endpoints
    .command('rm <endpoint>')
    .description('delete an endpoint and its captures (by id or name)')
    .option('--json', 'JSON output')
    .action(async (ref: string, o: { json?: boolean }) => {
      const client = api();
      const e = await findEndpoint(client, ref);
      await unwrap(client.client.DELETE('/v1/endpoints/{id}', { params: { path: { id: e.id } } }));
      io.out(o.json ? json({ deleted: e.id }) : `Deleted ${e.name} (${e.id})\n`);
    });

  const requests = program.command('requests').description('captured requests');
  requests
    .command('ls <endpoint>')
    .option('--limit <n>', 'how many, newest first (1-100)', '25')
    .option('--json', 'JSON output')
    .action(async (ref: string, o: { limit: string; json?: boolean }) => {
      if (!/^\d+$/.test(o.limit)) throw new UsageFailure(`--limit must be a number, got "${o.limit}"`);
      const client = api();
      const page = await unwrap(client.client.GET('/v1/endpoints/{id}/requests', { params: { path: { id: (await findEndpoint(client, ref)).id }, query: { limit: Number(o.limit) } } }));
      if (o.json) return io.out(json(page));
      io.out(table([['ID', 'RECEIVED', 'METHOD', 'PATH', 'SIZE'], ...page.data.map((r) => [r.id, r.received_at, r.method, (r.path || '/') + (r.query ? `?${r.query}` : ''), String(r.body_size)])]));
    });
  requests
    .command('show <id>')
    .description('one capture: headers in arrival order, body pretty-printed by its content type')
    .option('--raw', 'write the body bytes exactly as captured, nothing else')
    .option('--json', 'JSON output')
    .action(async (id: string, o: { raw?: boolean; json?: boolean }) => {
      const r = await unwrap(api().client.GET('/v1/requests/{id}', { params: { path: { id } } }));
      const body = Buffer.from(r.body, r.body_encoding === 'base64' ? 'base64' : 'utf8');
      if (o.raw) return io.bytes(body);
      if (o.json) return io.out(json(r));
      const lines = [`${r.method} ${r.path || '/'}${r.query ? `?${r.query}` : ''}`, `id: ${r.id}  received: ${r.received_at}  from: ${r.source_ip ?? '-'}`, ''];
      for (const h of r.headers) lines.push(`${h.name}: ${h.value}`);
      lines.push('', prettyBody(body, r.content_type));
      io.out(lines.join('\n') + '\n');
    });

  requests
    .command('export <endpoint>')
    .description('every capture as NDJSON, oldest first, one per line with its body in base64 (a progress bar on a terminal)')
    .option('--out <file>', 'write to this file (stdout when absent)')
    .option('--since <time>', 'only captures received at or after this ISO 8601 time, e.g. 2026-01-01T00:00:00Z')
    .option('--until <time>', 'only captures received before this ISO 8601 time')
    .option('--json', 'the summary as JSON')
    .action(async (ref: string, o: { out?: string; since?: string; until?: string; json?: boolean }) => {
      const client = api();
      await exportCaptures(client, { endpointId: (await findEndpoint(client, ref)).id, out: o.out, since: o.since, until: o.until, json: Boolean(o.json) }, io);
    });

  program
    .command('replay [request-ids...]')
    .description("forward captured requests again to their endpoint's destinations (a progress bar for several); --failed --endpoint replays every capture whose delivery failed")
    .option('--destination <id>', 'only this forward destination')
    .option('--failed', "every capture of --endpoint whose delivery status is failed (some destination has no retry left)")
    .option('--endpoint <endpoint>', 'with --failed: the endpoint (id or name)')
    .option('--since <time>', 'with --failed: only captures received at or after this ISO 8601 time, e.g. 2026-01-01T00:00:00Z')
    .option('--json', 'JSON output')
    .action(async (ids: string[], o: { destination?: string; failed?: boolean; endpoint?: string; since?: string; json?: boolean }) => {
      if (o.failed) {
        if (ids.length > 0) throw new UsageFailure('give request ids or --failed, not both');
        if (!o.endpoint) throw new UsageFailure('--failed needs --endpoint <id or name>');
      } else if (ids.length === 0) throw new UsageFailure('give request ids to replay, or --failed --endpoint <endpoint>');
      else if (o.endpoint || o.since) throw new UsageFailure('--endpoint and --since go with --failed');
      const client = api();
      if (o.failed) {
        ids = await failedRequestIds(client, (await findEndpoint(client, o.endpoint!)).id, o.since);
        if (ids.length === 0) return io.out(o.json ? '[]\n' : 'No failed captures to replay.\n');
      }
      const failures = await replayAll(client, ids, o.destination, io, Boolean(o.json));
      if (failures > 0) process.exitCode = 1;
    });

  const incidents = program.command('incidents').description('incidents: failing destinations, their failures, and paced replay');
  incidents
    .command('ls')
    .description('incidents, newest first')
    .option('--status <status>', 'open (with investigating), investigating, resolved or all', 'open')
    .option('--json', 'JSON output')
    .action(async (o: { status: string; json?: boolean }) => {
      if (!['open', 'investigating', 'resolved', 'all'].includes(o.status)) throw new UsageFailure(`--status must be open, investigating, resolved or all, got "${o.status}"`);
      await incidentsLs(api(), o.status, io, Boolean(o.json));
    });
  incidents
    .command('show <id>')
    .description('one incident: cause, counts, its newest failures (status, next retry) and its timeline')
    .option('--json', 'JSON output')
    .action(async (id: string, o: { json?: boolean }) => incidentsShow(api(), id, io, Boolean(o.json)));
  incidents
    .command('replay <id>')
    .description("replay the incident's unreplayed failures at a steady rate, following the batch until it ends")
    .requiredOption('--rpm <n>', 'requests per minute, 1-6000')
    .option('--no-follow', 'queue it and return at once')
    .option('--json', 'JSON output')
    .action(async (id: string, o: { rpm: string; follow: boolean; json?: boolean }) => {
      if (!/^\d+$/.test(o.rpm) || Number(o.rpm) < 1 || Number(o.rpm) > 6000) throw new UsageFailure(`--rpm must be 1-6000, got "${o.rpm}"`);
      const failed = await incidentsReplay(api(), id, Number(o.rpm), io, Boolean(o.json), { follow: o.follow });
      if (failed > 0) process.exitCode = 1;
    });

  program
    .command('tail <endpoint>')
    .description('follow captures as they arrive, one line each with the event type, then one per forward outcome (Ctrl-C stops)')
    .option('--json', 'one JSON object per line')
    .option('--outcomes-for <seconds>', "how long each capture's forwards are followed (0: not at all)", '60')
    .action(async (ref: string, o: { json?: boolean; outcomesFor: string }) => {
      if (!/^\d+$/.test(o.outcomesFor) || Number(o.outcomesFor) > 3600) throw new UsageFailure(`--outcomes-for must be 0-3600 seconds, got "${o.outcomesFor}"`);
      const client = api();
      await tail(client, (await findEndpoint(client, ref)).id, io, Boolean(o.json), Number(o.outcomesFor) * 1000);
    });

  program
    .command('listen <port> [path]')
    .description('receive webhooks on this machine: a development endpoint forwarded through an agent to 127.0.0.1:<port><path>')
    .option('--name <name>', 'endpoint (and agent) name to create or reuse')
    .option('--json', 'one JSON object per line')
    .action(async (port: string, path: string | undefined, o: { name?: string; json?: boolean }) => {
      if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) throw new UsageFailure(`<port> must be 1-65535, got "${port}"`);
      if (path !== undefined && !path.startsWith('/')) throw new UsageFailure(`[path] must start with /, got "${path}"`);
      process.exitCode = await listen(api(), { port: Number(port), path: path ?? '/', name: o.name ?? `dev-${port}`, json: Boolean(o.json) }, io);
    });

  try {
    await program.parseAsync(argv, { from: 'user' });
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof UsageFailure) {
      io.err(`weir: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ApiFailure) {
      io.err(`weir: ${err.message} (${err.code}${err.status ? `, HTTP ${err.status}` : ''})\n`);
      return 1;
    }
    throw err;
  }
}
