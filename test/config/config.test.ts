import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, urlHost } from '../../src/config.ts';
import { cleanEnv, ROOT, runWeirToEnd } from '../helpers/weir-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-config-'));
const goodPlans = join(dir, 'plans.json');
writeFileSync(goodPlans, JSON.stringify({ free: { max_endpoints: 2 } }));
const badPlans = join(dir, 'bad-plans.json');
writeFileSync(badPlans, JSON.stringify({ free: { max_endpoints: 'many' } }));
const notJson = join(dir, 'not-json.json');
writeFileSync(notJson, '{ free: ');
const asn = join(dir, 'asn.csv');
writeFileSync(asn, '1.0.0.0,1.0.0.255,13335,CLOUDFLARENET\n');
const aFile = join(dir, 'a-file');
writeFileSync(aFile, 'x');

// Each bad value, the variable it must name, and (for the spawn test) a word of the reason.
const BAD: [string, Record<string, string>, RegExp][] = [
  ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/weir' }, /postgres:\/\//],
  ['DATABASE_URL', { DATABASE_URL: 'postgres://user:s3cret@[bad' }, /postgres:\/\//],
  ['WEIR_DATA_DIR', { WEIR_DATA_DIR: aFile }, /directory/],
  ['WEIR_HOST', { WEIR_HOST: 'not a host!' }, /IP address or a host name/],
  ['WEIR_API_PORT', { WEIR_API_PORT: 'eighty' }, /port number/],
  ['WEIR_API_PORT', { WEIR_API_PORT: '70000' }, /port number/],
  ['WEIR_INGEST_PORT', { WEIR_INGEST_PORT: '-1' }, /port number/],
  ['WEIR_INGEST_PORT', { WEIR_API_PORT: '9000', WEIR_INGEST_PORT: '9000' }, /must differ/],
  ['WEIR_PUBLIC_URL', { WEIR_PUBLIC_URL: 'example.com' }, /absolute http\(s\) URL/],
  ['WEIR_PUBLIC_URL', { WEIR_PUBLIC_URL: 'ftp://example.com' }, /http\(s\)/],
  ['WEIR_INGEST_URL', { WEIR_INGEST_URL: 'https://example.com/?x=1' }, /without a query/],
  ['WEIR_REGION', { WEIR_REGION: 'EU' }, /lowercase/],
  ['WEIR_REGION', { WEIR_REGION: 'us_east' }, /lowercase/],
  ['WEIR_ADMIN_TOKEN', { WEIR_ADMIN_TOKEN: 'short' }, /at least 16/],
  ['WEIR_ALLOW_PRIVATE_DESTINATIONS', { WEIR_ALLOW_PRIVATE_DESTINATIONS: 'yes' }, /1 or 0/],
  ['WEIR_ASN_DB', { WEIR_ASN_DB: join(dir, 'missing.csv') }, /readable file/],
  ['WEIR_PLANS', { WEIR_PLANS: join(dir, 'missing.json') }, /cannot read/],
  ['WEIR_PLANS', { WEIR_PLANS: badPlans }, /non-negative integer/],
  ['WEIR_PLANS', { WEIR_PLANS: notJson }, /cannot read/],
  ['WEIR_PLANS', { WEIR_PLANS: '{"free": {"max_endpoints": 2}' }, /not valid JSON/],
  ['WEIR_PLANS', { WEIR_PLANS: '{"gold": {}}' }, /unknown plan "gold"/],
  ['WEIR_PLANS', { WEIR_PLANS: '{"free": {"incident_replay": "yes"}}' }, /must be a boolean/],
  ['NODE_EXTRA_CA_CERTS', { NODE_EXTRA_CA_CERTS: join(dir, 'missing.pem') }, /readable file/],
  ['WEIR_MAX_BODY_BYTES', { WEIR_MAX_BODY_BYTES: '0' }, /integer/],
  ['WEIR_TRUSTED_PROXIES', { WEIR_TRUSTED_PROXIES: '10.0.0.0/8, nonsense' }, /IP addresses or CIDR/],
  ['WEIR_TRUSTED_PROXIES', { WEIR_TRUSTED_PROXIES: '10.0.0.0/33' }, /IP addresses or CIDR/],
  ['WEIR_LOG_LEVEL', { WEIR_LOG_LEVEL: 'verbose' }, /one of/],
  ['WEIR_DB_POOL_SIZE', { WEIR_DB_POOL_SIZE: '1.5' }, /integer/],
  ['WEIR_CAPTURE_BATCH_MS', { WEIR_CAPTURE_BATCH_MS: 'soon' }, /integer/],
  ['WEIR_CAPTURE_BATCH_MS', { WEIR_CAPTURE_BATCH_MS: '1001' }, /integer 0-1000/],
  ['WEIR_CAPTURE_BATCH_MS', { WEIR_CAPTURE_BATCH_MS: '-1' }, /integer 0-1000/],
  ['WEIR_PGLITE_FSYNC', { WEIR_PGLITE_FSYNC: 'yes' }, /1 or 0/],
  ['WEIR_DB_MAINTENANCE', { WEIR_DB_MAINTENANCE: 'sometimes' }, /auto, all or off/],
  ['WEIR_FORWARD_THREAD', { WEIR_FORWARD_THREAD: 'yes' }, /auto, on or off/],
  ['WEIR_FORWARD_HANDOFF', { WEIR_FORWARD_HANDOFF: 'off' }, /1 or 0/],
  ['WEIR_METRICS', { WEIR_METRICS: 'off' }, /1 or 0/],
  ['WEIR_METRICS_TOKEN', { WEIR_METRICS_TOKEN: 'short' }, /at least 16/],
  ['WEIR_METRICS_PORT', { WEIR_METRICS_PORT: 'nine' }, /port number 0-65535/],
  ['WEIR_METRICS_PORT', { WEIR_METRICS_PORT: '70000' }, /port number 0-65535/],
  ['WEIR_METRICS_PORT', { WEIR_METRICS_PORT: '9100', WEIR_API_PORT: '9100' }, /must differ from WEIR_API_PORT/],
  ['WEIR_METRICS_PORT', { WEIR_METRICS_PORT: '9100', WEIR_INGEST_PORT: '9100' }, /must differ from WEIR_INGEST_PORT/],
  ['WEIR_METRICS_PORT', { WEIR_METRICS_PORT: '9100', WEIR_METRICS: '0' }, /WEIR_METRICS=0/],
  ['WEIR_SSE_HEARTBEAT_MS', { WEIR_SSE_HEARTBEAT_MS: '10' }, /integer 100-300000/],
  ['WEIR_DELIVERY_HOLD_MB', { WEIR_DELIVERY_HOLD_MB: '1.5' }, /integer 0-65536/],
  ['WEIR_DELIVERY_HOLD_MB', { WEIR_DELIVERY_HOLD_MB: '65537' }, /integer 0-65536/],
];

describe('loadConfig', () => {
  it('has the defaults CONTRACT.md names', () => {
    const c = loadConfig({});
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.dataDir, resolve('./data'));
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.apiPort, 8080);
    assert.equal(c.ingestPort, 8081);
    assert.equal(c.publicUrl, undefined);
    assert.equal(c.ingestUrl, undefined);
    assert.equal(c.region, 'us');
    assert.equal(c.adminToken, undefined);
    assert.equal(c.allowPrivateDestinations, false);
    assert.equal(c.asnDb, undefined);
    assert.equal(c.plans.free.max_endpoints, 10);
    assert.equal(c.bootstrapPlan, 'self_hosted', 'no WEIR_PLANS: the first organization gets every capability');
    assert.equal(c.plans.self_hosted.incident_replay, true);
  });

  it('takes WEIR_PLANS as inline JSON or as a file path, and then starts the first organization on free', () => {
    const inline = loadConfig({ WEIR_PLANS: ' {"free": {"max_endpoints": 3}, "self_hosted": {"max_agents": 5}}' });
    assert.equal(inline.plans.free.max_endpoints, 3);
    assert.equal(inline.plans.self_hosted.max_agents, 5);
    assert.equal(inline.plans.self_hosted.incident_replay, true, 'what is not overridden keeps its default');
    assert.equal(inline.bootstrapPlan, 'free');
    const file = loadConfig({ WEIR_PLANS: goodPlans });
    assert.equal(file.plans.free.max_endpoints, 2);
    assert.equal(file.bootstrapPlan, 'free');
  });

  it('reads every variable CONTRACT.md names', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgresql://u:p@db.internal:5432/weir',
      WEIR_DATA_DIR: dir,
      WEIR_HOST: '::',
      WEIR_API_PORT: '0',
      WEIR_INGEST_PORT: '0',
      WEIR_PUBLIC_URL: 'https://weir.example.com/',
      WEIR_INGEST_URL: 'https://hooks.example.com',
      WEIR_REGION: 'eu',
      WEIR_ADMIN_TOKEN: 'a'.repeat(32),
      WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
      WEIR_ASN_DB: asn,
      WEIR_PLANS: goodPlans,
      NODE_EXTRA_CA_CERTS: aFile,
    });
    assert.equal(c.databaseUrl, 'postgresql://u:p@db.internal:5432/weir');
    assert.equal(c.dataDir, dir);
    assert.equal(c.host, '::');
    assert.deepEqual([c.apiPort, c.ingestPort], [0, 0]);
    assert.equal(c.publicUrl, 'https://weir.example.com');
    assert.equal(c.ingestUrl, 'https://hooks.example.com');
    assert.equal(c.region, 'eu');
    assert.equal(c.adminToken, 'a'.repeat(32));
    assert.equal(c.allowPrivateDestinations, true);
    assert.equal(c.asnDb, asn);
    assert.equal(c.plans.free.max_endpoints, 2);
    assert.equal(c.plans.starter.max_endpoints, 50);
  });

  it('groups captures by turn of the event loop unless WEIR_CAPTURE_BATCH_MS asks for a timer', () => {
    assert.equal(loadConfig({}).captureBatchMs, 0);
    assert.equal(loadConfig({ WEIR_CAPTURE_BATCH_MS: '0' }).captureBatchMs, 0);
    assert.equal(loadConfig({ WEIR_CAPTURE_BATCH_MS: '1000' }).captureBatchMs, 1000);
  });

  it('leaves PGlite without fsync and table maintenance on auto unless asked', () => {
    assert.equal(loadConfig({}).pgliteFsync, false);
    assert.equal(loadConfig({ WEIR_PGLITE_FSYNC: '1' }).pgliteFsync, true);
    assert.equal(loadConfig({}).dbMaintenance, 'auto');
    assert.equal(loadConfig({ WEIR_DB_MAINTENANCE: 'all' }).dbMaintenance, 'all');
    assert.equal(loadConfig({ WEIR_DB_MAINTENANCE: 'off' }).dbMaintenance, 'off');
    assert.equal(loadConfig({}).forwardThread, 'auto');
    assert.equal(loadConfig({ WEIR_FORWARD_THREAD: 'on' }).forwardThread, 'on');
    assert.equal(loadConfig({ WEIR_FORWARD_THREAD: 'off' }).forwardThread, 'off');
    assert.equal(loadConfig({}).forwardHandoff, true);
    assert.equal(loadConfig({ WEIR_FORWARD_HANDOFF: '0' }).forwardHandoff, false);
    assert.equal(loadConfig({ WEIR_FORWARD_HANDOFF: '1' }).forwardHandoff, true);
  });

  it('has metrics on and open, and 15 s live-tail heartbeats, unless asked', () => {
    const c = loadConfig({});
    assert.deepEqual([c.metrics, c.metricsToken, c.sseHeartbeatMs], [true, undefined, 15_000]);
    assert.equal(loadConfig({ WEIR_METRICS: '0' }).metrics, false);
    assert.equal(loadConfig({ WEIR_METRICS_TOKEN: 'metrics-token-0123456789' }).metricsToken, 'metrics-token-0123456789');
    assert.equal(c.metricsPort, undefined, 'on the API listener unless WEIR_METRICS_PORT is set');
    assert.equal(loadConfig({ WEIR_METRICS_PORT: '9100' }).metricsPort, 9100);
    assert.equal(loadConfig({ WEIR_METRICS_PORT: '0' }).metricsPort, 0, '0: a free port');
  });

  it('bounds the bodies claimed ahead of a send slot to 64 MiB unless asked; 0 holds none ahead', () => {
    assert.equal(loadConfig({}).deliveryHoldBytes, 64 * 1024 * 1024);
    assert.equal(loadConfig({ WEIR_DELIVERY_HOLD_MB: '512' }).deliveryHoldBytes, 512 * 1024 * 1024);
    assert.equal(loadConfig({ WEIR_DELIVERY_HOLD_MB: '0' }).deliveryHoldBytes, 0);
  });

  it('treats an empty variable as unset', () => {
    assert.equal(loadConfig({ WEIR_API_PORT: '', WEIR_ADMIN_TOKEN: '' }).apiPort, 8080);
    assert.equal(loadConfig({ WEIR_ADMIN_TOKEN: '' }).adminToken, undefined);
  });

  it('accepts host names and IP addresses for WEIR_HOST and brackets IPv6 in URLs', () => {
    for (const host of ['0.0.0.0', '::1', 'localhost', 'weir-1.internal.example.com']) assert.equal(loadConfig({ WEIR_HOST: host }).host, host);
    assert.equal(urlHost('::1'), '[::1]');
    assert.equal(urlHost('0.0.0.0'), '127.0.0.1');
    assert.equal(urlHost('::'), '[::1]');
  });

  for (const [variable, env, reason] of BAD) {
    it(`refuses ${variable}=${JSON.stringify(Object.values(env).at(-1))}, naming the variable`, () => {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable && err.message.startsWith(`${variable} `) && reason.test(err.message) && !err.message.includes('\n'),
      );
    });
  }

  it('never echoes DATABASE_URL, which may hold a password', () => {
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://user:s3cret@[bad' }), (err: Error) => !err.message.includes('s3cret'));
  });
});

