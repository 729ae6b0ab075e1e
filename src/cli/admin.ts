import { parseArgs } from 'node:util';

/**
 * `weir admin <resource> <action> [args]`: a thin client of the operator API.
 * Prints the JSON answer (--json is accepted and changes nothing); an error
 * answer also gets one line on stderr, and exit code 1.
 */
const USAGE = `usage: weir admin <command> [options]   (--server URL, --token T or WEIR_ADMIN_TOKEN)
  org create --name NAME [--plan free|starter|pro|business|self_hosted] [--region R]
  org list
  org get ORG_ID
  org set-plan ORG_ID --plan PLAN
  org audit-log ORG_ID
  member add ORG_ID --email EMAIL --role super_admin|admin|developer|viewer [--password P]
  member list ORG_ID
  member update MEMBER_ID [--role ROLE] [--active true|false]
  key create MEMBER_ID --name NAME [--scopes s1,s2] [--expires-at ISO8601]
  key list MEMBER_ID
  key revoke KEY_ID
  agent enroll ORG_ID --name NAME [--environment production|development]`;

function parseActive(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === 'true' || v === 'false') return v === 'true';
  throw new Error(`--active must be true or false, got "${v}"`);
}

interface Call {
  method: string;
  path: string;
  body?: Record<string, unknown>;
}

function plan(positionals: string[], v: Record<string, string | undefined>): Call | string {
  const [resource, action, id] = positionals;
  const need = (x: string | undefined, what: string) => {
    if (!x) throw new Error(`missing ${what}`);
    return encodeURIComponent(x);
  };
  const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, x]) => x !== undefined));
  switch (`${resource} ${action}`) {
    case 'org create':
      return { method: 'POST', path: '/organizations', body: defined({ name: v.name, plan: v.plan, region: v.region }) };
    case 'org list':
      return { method: 'GET', path: '/organizations' };
    case 'org get':
      return { method: 'GET', path: `/organizations/${need(id, 'ORG_ID')}` };
    case 'org set-plan':
      return { method: 'PATCH', path: `/organizations/${need(id, 'ORG_ID')}`, body: { plan: need(v.plan, '--plan') } };
    case 'org audit-log':
      return { method: 'GET', path: `/organizations/${need(id, 'ORG_ID')}/audit-log` };
    case 'member add':
      return { method: 'POST', path: `/organizations/${need(id, 'ORG_ID')}/members`, body: defined({ email: v.email, role: v.role, password: v.password }) };
    case 'member list':
      return { method: 'GET', path: `/organizations/${need(id, 'ORG_ID')}/members` };
    case 'member update':
      return {
        method: 'PATCH',
        path: `/members/${need(id, 'MEMBER_ID')}`,
        body: defined({ role: v.role, active: parseActive(v.active) }),
      };
    case 'key create': {
      const scopes = v.scopes?.split(',').map((s) => s.trim()).filter(Boolean);
      return {
        method: 'POST',
        path: `/members/${need(id, 'MEMBER_ID')}/api-keys`,
        body: defined({ name: v.name, access_mode: scopes ? 'custom' : undefined, scopes, expires_at: v['expires-at'] }),
      };
    }
    case 'key list':
      return { method: 'GET', path: `/members/${need(id, 'MEMBER_ID')}/api-keys` };
    case 'key revoke':
      return { method: 'DELETE', path: `/api-keys/${need(id, 'KEY_ID')}` };
    case 'agent enroll':
      return { method: 'POST', path: `/organizations/${need(id, 'ORG_ID')}/agents`, body: defined({ name: v.name, environment: v.environment }) };
    default:
      return USAGE;
  }
}

const OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  name: { type: 'string' },
  plan: { type: 'string' },
  region: { type: 'string' },
  email: { type: 'string' },
  role: { type: 'string' },
  password: { type: 'string' },
  active: { type: 'string' },
  scopes: { type: 'string' },
  'expires-at': { type: 'string' },
  environment: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  // the answer is always printed as JSON; accepted so that every command takes --json
  json: { type: 'boolean' },
} as const;

const parseCommandLine = (argv: string[]) => parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });

export async function runAdmin(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let values: ReturnType<typeof parseCommandLine>['values'];
  let call: Call | string;
  try {
    const parsed = parseCommandLine(argv);
    values = parsed.values;
    call = values.help ? USAGE : plan(parsed.positionals, values as Record<string, string | undefined>);
  } catch (err) {
    process.stderr.write(`weir admin: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (typeof call === 'string') {
    process.stderr.write(call + '\n');
    return values.help ? 0 : 2;
  }
  const server = (values.server ?? env.WEIR_PUBLIC_URL ?? `http://127.0.0.1:${env.WEIR_API_PORT ?? 8080}`).replace(/\/+$/, '');
  const token = values.token ?? env.WEIR_ADMIN_TOKEN;
  if (!token) {
    process.stderr.write('weir admin: set WEIR_ADMIN_TOKEN or pass --token\n');
    return 2;
  }
  let res: Response;
  try {
    res = await fetch(`${server}/admin/v1${call.path}`, {
      method: call.method,
      headers: { authorization: `Bearer ${token}`, ...(call.body ? { 'content-type': 'application/json' } : {}) },
      body: call.body ? JSON.stringify(call.body) : undefined,
    });
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    process.stderr.write(`weir admin: cannot reach ${server}: ${cause}\n`);
    return 1;
  }
  const text = await res.text();
  process.stdout.write((text || `${res.status}`) + '\n');
  if (!res.ok) {
    // the JSON answer stays on stdout for scripts; people get one line on stderr
    let error: { code?: string; message?: string } | undefined;
    try {
      error = JSON.parse(text).error;
    } catch {
      // not JSON: the status alone
    }
    process.stderr.write(`weir admin: ${error?.message ?? `${call.method} ${call.path} answered ${res.status}`} (${error?.code ?? 'error'}, HTTP ${res.status})\n`);
  }
  return res.ok ? 0 : 1;
}
