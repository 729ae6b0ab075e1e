/**
 * The test runner (scripts/test.mjs) and its ledger (scripts/test-ledger.mjs):
 * a test that never reports a result fails the run instead of vanishing from
 * the count, and a file that holds its process open fails after the time limit
 * instead of hanging the run. Runs the real runner on the files in ./fixtures.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ledger from '../../scripts/test-ledger.mjs';

const root = join(import.meta.dirname, '..', '..');
const fixture = (name: string) => join('test', 'scripts', 'fixtures', name);

function runRunner(files: string[], timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The runner under test must not think it is a child of this one.
  const env: NodeJS.ProcessEnv = { ...process.env, TEST_REPORTER: 'spec', WEIR_TEST_TIMEOUT_MS: String(timeoutMs) };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['scripts/test.mjs', ...files], { cwd: root, env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c));
  child.stderr.on('data', (c: Buffer) => (stderr += c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

async function* events(list: { type: string; data: Record<string, unknown> }[]) {
  yield* list;
}

async function ledgerOf(list: { type: string; data: Record<string, unknown> }[]) {
  let out = '';
  for await (const chunk of ledger(events(list))) out += chunk;
  return JSON.parse(out).files as Record<string, { queued: number; reported: number; failed: number; seconds: number; missing: string[] }>;
}

describe('the test runner', () => {
  it('passes a file whose every test reports, and counts them in its ledger', async () => {
    const r = await runRunner([fixture('passes.test.ts')]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /test ledger: 1 files, 3 tests and suites queued, 3 reported/);
  });

  it('fails the run when a file quits with code 0 halfway, which Node\'s runner alone reports as green', async () => {
    const r = await runRunner([fixture('quits-early.test.ts'), fixture('passes.test.ts')]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /tests were queued but never reported a result/);
    assert.match(r.stderr, /quits-early\.test\.ts: \d+ queued, 1 reported/);
    assert.match(r.stderr, /waits, then passes/);
    assert.doesNotMatch(r.stderr, /passes\.test\.ts: /, 'the complete file is not named');
    assert.match(r.stdout, /✔ two/, 'the next file still runs');
  });

  it('fails a file that leaves a handle open once the time limit passes, and runs the files after it', async () => {
    const r = await runRunner([fixture('holds-a-handle.test.ts'), fixture('passes.test.ts')], 3_000);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /holds-a-handle\.test\.ts[\s\S]*test timed out after 3000ms/);
    assert.match(r.stdout, /✔ two/);
  });

  it('does not walk into a folder named fixtures, but runs a file there when it is named', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-runner-'));
    try {
      mkdirSync(join(dir, 'fixtures'));
      writeFileSync(join(dir, 'fine.test.ts'), "import { test } from 'node:test';\ntest('fine', () => {});\n");
      writeFileSync(join(dir, 'fixtures', 'fails.test.ts'), "import { test } from 'node:test';\ntest('fails', () => { throw new Error('ran'); });\n");
      const walked = await runRunner([dir]);
      assert.equal(walked.code, 0, walked.stdout + walked.stderr);
      assert.match(walked.stdout, /test ledger: 1 files, 1 tests and suites queued, 1 reported/);
      const named = await runRunner([join(dir, 'fixtures', 'fails.test.ts')]);
      assert.equal(named.code, 1, named.stdout + named.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the test ledger', () => {
  const file = '/p/a.test.ts';
  const ev = (type: string, name: string, nesting: number, f = file) => ({ type, data: { file: f, name, nesting } });

  it('matches results to queued tests by name and depth, counting tests of the same name apart', async () => {
    const files = await ledgerOf([
      ev('test:enqueue', file, 0),
      ev('test:enqueue', 'suite', 0),
      ev('test:enqueue', 'same', 1),
      ev('test:enqueue', 'same', 1),
      ev('test:pass', 'same', 1),
      ev('test:fail', 'suite', 0),
    ]);
    assert.deepEqual(files[file], { queued: 3, reported: 2, failed: 1, seconds: files[file].seconds, missing: ['  same'] });
  });

  it('does not count the file\'s own entry, which Node reports only when the file fails as a whole', async () => {
    const files = await ledgerOf([ev('test:enqueue', file, 0), ev('test:enqueue', 't', 0), ev('test:pass', 't', 0), ev('test:fail', file, 0)]);
    assert.equal(files[file].queued, 1);
    assert.equal(files[file].reported, 1);
    assert.equal(files[file].failed, 1);
    assert.deepEqual(files[file].missing, []);
  });

  it('keeps files apart and ignores events without a file', async () => {
    const files = await ledgerOf([ev('test:enqueue', 't', 0), ev('test:enqueue', 't', 0, '/p/b.test.ts'), ev('test:pass', 't', 0, '/p/b.test.ts'), { type: 'test:diagnostic', data: { message: 'x' } }]);
    assert.deepEqual(Object.keys(files).sort(), [file, '/p/b.test.ts']);
    assert.deepEqual(files[file].missing, ['t']);
    assert.deepEqual(files['/p/b.test.ts'].missing, []);
  });
});