describe('weir serve with a bad value', () => {
  // Several at once: each spawn is a process start.
  it('stops start-up with exit code 2 and one line on stderr naming the variable, for every variable', async () => {
    const results = await Promise.all(
      BAD.map(async ([variable, env, reason]) => ({ variable, reason, env, res: await runWeirToEnd(['serve'], cleanEnv({ WEIR_API_PORT: '0', WEIR_INGEST_PORT: '0', WEIR_DATA_DIR: dir, ...env })) })),
    );
    for (const { variable, reason, env, res } of results) {
      const what = `${variable}=${JSON.stringify(env)}: ${res.stderr}`;
      assert.equal(res.code, 2, what);
      // Node itself warns about a missing NODE_EXTRA_CA_CERTS before any of our code runs (and would go on without it).
      const lines = res.stderr.split('\n').filter((l) => l && !(variable === 'NODE_EXTRA_CA_CERTS' && l.startsWith('Warning: Ignoring extra certs')));
      assert.equal(lines.length, 1, what);
      assert.match(lines[0], new RegExp(`^weir: configuration error: ${variable} `), what);
      assert.match(lines[0], reason, what);
      assert.equal(res.stdout, '', what);
      assert.doesNotMatch(res.stderr, /s3cret/);
    }
  });

  it('also refuses a bad value for `weir migrate`', async () => {
    const res = await runWeirToEnd(['migrate'], cleanEnv({ WEIR_REGION: 'Nope' }));
    assert.equal(res.code, 2);
    assert.match(res.stderr, /^weir: configuration error: WEIR_REGION /);
  });
});

describe('docs/configuration.md', () => {
  it('documents every variable src/config.ts reads, and every one CONTRACT.md names', () => {
    const source = readFileSync(`${ROOT}src/config.ts`, 'utf8');
    const doc = readFileSync(`${ROOT}docs/configuration.md`, 'utf8');
    const read = new Set([...source.matchAll(/'((?:WEIR|DATABASE|NODE)_[A-Z_]+)'/g)].map((m) => m[1]));
    const contract = ['DATABASE_URL', 'WEIR_DATA_DIR', 'WEIR_HOST', 'WEIR_API_PORT', 'WEIR_INGEST_PORT', 'WEIR_PUBLIC_URL', 'WEIR_INGEST_URL', 'WEIR_REGION', 'WEIR_ADMIN_TOKEN', 'WEIR_ALLOW_PRIVATE_DESTINATIONS', 'WEIR_ASN_DB', 'WEIR_PLANS', 'NODE_EXTRA_CA_CERTS'];
    for (const name of contract) assert.ok(read.has(name), `src/config.ts reads ${name}`);
    for (const name of read) assert.match(doc, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${name} has a row in docs/configuration.md`);
  });
});
