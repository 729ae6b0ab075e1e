import type { Registry } from 'prom-client';

/** One exported sample, in the shape prom-client's registry formats. */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A label-free Prometheus histogram for the capture path, registered in a
 * prom-client Registry beside its own metrics. prom-client's observe()
 * converts, validates and hashes a labels object and builds a closure on
 * every call; this one adds to a typed array and two numbers, and builds
 * the samples only when Prometheus scrapes. The text it exports is the same
 * (cumulative `_bucket` lines with `le`, `+Inf`, `_sum`, `_count`).
 */
export class LeanHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly counts: Float64Array;
  private sum = 0;
  private observed = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    if (buckets.some((b, i) => i > 0 && b <= buckets[i - 1])) throw new Error(`${name}: buckets must increase`);
    this.counts = new Float64Array(buckets.length + 1); // the last: above every bound
    registry.registerMetric(this as never);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.observed++;
  }

  /** How many values were observed. */
  get count(): number {
    return this.observed;
  }

  /** What prom-client's registry asks of a metric when it renders a scrape. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    let cumulative = 0;
    this.buckets.forEach((le, i) => {
      cumulative += this.counts[i];
      values.push({ metricName: `${this.name}_bucket`, labels: { le }, value: cumulative });
    });
    values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf' }, value: this.observed });
    values.push({ metricName: `${this.name}_sum`, labels: {}, value: this.sum });
    values.push({ metricName: `${this.name}_count`, labels: {}, value: this.observed });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
