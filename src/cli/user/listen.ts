import { runUntilSignal, version } from '../../agents/agent-command.ts';
import { AgentClient } from '../../agents/client.ts';
import { humanOutput, jsonOutput } from '../../agents/output.ts';
import { allPages, unwrap } from '../../client/index.ts';
import type { WeirApi } from './api-client.ts';
import type { Io } from './io.ts';
import { unreachableReason, unreachableWarning } from './reachability.ts';

export interface ListenOptions {
  port: number;
  path: string;
  /** The endpoint's and the agent's name: what makes a second `weir listen` reuse them. */
  name: string;
  json: boolean;
}

/**
 * `weir listen <port> [path]`: the endpoint named `name` (created when
 * absent), a development agent of the same name with a fresh token (a
 * token is shown only once, so reusing the agent means re-issuing it: a
 * second `weir listen` with the same name takes over from the first), an
 * agent destination to 127.0.0.1:<port><path> (created or re-pointed),
 * then the agent itself in this process until Ctrl-C.
 */
export async function listen(api: WeirApi, o: ListenOptions, io: Io): Promise<number> {
  const { client } = api;
  const endpoints = await unwrap(client.GET('/v1/endpoints'));
  const endpoint = endpoints.find((e) => e.name === o.name) ?? (await unwrap(client.POST('/v1/endpoints', { body: { name: o.name, description: 'weir listen' } })));
  if (endpoint.paused) await unwrap(client.PATCH('/v1/endpoints/{id}', { params: { path: { id: endpoint.id } }, body: { paused: false } }));

  const agents = await allPages((before) => client.GET('/v1/agents', { params: { query: { limit: 100, before } } }));
  const existing = agents.find((a) => a.name === o.name && !a.revoked_at);
  const agent = existing
    ? await unwrap(client.POST('/v1/agents/{id}/token', { params: { path: { id: existing.id } } }))
    : await unwrap(client.POST('/v1/agents', { body: { name: o.name, environment: 'development' } }));

  const { data: destinations } = await unwrap(client.GET('/v1/endpoints/{id}/destinations', { params: { path: { id: endpoint.id } } }));
  const mine = destinations.find((d) => d.destination_type === 'agent' && d.agent_id === agent.id);
  if (!mine) {
    await unwrap(
      client.POST('/v1/destinations', {
        body: {
          name: `${o.name} (127.0.0.1:${o.port})`,
          destination_type: 'agent',
          endpoint_id: endpoint.id,
          agent_id: agent.id,
          target_port: o.port,
          target_path: o.path,
        },
      }),
    );
  } else if (mine.target_port !== o.port || mine.target_path !== o.path || !mine.enabled) {
    await unwrap(
      client.PATCH('/v1/endpoints/{id}/destinations/{destination_id}', {
        params: { path: { id: endpoint.id, destination_id: mine.id } },
        body: { target_port: o.port, target_path: o.path, enabled: true },
      }),
    );
  }

  const line = (text: string) => io.out(text + '\n');
  if (o.json) line(JSON.stringify({ event: 'listening', endpoint_id: endpoint.id, ingest_url: endpoint.ingest_url, target: `http://127.0.0.1:${o.port}${o.path}` }));
  else {
    line(`Webhook URL (paste it into Stripe, GitHub, ...): ${endpoint.ingest_url}`);
    line(`Forwarding to http://127.0.0.1:${o.port}${o.path}   (endpoint ${o.name}; Ctrl-C stops)`);
  }
  // A URL on loopback or a private network looks right and silently never
  // receives anything: say so once, on stderr, with the way out.
  const unreachable = await unreachableReason(endpoint.ingest_url);
  if (unreachable) io.err(unreachableWarning(unreachable) + '\n');
  const output = o.json ? jsonOutput(line) : humanOutput(line, (text) => io.err(text + '\n'));
  const agentClient = new AgentClient({ server: api.c.server, token: agent.token, version: version(), maxBodyBytes: 10 * 1024 * 1024, output });
  return runUntilSignal(agentClient);
}
