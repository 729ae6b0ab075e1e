import { ConfigError, loadConfig, urlHost } from './config.ts';

// Each command loads only what it runs: `weir admin` is a small HTTP client
// and need not pay for loading the server, the database drivers and Fastify.

const USAGE = `usage: weir <command>
  serve     start a Weir node (API, dashboard and ingest listeners)
  migrate   apply database migrations and exit
  admin     call the operator API (weir admin --help)
  keys create  mint an API key in the local database, no token needed (weir keys --help)
  agent     forward to this machine's loopback ports (weir agent --help)

  login     store a server and API key for the commands below
  endpoints ls | create | pause | resume | rm
  requests  ls <endpoint> | show <id> [--raw] | export <endpoint> [--out FILE] [--since T]
  tail      follow an endpoint's captures live
  replay    forward captured requests again (<id...>, or --failed --endpoint <endpoint> [--since T])
  incidents ls | show <id> | replay <id> --rpm N
  listen    receive webhooks on this machine: weir listen <port> [path]
  (each takes --help and --json)`;

function configOrExit() {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`weir: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

async function serve(): Promise<void> {
  const config = configOrExit();
  const { startWeir } = await import('./server.ts');
  const weir = await startWeir(config, undefined, {
    // Another process owns the folder now: not one more write, and no
    // graceful drain (that would write); the message says what happened.
    onFatal: (msg) => {
      process.stderr.write(`weir: ${msg}. Exiting.\n`);
      process.exit(1);
    },
  });
  const lines = [
    `Weir is running (database: ${weir.db.kind === 'postgres' ? 'PostgreSQL' : `embedded PGlite in ${config.dataDir}`}).`,
    `  API:        ${weir.urls.publicUrl}/v1   (port ${weir.apiPort})`,
    `  Dashboard:  ${weir.urls.publicUrl}/`,
    `  Ingest:     ${weir.urls.ingestUrl}/h/{slug}   (port ${weir.ingestPort})`,
  ];
  if (weir.metricsPort !== undefined) lines.push(`  Metrics:    http://${urlHost(config.host)}:${weir.metricsPort}/metrics   (port ${weir.metricsPort})`);
  else if (config.metrics) lines.push(`  Metrics:    ${weir.urls.publicUrl}/metrics`);
  const lostKeyHint = `${weir.db.kind === 'postgres' ? 'Run' : 'Stop Weir, then run'}: npx weir keys create`;
  if (weir.bootstrap) {
    lines.push(
      '',
      `First start: created organization "${weir.bootstrap.organization.name}" (plan ${weir.bootstrap.organization.plan}) and super_admin ${weir.bootstrap.email}.`,
      `  API key, shown only this once, store it now:`,
      `  ${weir.bootstrap.key}`,
      `  Try: curl -H "Authorization: Bearer ${weir.bootstrap.key}" ${weir.urls.publicUrl}/v1/me`,
      `  Lost it? ${lostKeyHint}`,
    );
  } else {
    // every later start too: the person who lost the first key is the one reading this
    lines.push('', `Sign in to the dashboard with an API key. No key? ${lostKeyHint}`);
  }
  process.stdout.write(lines.join('\n') + '\n');
  const shutdown = (signal: string) => {
    weir.logger.info({ signal }, 'shutting down: draining in-flight requests');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    weir.close().then(
      () => process.exit(0),
      (err) => {
        weir.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

async function migrateOnly(): Promise<void> {
  const config = configOrExit();
  const [{ migrate }, { openDb }] = await Promise.all([import('./db/migrate.ts'), import('./db/open.ts')]);
  const db = await openDb(config, (msg) => process.stderr.write(msg + '\n'));
  try {
    const applied = await migrate(db);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  } finally {
    await db.close();
  }
}

const [command, ...rest] = process.argv.slice(2);
try {
  switch (command) {
    case 'serve':
      await serve();
      break;
    case 'migrate':
      await migrateOnly();
      break;
    case 'admin': {
      const { runAdmin } = await import('./cli/admin.ts');
      process.exitCode = await runAdmin(rest, process.env);
      break;
    }
    case 'keys': {
      const { runKeys } = await import('./cli/keys.ts');
      process.exitCode = await runKeys(rest, process.env, { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) });
      break;
    }
    case 'agent': {
      const { runAgentCommand } = await import('./agents/agent-command.ts');
      process.exitCode = await runAgentCommand(rest, process.env);
      // undici keep-alive sockets and timers must not hold the process open;
      // stdout to a pipe is asynchronous, so let the summary out first
      await new Promise((resolve) => process.stdout.write('', resolve));
      process.exit();
      break;
    }
    case 'login':
    case 'endpoints':
    case 'requests':
    case 'tail':
    case 'replay':
    case 'incidents':
    case 'listen': {
      const { runUserCli } = await import('./cli/user/commands.ts');
      const io = {
        out: (t: string) => void process.stdout.write(t),
        err: (t: string) => void process.stderr.write(t),
        bytes: (b: Buffer) => void process.stdout.write(b),
      };
      process.exitCode = await runUserCli([command, ...rest], process.env, io);
      // let piped stdout drain, then leave even if a keep-alive socket lingers
      await new Promise((resolve) => process.stdout.write('', resolve));
      process.exit();
      break;
    }
    default: {
      // Help that was asked for goes to stdout (`weir --help | less`); a
      // mistake's usage goes to stderr.
      const asked = command === '--help' || command === '-h';
      (asked ? process.stdout : process.stderr).write(USAGE + '\n');
      process.exitCode = command === undefined || asked ? 0 : 2;
    }
  }
} catch (err) {
  process.stderr.write(`weir: ${(err as Error).message}\n`);
  process.exit(1);
}
