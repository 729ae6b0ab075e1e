import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';

/**
 * `weir keys create`: mints an API key straight in the database, for the
 * operator of a local install who has no key (lost the one printed on first
 * start) and no operator token. Whoever can read the data directory (or holds
 * DATABASE_URL) already owns everything in it, so no other credential is
 * asked for. The key is printed once and stored only as a hash.
 */
const USAGE = `usage: weir keys create [--org ORG_ID] [--member MEMBER_ID|EMAIL] [--name NAME] [--json]
  Mints a full-access API key in the database Weir uses (WEIR_DATA_DIR, or
  DATABASE_URL) and prints it once. By default the key belongs to the first
  active super_admin of the first organization.
  --org     the organization (default: the first one created)
  --member  the member, by id or email (default: its first active super_admin)
  --name    the key's name (default: "cli")
  --json    print {"key", "id", "organization_id", "member_id", "email", "name"}
  With the embedded database (PGlite), stop \`weir serve\` first: one process
  at a time may open the data directory. While it runs, create a key in the
  dashboard (API keys) or with POST /v1/api-keys.`;

const OPTIONS = {
  org: { type: 'string' },
  member: { type: 'string' },
  name: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

export async function runKeys(argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let values: { org?: string; member?: string; name?: string; json?: boolean; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS }));
  } catch (err) {
    io.err(`weir keys: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    io.out(USAGE + '\n');
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'create') {
    io.err(USAGE + '\n');
    return 2;
  }
  if (values.org !== undefined && !UUID.test(values.org)) {
    io.err(`weir keys: --org must be an organization id (a UUID), got "${values.org}"\n`);
    return 2;
  }
  const name = values.name ?? 'cli';
  if (name.trim() === '' || name.length > 200) {
    io.err('weir keys: --name must be 1-200 characters\n');
    return 2;
  }

  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`weir keys: configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  // an empty or missing folder is not a Weir install: say so instead of creating a database in it
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'PG_VERSION'))) {
    io.err(
      `weir keys: no Weir database in WEIR_DATA_DIR ${config.dataDir}. Run this where \`weir serve\` runs, with the same WEIR_DATA_DIR ` +
        `(or DATABASE_URL); on a first start \`weir serve\` creates the organization and prints its first key.\n`,
    );
    return 1;
  }

  const [{ openDb }, { DataDirLockedError }, { migrate }] = await Promise.all([
    import('../db/open.ts'),
    import('../db/data-dir-lock.ts'),
    import('../db/migrate.ts'),
  ]);
  let db;
  try {
    db = await openDb(config, () => {});
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      io.err(
        `weir keys: the embedded database in ${config.dataDir} is open in a running Weir (pid ${err.owner.pid}), and one process at a time may open it.\n` +
          `  Either stop that Weir (Ctrl-C or kill ${err.owner.pid}), run \`weir keys create\` again, then start it again;\n` +
          `  or, with a key that still works, create one in the dashboard (API keys) or with POST /v1/api-keys.\n`,
      );
      return 1;
    }
    throw err;
  }
  try {
    // the same schema `weir serve` would have (a data directory of an older version)
    await migrate(db);
    const { rows: orgs } = await db.query<{ id: string; name: string }>(
      values.org ? 'select id, name from organizations where id = $1::uuid' : 'select id, name from organizations order by created_at, id limit 1',
      values.org ? [values.org] : [],
    );
    const org = orgs[0];
    if (!org) {
      io.err(values.org ? `weir keys: no organization ${values.org}\n` : 'weir keys: the database has no organization yet: start `weir serve` once, it creates one and prints its first key\n');
      return 1;
    }
    const who = values.member;
    const { rows: members } = await db.query<{ id: string; email: string; role: string; active: boolean }>(
      who === undefined
        ? `select id, email, role, active from members where organization_id = $1::uuid and role = 'super_admin' and active order by created_at, id limit 1`
        : UUID.test(who)
          ? 'select id, email, role, active from members where organization_id = $1::uuid and id = $2::uuid'
          : 'select id, email, role, active from members where organization_id = $1::uuid and lower(email) = lower($2)',
      who === undefined ? [org.id] : [org.id, who],
    );
    const member = members[0];
    if (!member) {
      io.err(
        who === undefined
          ? `weir keys: organization "${org.name}" (${org.id}) has no active super_admin; pass --member <id or email>\n`
          : `weir keys: no member "${who}" in organization "${org.name}" (${org.id})\n`,
      );
      return 1;
    }
    const { createApiKey } = await import('../auth/api-keys.ts');
    const made = await createApiKey(db, { memberId: member.id, name, accessMode: 'full', scopes: [] }, { type: 'system' }, { organizationId: org.id });
    if (!made.ok) {
      io.err(`weir keys: ${made.reason === 'member_not_found' ? `no member ${member.id}` : made.message}\n`);
      return 1;
    }
    if (values.json) {
      io.out(JSON.stringify({ key: made.key, id: made.apiKey.id, organization_id: org.id, member_id: member.id, email: member.email, name }) + '\n');
    } else {
      io.out(
        [
          `Created API key "${name}" (full access) for ${member.email} (${member.role}) in organization "${org.name}".`,
          'The key, shown only this once, store it now:',
          `  ${made.key}`,
          'Sign in to the dashboard with it, or: curl -H "Authorization: Bearer <key>" <server>/v1/me',
        ].join('\n') + '\n',
      );
    }
    return 0;
  } finally {
    await db.close();
  }
}
