import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../../src/db/data-dir-lock.ts';
import { psProcessInfo, systemProbe, type ProcessProbe } from '../../src/db/process-identity.ts';
import { DataDirLockLostError, openDb } from '../../src/db/open.ts';
import { testConfig } from '../helpers/app.ts';
import { http, startWeirProcess } from '../helpers/weir-process.ts';

// The lock is about the embedded database's folder: these tests give Weir a
// WEIR_DATA_DIR and no DATABASE_URL, so they test the same thing whichever
// database the suite runs on.

const dirs: string[] = [];
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function freshDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'weir-lock-'));
  dirs.push(d);
  return d;
}

/** A live process that has nothing to do with Weir. */
async function unrelatedProcess(): Promise<number> {
  const c = spawn('sleep', ['600'], { stdio: 'ignore' });
  children.push(c);
  await new Promise((resolve, reject) => c.once('spawn', resolve).once('error', reject));
  return c.pid!;
}

function writeLock(dir: string, content: string, ageMs = 0): void {
  const path = join(dir, LOCK_FILE);
  writeFileSync(path, content);
  const t = new Date(Date.now() - ageMs);
  utimesSync(path, t, t);
}

/** The record a Weir with that pid would have written: the process's real identity. */
function recordOf(pid: number, probe: ProcessProbe = systemProbe, extra: object = {}): string {
  const info = probe.processInfo(pid);
  assert.ok(info && info !== 'unknown', `pid ${pid} is identifiable`);
  return JSON.stringify({ pid, host: hostname(), boot_id: probe.bootId(), start: info.start, command: info.command, ...extra });
}

function owner(dir: string): { pid: number } {
  return JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'));
}

