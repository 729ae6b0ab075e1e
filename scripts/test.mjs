#!/usr/bin/env node
// `npm test [-- files or folders]`: every test/**/*.test.ts through Node's own
// test runner (Node 20 has no glob support in --test). The database is PGlite
// unless DATABASE_URL is set, in which case every test file gets a fresh
// PostgreSQL database created beside the one named there.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path).sort()) collect(join(path, entry), out);
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
const files = (args.length ? args : ['test']).flatMap((p) => collect(p, []));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const reporter = process.env.TEST_REPORTER ?? 'spec';
// A test that hangs fails after this long instead of holding the whole run
// (and CI's time limit) hostage; the slowest test takes about a minute.
const timeoutMs = Number(process.env.WEIR_TEST_TIMEOUT_MS ?? 600_000);
const res = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-reporter=${reporter}`, '--test-concurrency=1', '--test-force-exit', `--test-timeout=${timeoutMs}`, ...files],
  { stdio: 'inherit', env: process.env },
);
process.exit(res.status ?? 1);
