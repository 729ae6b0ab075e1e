import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLoop, type LoopMetrics } from '../../src/background/scheduler.ts';
import { WeirMetrics } from '../../src/metrics/metrics.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

function recorder() {
  const passes: { loop: string; seconds: number; lagSeconds: number; failed: boolean }[] = [];
  const metrics: LoopMetrics = { pass: (loop, r) => passes.push({ loop, ...r }) };
  return { passes, metrics };
}

describe('background loop scheduler', () => {
  it('never overlaps passes, and a slow pass does not queue the passes it overran', async () => {
    let started = 0;
    let running = 0;
    let most = 0;
    let ticksWhileBlocked = 0;
    const first = gate();
    const loop = createLoop({
      name: 'test',
      everyMs: 5,
      jitterMs: 0,
      firstAfterMs: 0,
      async pass() {
        started++;
        running++;
        most = Math.max(most, running);
        try {
          if (started === 1) await first.opened;
        } finally {
          running--;
        }
      },
    });
    loop.start();
    await until('the first pass to start', () => started === 1);
    // count interval boundaries while the first pass is stuck: forty of them
    const blockedUntil = Date.now() + 200;
    while (Date.now() < blockedUntil) {
      await sleep(5);
      ticksWhileBlocked++;
    }
    assert.equal(started, 1, 'no pass starts while one is running');
    first.open();
    await until('a pass after the slow one', () => started >= 2);
    await loop.stop();
    const after = started;
    // The old setInterval + `running = running.then(pass)` shape had one
    // pass queued per overrun interval (about forty here) and stop() waited
    // for all of them; here at most the one pass that was due runs.
    assert.ok(ticksWhileBlocked > 5, 'the slow pass spanned many intervals');
    assert.ok(after <= 3, `passes run after the slow one: ${after - 1}`);
    assert.equal(most, 1);
    await sleep(30);
    assert.equal(started, after, 'nothing runs after stop()');
  });

  it('stop() aborts the pass in progress and returns without waiting for it to finish on its own', async () => {
    let aborted = false;
    const loop = createLoop({
      name: 'test',
      everyMs: 3_600_000,
      async pass(signal) {
        // a pass that would run for an hour unless told to stop
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 3_600_000);
          signal.addEventListener('abort', () => {
            aborted = true;
            clearTimeout(t);
            resolve();
          });
        });
      },
    });
    loop.start();
    const pass = loop.runOnce();
    await until('the pass to start', () => loop.busy);
    await loop.stop();
    assert.ok(aborted);
    assert.equal(loop.busy, false);
    await pass;
  });

  it('stop() cancels a pending wait: an hour-long interval does not hold the stop', async () => {
    let passes = 0;
    const loop = createLoop({ name: 'test', everyMs: 3_600_000, ref: true, pass: async () => void passes++ });
    loop.start();
    // ref: true keeps the process alive on the timer; a stop that did not clear it would leave the test runner hanging
    await loop.stop();
    assert.equal(passes, 0);
  });

  it('stop() is safe before start() and twice, and a stopped loop does not start', async () => {
    let passes = 0;
    const loop = createLoop({ name: 'test', everyMs: 1, firstAfterMs: 0, pass: async () => void passes++ });
    await loop.stop();
    await loop.stop();
    loop.start();
    assert.equal(await loop.runOnce(), undefined);
    await sleep(20);
    assert.equal(passes, 0);
  });

  it('runOnce() during a pass runs one more pass after it, shared by every caller', async () => {
    let passes = 0;
    const g = gate();
    const loop = createLoop({
      name: 'test',
      everyMs: 3_600_000,
      async pass() {
        passes++;
        if (passes === 1) await g.opened;
        return passes;
      },
    });
    loop.start();
    const a = loop.runOnce();
    await until('the first pass', () => passes === 1);
    const b = loop.runOnce();
    const c = loop.runOnce();
    g.open();
    assert.equal(await a, 1);
    assert.equal(await b, 2);
    assert.equal(await c, 2);
    assert.equal(passes, 2);
    await loop.stop();
  });

  it('reports every pass with its duration, lag and failure, and tells onError; the loop goes on after a failure', async () => {
    const { passes, metrics } = recorder();
    const errors: unknown[] = [];
    let n = 0;
    const loop = createLoop({
      name: 'flaky',
      everyMs: 2,
      jitterMs: 0,
      firstAfterMs: 0,
      metrics,
      onError: (err) => errors.push(err),
      async pass() {
        n++;
        if (n === 1) throw new Error('first pass fails');
      },
    });
    loop.start();
    await until('three passes', () => passes.length >= 3);
    await loop.stop();
    assert.equal(passes[0].failed, true);
    assert.equal(passes[1].failed, false);
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /first pass fails/);
    for (const p of passes) {
      assert.equal(p.loop, 'flaky');
      assert.ok(p.seconds >= 0 && p.lagSeconds >= 0);
    }
  });

  it('measures a pass that overran its interval as lag of the next', async () => {
    const { passes, metrics } = recorder();
    let n = 0;
    const g = gate();
    const loop = createLoop({
      name: 'lagging',
      everyMs: 10,
      jitterMs: 0,
      firstAfterMs: 0,
      metrics,
      async pass() {
        n++;
        if (n === 1) await g.opened;
      },
    });
    loop.start();
    await until('the first pass', () => n === 1);
    // the second pass was due 10 ms after the first; hold the first well past that
    const heldFrom = Date.now();
    while (Date.now() - heldFrom < 100) await sleep(10);
    g.open();
    await until('the second pass', () => passes.length >= 2);
    await loop.stop();
    const held = (Date.now() - heldFrom) / 1000;
    assert.ok(passes[1].lagSeconds >= 0.05, `lag ${passes[1].lagSeconds} s after a pass held ${held} s`);
  });

  it('adds jitter within its bound to every wait', async () => {
    for (const r of [0, 0.5, 0.999]) {
      const loop = createLoop({ name: 'j', everyMs: 1_000, jitterMs: 400, random: () => r, pass: async () => {} });
      const before = Date.now();
      loop.start();
      const after = Date.now();
      const due = loop.nextDueAt!;
      assert.ok(due >= before + 1_000 + 400 * r && due <= after + 1_000 + 400 * r, `due ${due - before} ms after start with random ${r}`);
      await loop.stop();
      assert.equal(loop.nextDueAt, undefined);
    }
  });

  it('shows each loop on /metrics as weir_loop_pass_seconds, weir_loop_lag_seconds and weir_loop_errors_total', async () => {
    const m = new WeirMetrics();
    let n = 0;
    const loop = createLoop({
      name: 'capture_retention',
      everyMs: 3_600_000,
      metrics: m.loops,
      async pass() {
        if (++n === 2) throw new Error('boom');
      },
    });
    await loop.runOnce();
    await loop.runOnce();
    await loop.stop();
    const text = await m.text();
    assert.match(text, /weir_loop_pass_seconds_count\{loop="capture_retention"\} 2/);
    assert.match(text, /weir_loop_lag_seconds_count\{loop="capture_retention"\} 2/);
    assert.match(text, /weir_loop_errors_total\{loop="capture_retention"\} 1/);
  });
});