describe('data-directory lock', () => {
  const staleLocks: Array<[string, (pid: number) => { content: string; ageMs?: number }, RegExp]> = [
    [
      'a record whose pid is now an unrelated live process (pid reused: another start time)',
      (pid) => ({ content: JSON.stringify({ pid, host: hostname(), boot_id: systemProbe.bootId(), start: '1', command: 'node bin/weir.mjs serve' }) }),
      /is now another process/,
    ],
    [
      'a pid-only lock (the old format) whose pid belongs to a process started after it was written, as after a reboot',
      (pid) => ({ content: String(pid), ageMs: 3600_000 }),
      /started after the lock was written/,
    ],
    [
      'a record written before the machine last booted, even if its pid and start time match a live process',
      (pid) => ({ content: recordOf(pid, systemProbe, { boot_id: 'a-previous-boot' }) }),
      /before the machine last booted/,
    ],
  ];
  for (const [what, lockOf, why] of staleLocks) {
    it(`takes over ${what}`, async () => {
      const dir = freshDir();
      const { content, ageMs } = lockOf(await unrelatedProcess());
      writeLock(dir, content, ageMs);
      const taken: string[] = [];
      const lock = await lockDataDir(dir, { waitMs: 0, onTakeover: (m) => taken.push(m) });
      assert.equal(owner(dir).pid, process.pid);
      assert.match(taken.join(), why);
      lock.release();
      assert.equal(existsSync(join(dir, LOCK_FILE)), false, 'released: the file is gone');
    });
  }

  it('refuses while the owner lives, naming its pid and command line and saying how to recover', async () => {
    const dir = freshDir();
    const pid = await unrelatedProcess();
    writeLock(dir, recordOf(pid));
    await assert.rejects(lockDataDir(dir, { waitMs: 0 }), (err: Error) => {
      assert.ok(err instanceof DataDirLockedError);
      assert.match(err.message, new RegExp(`in use by another Weir process: pid ${pid} \\(sleep 600\\)`));
      assert.ok(err.message.includes(`delete ${join(dir, LOCK_FILE)} and start again`), err.message);
      return true;
    });
    assert.equal(owner(dir).pid, pid, 'the live owner’s record is left alone');
  });

  it('waits for an owner that is exiting, and takes over once it is gone', async () => {
    const dir = freshDir();
    const pid = await unrelatedProcess();
    writeLock(dir, recordOf(pid));
    const locking = lockDataDir(dir, { waitMs: 60_000 });
    process.kill(pid, 'SIGKILL');
    const lock = await locking;
    assert.equal(owner(dir).pid, process.pid);
    lock.release();
  });

  it('judges a record of another host by its heartbeat', async () => {
    const dir = freshDir();
    writeLock(dir, JSON.stringify({ pid: 1, host: 'elsewhere', boot_id: 'x', start: '1', command: 'weir serve' }));
    await assert.rejects(lockDataDir(dir, { waitMs: 0 }), /pid 1 on host elsewhere \(weir serve\)/);
    writeLock(dir, JSON.stringify({ pid: 1, host: 'elsewhere', boot_id: 'x', start: '1', command: 'weir serve' }), 120_000);
    const lock = await lockDataDir(dir, { waitMs: 0 });
    assert.equal(owner(dir).pid, process.pid);
    lock.release();
  });

  it('a released lock leaves a successor’s record alone', async () => {
    const dir = freshDir();
    const lock = await lockDataDir(dir, { waitMs: 0 });
    writeLock(dir, JSON.stringify({ pid: 1, host: 'successor' }));
    lock.release();
    assert.equal(owner(dir).pid, 1);
  });

  const hasPs = existsSync('/bin/ps') || existsSync('/usr/bin/ps');
  it('identifies processes through ps (the macOS way) too', { skip: !hasPs && 'no ps' }, async () => {
    const probe: ProcessProbe = { bootId: () => null, processInfo: psProcessInfo };
    const pid = await unrelatedProcess();
    const info = psProcessInfo(pid);
    assert.ok(info);
    assert.equal(info.command, 'sleep 600');
    assert.equal(info.zombie, false);
    assert.ok(Math.abs(info.startedAtMs - Date.now()) < 3600_000, `start time ${new Date(info.startedAtMs).toISOString()} parsed`);
    const dir = freshDir();
    writeLock(dir, recordOf(pid, probe));
    await assert.rejects(lockDataDir(dir, { waitMs: 0, probe }), new RegExp(`pid ${pid} \\(sleep 600\\)`));
    writeLock(dir, JSON.stringify({ pid, host: hostname(), start: 'Mon Jan  1 00:00:00 2001' }));
    const lock = await lockDataDir(dir, { waitMs: 0, probe });
    assert.equal(owner(dir).pid, process.pid);
    lock.release();
  });

  it('weir serve starts on a folder whose lock holds a live unrelated pid, and a second weir serve on it refuses', { timeout: 120_000 }, async (t) => {
    const dir = freshDir();
    const pid = await unrelatedProcess();
    // what a SIGKILLed Weir leaves behind once its pid was handed to another process
    writeLock(dir, JSON.stringify({ pid, host: hostname(), boot_id: systemProbe.bootId(), start: '1', command: 'node bin/weir.mjs serve' }));
    const weir = await startWeirProcess({ WEIR_DATA_DIR: dir });
    t.after(() => weir.stop('SIGKILL'));
    assert.equal((await http(weir.base, 'GET', '/v1/me', { token: weir.bootstrapKey })).status, 200);
    assert.equal(owner(dir).pid, weir.child.pid);
    await assert.rejects(
      startWeirProcess({ WEIR_DATA_DIR: dir }),
      new RegExp(`in use by another Weir process: pid ${weir.child.pid} \\([^)]*bin/weir\\.mjs serve\\)[^]*delete ${join(dir, LOCK_FILE)}`),
    );
  });

  describe('losing the lock while running', () => {
    const deadline = async (what: string, ok: () => boolean, ms = 20_000) => {
      const end = Date.now() + ms;
      while (!ok()) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };

    it('tells onLost once when another process writes its record, and leaves that record alone on release', async () => {
      const dir = freshDir();
      const lost: string[] = [];
      const lock = await lockDataDir(dir, { heartbeatMs: 10, onLost: (m) => lost.push(m) });
      const pid = await unrelatedProcess();
      const theirs = recordOf(pid);
      writeLock(dir, theirs);
      await deadline('onLost', () => lost.length > 0);
      assert.equal(lock.lost, true);
      assert.match(lost[0], new RegExp(`lost the lock of WEIR_DATA_DIR ${dir}: the lock file .* now names another process \\(pid ${pid}\\); this process stops writing`));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(lost.length, 1);
      lock.release();
      assert.equal(readFileSync(join(dir, LOCK_FILE), 'utf8'), theirs);
    });

    it('writes its record again when the lock file is deleted, and keeps the folder', async () => {
      const dir = freshDir();
      const lost: string[] = [];
      const restored: string[] = [];
      const lock = await lockDataDir(dir, { heartbeatMs: 10, onLost: (m) => lost.push(m), onRestored: (m) => restored.push(m) });
      rmSync(join(dir, LOCK_FILE));
      await deadline('the record written again', () => existsSync(join(dir, LOCK_FILE)));
      assert.equal(owner(dir).pid, process.pid);
      assert.match(restored[0], /was deleted; wrote this process's record again/);
      assert.equal(lock.lost, false);
      assert.deepEqual(lost, []);
      lock.release();
      assert.equal(existsSync(join(dir, LOCK_FILE)), false);
    });

    it('a database whose folder was taken over refuses every statement, in a transaction too', async () => {
      const dir = freshDir();
      const lost: string[] = [];
      const db = await openDb({ ...testConfig(), databaseUrl: undefined, dataDir: dir }, () => {}, { lockHeartbeatMs: 10, onLockLost: (m) => lost.push(m) });
      await db.exec('create table t (n int)');
      let inTx: Promise<unknown> | undefined;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const tx = db.transaction(async (q) => {
        await q.query('insert into t values (1)');
        await held;
        inTx = q.query('insert into t values (2)');
        await inTx;
      });
      writeLock(dir, recordOf(await unrelatedProcess()));
      await deadline('the lock lost', () => lost.length > 0);
      release();
      await assert.rejects(tx, DataDirLockLostError);
      await assert.rejects(inTx!, DataDirLockLostError);
      await assert.rejects(db.query('select 1'), DataDirLockLostError);
      await assert.rejects(db.exec('insert into t values (3)'), DataDirLockLostError);
      await assert.rejects(db.session((c) => c.query('select 1')), DataDirLockLostError);
      await db.close();
    });

    it('weir serve whose folder is taken over exits with status 1 and says why', { timeout: 300_000 }, async (t) => {
      const dir = freshDir();
      const weir = await startWeirProcess({ WEIR_DATA_DIR: dir }, 180_000);
      t.after(() => weir.stop('SIGKILL'));
      // what a second process that judged this one stale would write
      writeLock(dir, recordOf(await unrelatedProcess()));
      let code: number | null | undefined;
      void weir.stop('SIGCONT').then((c) => (code = c));
      // the heartbeat looks every 10 s
      await deadline('weir serve to exit', () => code !== undefined, 60_000);
      assert.equal(code, 1);
      assert.match(weir.stderr(), /weir: lost the lock of WEIR_DATA_DIR .* now names another process \(pid \d+\); this process stops writing the embedded database\. Exiting\./);
    });
  });
});
