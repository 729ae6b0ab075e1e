/** The benchmarks' median (bench/stats.ts): the figures in docs/ are medians of 2 to 8 samples, where taking the upper middle one reads high. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { median } from '../../bench/stats.ts';

describe('the benchmarks\' median', () => {
  it('is the middle sample of an odd count, whatever the order', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([0.9]), 0.9);
  });

  it('is the mean of the two middle samples of an even count, not the upper one', () => {
    assert.equal(median([1, 2]), 1.5);
    // six pairs of the verification bench, as one run printed them
    assert.equal(median([0.984, 0.886, 0.877, 0.895, 0.991, 0.951]), (0.895 + 0.951) / 2);
  });

  it('leaves its input as it was, and has none for no samples', () => {
    const xs = [2, 1];
    median(xs);
    assert.deepEqual(xs, [2, 1]);
    assert.ok(Number.isNaN(median([])));
  });
});
