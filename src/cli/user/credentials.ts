import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Env } from './io.ts';

export interface Credentials {
  server: string;
  key: string;
}

/** Where `weir login` keeps the server and key: $XDG_CONFIG_HOME/weir/credentials.json (~/.config/weir/...), mode 0600. */
export function credentialsPath(env: Env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'weir', 'credentials.json');
}

export function saveCredentials(env: Env, c: Credentials): string {
  const path = credentialsPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, JSON.stringify(c, null, 2) + '\n', { mode: 0o600 });
  // writeFileSync keeps the mode of a file that already existed
  chmodSync(path, 0o600);
  return path;
}

/** WEIR_SERVER and WEIR_API_KEY win over the stored login, each on its own. */
export function loadCredentials(env: Env): Credentials | { missing: string } {
  let stored: Partial<Credentials> = {};
  try {
    stored = JSON.parse(readFileSync(credentialsPath(env), 'utf8')) as Partial<Credentials>;
  } catch {
    // not logged in: the environment may still say everything
  }
  const server = env.WEIR_SERVER || stored.server;
  const key = env.WEIR_API_KEY || stored.key;
  if (!server) return { missing: 'no server: run `weir login --server URL --key KEY` or set WEIR_SERVER' };
  if (!key) return { missing: 'no API key: run `weir login --server URL --key KEY` or set WEIR_API_KEY' };
  return { server: server.replace(/\/+$/, ''), key };
}
