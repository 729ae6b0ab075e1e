#!/usr/bin/env node
// `npm test [-- files or folders]`: every test/**/*.test.ts through Node's own
// test runner (Node 20 has no glob support in --test). The database is PGlite
// unless DATABASE_URL is set, in which case every test file gets a fresh
// PostgreSQL database created beside the one named there.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Folders named `fixtures` hold test files that other tests run on purpose
// (test/scripts/fixtures: files that hang or quit early); only an explicit
// path runs them.
function collect(path, out, top = true) {
  if (statSync(path).isDirectory()) {
    if (!top && path.endsWith('/fixtures')) return out;
    for (const entry of readdirSync(path).sort()) collect(join(path, entry), out, false);
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
// (and CI's time limit) hostage; the slowest test takes about a minute. The
// same limit applies to each file as a whole, so a file that leaves a handle
// open (a server, a timer) fails after it too, rather than hanging the run.
//
// No --test-force-exit: under Node 20 it can end the runner before its
// reporters drain, and the tests still queued vanish from the count with the
// run reported green (README, Tests and CI).
const timeoutMs = Number(process.env.WEIR_TEST_TIMEOUT_MS ?? 600_000);
const ledgerDir = mkdtempSync(join(tmpdir(), 'weir-test-ledger-'));
const ledgerFile = join(ledgerDir, 'ledger.json');
const res = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-reporter=${reporter}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${fileURLToPath(new URL('./test-ledger.mjs', import.meta.url))}`,
    `--test-reporter-destination=${ledgerFile}`,
    '--test-concurrency=1',
    `--test-timeout=${timeoutMs}`,
    ...files,
  ],
  { stdio: 'inherit', env: process.env },
);
const complaint = checkLedger();
rmSync(ledgerDir, { recursive: true, force: true });
if (complaint) {
  console.error(complaint);
  process.exit(1);
}
process.exit(res.status ?? 1);

/** Every queued test reported a result, in every file: otherwise what went missing. */
function checkLedger() {
  let ledger;
  try {
    ledger = JSON.parse(readFileSync(ledgerFile, 'utf8'));
  } catch {
    return 'test ledger: the runner ended without writing its ledger, so some results may never have been reported';
  }
  const entries = Object.entries(ledger.files);
  const short = entries.filter(([, e]) => e.reported < e.queued);
  const queued = entries.reduce((n, [, e]) => n + e.queued, 0);
  const reported = entries.reduce((n, [, e]) => n + e.reported, 0);
  const slowest = entries
    .sort((a, b) => b[1].seconds - a[1].seconds)
    .slice(0, 3)
    .map(([file, e]) => `${file.replace(process.cwd() + '/', '')} ${e.seconds} s`);
  console.log(`test ledger: ${entries.length} files, ${queued} tests and suites queued, ${reported} reported; slowest files: ${slowest.join(', ')} (limit ${timeoutMs / 1000} s each)`);
  if (entries.length < files.length) {
    const seen = new Set(entries.map(([file]) => file));
    const absent = files.map((f) => join(process.cwd(), f)).filter((f) => !seen.has(f));
    return `test ledger: ${absent.length} of ${files.length} files reported nothing:\n  ${absent.join('\n  ')}`;
  }
  if (short.length === 0) return undefined;
  const lines = short.map(([file, e]) => `  ${file}: ${e.queued} queued, ${e.reported} reported${e.missing.length ? '; never reported:\n      ' + e.missing.join('\n      ') : ''}`);
  return `test ledger: tests were queued but never reported a result (a run cut short counts as a failure):\n${lines.join('\n')}`;
}
