import type { DeliverMessage, HelloMessage, ResultMessage } from './protocol.ts';

/**
 * What `weir agent` prints: a banner, one line per forward, reconnect
 * lines and a summary, or with --json one JSON object per line (`event`
 * names the kind) for scripts. Failures go to stderr in human mode.
 */
export interface AgentOutput {
  connected(server: string, hello: HelloMessage, reconnected: boolean): void;
  forward(msg: DeliverMessage, result: ResultMessage): void;
  disconnected(reason: string, retryInMs: number): void;
  failure(reason: string): void;
  summary(stats: { forwards: number; succeeded: number; failed: number; connects: number; startedAt: number }): void;
}

type Write = (line: string) => void;

const time = () => new Date().toISOString().slice(11, 23);

export function humanOutput(out: Write, err: Write): AgentOutput {
  return {
    connected(server, hello, reconnected) {
      if (reconnected) {
        out(`${time()}  reconnected to ${server} (node ${hello.node})`);
        return;
      }
      out(`Weir agent connected to ${server}`);
      out(`  agent:        ${hello.agent_name} (${hello.environment}${hello.environment === 'production' ? ': failures are retried' : ': failures are final, never retried'})`);
      out(`  node:         ${hello.node}`);
      if (hello.targets.length === 0) out('  targets:      none yet: assign this agent to an endpoint destination');
      for (const t of hello.targets) {
        out(`  target:       ${t.endpoint} / ${t.destination} -> http://127.0.0.1:${t.port}${t.path}${t.environment !== hello.environment ? ` (${t.environment})` : ''}`);
      }
      out('Forwarding. Ctrl-C to stop.');
    },
    forward(msg, r) {
      const status = r.status_code !== undefined ? String(r.status_code) : `${r.error_class}${r.error_message ? ` (${r.error_message})` : ''}`;
      out(`${time()}  ${msg.method.padEnd(6)} ${msg.path}  -> ${status}  ${r.duration_ms} ms${msg.attempt > 1 ? `  (attempt ${msg.attempt})` : ''}`);
    },
    disconnected(reason, retryInMs) {
      err(`${time()}  ${reason}; reconnecting in ${(retryInMs / 1000).toFixed(1)} s`);
    },
    failure(reason) {
      err(`weir agent: ${reason}`);
    },
    summary(s) {
      const secs = Math.round((Date.now() - s.startedAt) / 1000);
      out(`Stopped after ${secs} s: ${s.forwards} forwards (${s.succeeded} succeeded, ${s.failed} failed), ${s.connects} connection${s.connects === 1 ? '' : 's'}.`);
    },
  };
}

export function jsonOutput(out: Write): AgentOutput {
  const emit = (o: object) => out(JSON.stringify({ time: new Date().toISOString(), ...o }));
  return {
    connected(server, hello, reconnected) {
      emit({ event: reconnected ? 'reconnected' : 'connected', server, agent_id: hello.agent_id, agent_name: hello.agent_name, environment: hello.environment, node: hello.node, targets: hello.targets });
    },
    forward(msg, r) {
      emit({
        event: 'forward',
        delivery_id: msg.id,
        request_id: msg.request_id,
        webhook_id: msg.webhook_id,
        attempt: msg.attempt,
        method: msg.method,
        port: msg.port,
        path: msg.path,
        status: r.status_code ?? null,
        error_class: r.error_class ?? null,
        error: r.error_message ?? null,
        duration_ms: r.duration_ms,
      });
    },
    disconnected(reason, retryInMs) {
      emit({ event: 'disconnected', reason, retry_in_ms: retryInMs });
    },
    failure(reason) {
      emit({ event: 'fatal', reason });
    },
    summary(s) {
      emit({ event: 'summary', forwards: s.forwards, succeeded: s.succeeded, failed: s.failed, connects: s.connects, uptime_s: Math.round((Date.now() - s.startedAt) / 1000) });
    },
  };
}
