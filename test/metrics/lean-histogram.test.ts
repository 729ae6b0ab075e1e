import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { LeanHistogram } from '../../src/metrics/lean-histogram.ts';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.25, 1];

describe('LeanHistogram', () => {
  it("scrapes as the same text as prom-client's Histogram given the same observations (bounds inclusive, above all, zero)", async () => {
    const lean = new Registry();
    const stock = new Registry();
    const a = new LeanHistogram('weir_x_seconds', 'A test histogram.', BUCKETS, lean);
    const b = new Histogram({ name: 'weir_x_seconds', help: 'A test histogram.', buckets: BUCKETS, registers: [stock] });
    assert.equal(await lean.metrics(), await stock.metrics(), 'before any observation');
    for (const v of [0, 0.0005, 0.001, 0.0010001, 0.0025, 0.004, 0.01, 0.2, 0.25, 0.9999, 1, 1.5, 30, 0.003, 0.003]) {
      a.observe(v);
      b.observe(v);
    }
    const text = await lean.metrics();
    assert.equal(text, await stock.metrics());
    assert.match(text, /^weir_x_seconds_bucket\{le="0.001"\} 3$/m, 'le is inclusive: 0, 0.0005 and 0.001');
    assert.match(text, /^weir_x_seconds_bucket\{le="\+Inf"\} 15$/m);
    assert.match(text, /^weir_x_seconds_count 15$/m);
  });

  it('refuses buckets that do not increase, and a second metric of the same name', () => {
    assert.throws(() => new LeanHistogram('weir_y_seconds', 'y', [1, 1, 2], new Registry()), /must increase/);
    const r = new Registry();
    new LeanHistogram('weir_z_seconds', 'z', [1], r);
    assert.throws(() => new LeanHistogram('weir_z_seconds', 'z', [1], r), /already been registered/);
  });
});
