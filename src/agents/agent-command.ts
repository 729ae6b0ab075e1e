import { readFileSync } from 'node:fs';
import { DEFAULT_AGENT_MAX_BODY_BYTES } from './protocol.ts';
import { AgentClient } from './client.ts';
import { humanOutput, jsonOutput } from './output.ts';

const USAGE = `usage: weir agent --server <base_url> --token <token> [--json]
  --server   the Weir base URL, e.g. https://weir.example.com (or WEIR_AGENT_SERVER)
  --token    the agent's token, wr_agent_... (or WEIR_AGENT_TOKEN, which keeps it out of ps)
  --json     one JSON object per line instead of the human-readable output
Forwards what Weir hands this agent to 127.0.0.1:{port}{path} on this machine.
Exit codes: 0 stopped by Ctrl-C/SIGTERM, 1 token refused, 2 bad usage.`;


/** This package's version, which the agent reports to the server. */
export function version(): string {
  try {
    return String(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  } catch {
    return 'unknown';
  }
}

/** `weir agent ...`; resolves with the process exit code. */
export async function runAgentCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  let server = env.WEIR_AGENT_SERVER;
  let token = env.WEIR_AGENT_TOKEN;
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => inline ?? args[++i];
    if (flag === '--server') server = value();
    else if (flag === '--token') token = value();
    else if (flag === '--json') json = true;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(USAGE + '\n');
      return 0;
    } else {
      process.stderr.write(`weir agent: unknown option ${a}\n${USAGE}\n`);
      return 2;
    }
  }
  const problem = !server
    ? 'missing --server'
    : !URL.canParse(server) || !/^https?:$/.test(new URL(server).protocol)
      ? `--server must be an http:// or https:// URL, got "${server}"`
      : !token
        ? 'missing --token'
        : undefined;
  if (problem) {
    process.stderr.write(`weir agent: ${problem}\n${USAGE}\n`);
    return 2;
  }
  const maxBody = env.WEIR_MAX_BODY_BYTES && /^\d+$/.test(env.WEIR_MAX_BODY_BYTES) ? Number(env.WEIR_MAX_BODY_BYTES) : DEFAULT_AGENT_MAX_BODY_BYTES;
  const write = (stream: NodeJS.WriteStream) => (line: string) => void stream.write(line + '\n');
  const output = json ? jsonOutput(write(process.stdout)) : humanOutput(write(process.stdout), write(process.stderr));
  const client = new AgentClient({ server: server!.replace(/\/+$/, ''), token: token!, version: version(), maxBodyBytes: maxBody, output });
  return runUntilSignal(client);
}

/** Runs the agent until Ctrl-C or SIGTERM (or a refused token); resolves with its exit code. */
export async function runUntilSignal(client: AgentClient): Promise<number> {
  const stop = () => void client.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await client.run();
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
