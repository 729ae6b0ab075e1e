/**
 * The median of a benchmark's samples: the middle one, or the mean of the
 * two middle ones for an even count. (Several benchmarks once took the
 * upper of the two, which read high: with two rounds it was the larger,
 * with six pairs the fourth.)
 */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
