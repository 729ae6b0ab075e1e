import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { LoopMetrics } from '../background/scheduler.ts';
import type { Db } from '../db/db.ts';
import { PROVIDERS, type Provider, type VerificationStatus } from '../verification/providers.ts';
import { LeanHistogram } from './lean-histogram.ts';

/** Why the ingest listener refused a capture; a closed set, so the label stays bounded. */
export type RefusalReason = 'not_found' | 'too_large' | 'paused' | 'overloaded' | 'malformed' | 'unverified';
const REFUSAL_REASONS: readonly RefusalReason[] = ['not_found', 'too_large', 'paused', 'overloaded', 'malformed', 'unverified'];
const DESTINATION_TYPES = ['https', 'agent'] as const;
const OUTCOMES = ['succeeded', 'pending', 'failed'] as const;

/** The hooks of the capture path: every one is an increment or one histogram observation, with no allocation per request. */
export interface IngestMetrics {
  acknowledged(seconds: number): void;
  refused(reason: RefusalReason): void;
  group(size: number): void;
  /** One signature verification (src/verification), by provider and outcome. */
  verified(provider: Provider, status: VerificationStatus): void;
}

/** The hooks of the forwarding path, called once per attempt. */
export interface DeliveryMetrics {
  attempt(type: 'https' | 'agent', outcome: string, seconds: number): void;
  /** How late a paced forward left after its slot. */
  pacingLag(seconds: number): void;
  /** Fresh HTTPS forwards the capture statement leased to this node's worker (the hand-off), sent without a claim. */
  handedOff(count: number): void;
}

/** What the node reports on each scrape, read when Prometheus asks rather than kept up to date. */
export interface MetricSources {
  db?: Db;
  agentConnections?: () => number;
  /** The HTTPS delivery worker's held deliveries (being sent or waiting for a send slot) and their captured bodies' bytes. */
  deliveriesHeld?: () => { deliveries: number; bytes: number };
  poolStats?: () => { total: number; idle: number; waiting: number } | undefined;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * One node's Prometheus registry (docs/operations.md "Metrics"). Each node
 * (and each in-process test node) has its own registry, never prom-client's
 * global one. Labels are closed sets (reason, outcome, destination type):
 * never a slug, a URL or an id, so the series count cannot grow with tenants.
 */
export class WeirMetrics {
  readonly registry = new Registry();
  readonly ingest: IngestMetrics;
  readonly delivery: DeliveryMetrics;
  /** Every background loop's passes (src/background/scheduler.ts). */
  readonly loops: LoopMetrics;
  private readonly checkpoint: Histogram;
  private readonly sources: MetricSources = {};

  constructor() {
    const r = this.registry;
    const sources = this.sources;
    collectDefaultMetrics({ register: r });

    const refusals = new Counter({ name: 'weir_captures_refused_total', help: 'Capture requests refused, by reason.', labelNames: ['reason'], registers: [r] });
    // once per capture: the lean kind (lean-histogram.ts), not prom-client's
    const ackLatency = new LeanHistogram(
      'weir_capture_ack_seconds',
      'Time from a capture request reaching Weir to its acknowledgement (body read, group committed).',
      LATENCY_BUCKETS,
      r,
    );
    // every acknowledged capture is one latency observation: the counter is read from it when scraped
    new Counter({
      name: 'weir_captures_acknowledged_total',
      help: 'Captures committed and answered 200.',
      registers: [r],
      collect() {
        this.reset();
        this.inc(ackLatency.count);
      },
    });
    const groups = new Histogram({
      name: 'weir_capture_group_size',
      help: 'Captures committed together in one group commit.',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500],
      registers: [r],
    });
    const refusedBy = Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, refusals.labels(reason)])) as Record<RefusalReason, Counter>;
    for (const reason of REFUSAL_REASONS) refusals.labels(reason).inc(0);
    // Labels: the seven provider names and two outcomes, never an endpoint
    // or a reason's free text. A capture adds to a plain number (once per
    // verified capture, where prom-client's labelled inc() hashes a labels
    // object each time); the counter reads them when scraped.
    const verifiedCounts = Object.fromEntries(PROVIDERS.map((p) => [p, { verified: 0, failed: 0 }])) as Record<Provider, Record<VerificationStatus, number>>;
    new Counter({
      name: 'weir_verifications_total',
      help: 'Signature verifications of captures, by provider and outcome (verified, failed).',
      labelNames: ['provider', 'outcome'],
      registers: [r],
      collect() {
        this.reset();
        for (const p of PROVIDERS) for (const o of ['verified', 'failed'] as const) this.labels(p, o).inc(verifiedCounts[p][o]);
      },
    });
    this.ingest = {
      acknowledged: (seconds) => ackLatency.observe(seconds),
      refused: (reason) => refusedBy[reason].inc(),
      group: (size) => groups.observe(size),
      verified: (provider, status) => void verifiedCounts[provider][status]++,
    };

    const attempts = new Counter({
      name: 'weir_delivery_attempts_total',
      help: 'Forward attempts by what they led to (succeeded, pending: a retry is scheduled, failed: given up) and destination type.',
      labelNames: ['outcome', 'destination_type'],
      registers: [r],
    });
    for (const o of OUTCOMES) for (const t of DESTINATION_TYPES) attempts.labels(o, t).inc(0);
    const attemptLatency = new Histogram({
      name: 'weir_delivery_attempt_seconds',
      help: 'Duration of one forward attempt, by destination type.',
      labelNames: ['destination_type'],
      buckets: ATTEMPT_BUCKETS,
      registers: [r],
    });
    const pacing = new Histogram({
      name: 'weir_delivery_pacing_lag_seconds',
      help: 'How late a rate-limited forward left after its paced slot.',
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [r],
    });
    const handedOff = new Counter({
      name: 'weir_delivery_handed_off_total',
      help: 'Fresh HTTPS forwards the statement storing their capture leased straight to this node\'s worker, sent without a claim (WEIR_FORWARD_HANDOFF).',
      registers: [r],
    });
    this.delivery = {
      handedOff: (count) => handedOff.inc(count),
      attempt: (type, outcome, seconds) => {
        attempts.labels(OUTCOMES.includes(outcome as never) ? outcome : 'failed', type).inc();
        attemptLatency.labels(type).observe(seconds);
      },
      pacingLag: (seconds) => pacing.observe(seconds),
    };

    // The queue is read from the database at scrape time: one indexed query
    // per scrape instead of bookkeeping on every claim and completion.
    let reading: Promise<{ depth: number; age: number | null }> | undefined;
    // prom-client collects every metric at once: both gauges share one read per scrape
    const readQueue = () =>
      (reading ??= (async () => {
        const { rows } = await sources.db!.query<{ depth: number; age: number | null }>(
          `select count(*)::float8 as depth,
                  extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now()))::float8 as age
             from deliveries where status = 'pending'`,
        );
        return rows[0];
      })().finally(() => (reading = undefined)));
    new Gauge({
      name: 'weir_delivery_queue_depth',
      help: 'Deliveries waiting (pending), all nodes together.',
      registers: [r],
      async collect() {
        if (sources.db) this.set((await readQueue()).depth);
      },
    });
    new Gauge({
      name: 'weir_delivery_oldest_due_seconds',
      help: 'How long the oldest delivery that is due has been waiting to be sent (0 when none is due).',
      registers: [r],
      async collect() {
        if (sources.db) this.set(Math.max(0, (await readQueue()).age ?? 0));
      },
    });

    new Gauge({
      name: 'weir_delivery_held',
      help: 'Deliveries this node holds leased for HTTPS forwards: being sent, or claimed ahead and waiting for a send slot.',
      registers: [r],
      collect() {
        this.set(sources.deliveriesHeld?.().deliveries ?? 0);
      },
    });
    new Gauge({
      name: 'weir_delivery_held_bytes',
      help: 'Bytes of the captured bodies those deliveries carry (claims ahead stay within WEIR_DELIVERY_HOLD_MB).',
      registers: [r],
      collect() {
        this.set(sources.deliveriesHeld?.().bytes ?? 0);
      },
    });
    new Gauge({
      name: 'weir_agent_connections',
      help: 'Agents connected to this node.',
      registers: [r],
      collect() {
        this.set(sources.agentConnections?.() ?? 0);
      },
    });
    new Gauge({
      name: 'weir_db_pool_connections',
      help: 'PostgreSQL pool connections of this node, by state (in_use, idle); absent on PGlite.',
      labelNames: ['state'],
      registers: [r],
      collect() {
        const s = sources.poolStats?.();
        if (!s) return;
        this.labels('in_use').set(s.total - s.idle);
        this.labels('idle').set(s.idle);
      },
    });
    new Gauge({
      name: 'weir_db_pool_waiting',
      help: 'Queries of this node waiting for a free PostgreSQL pool connection.',
      registers: [r],
      collect() {
        const s = sources.poolStats?.();
        if (s) this.set(s.waiting);
      },
    });
    // One series per loop: loop names are a fixed set written in the code.
    const loopPass = new Histogram({
      name: 'weir_loop_pass_seconds',
      help: 'Duration of one pass of a background loop.',
      labelNames: ['loop'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [r],
    });
    const loopLag = new Histogram({
      name: 'weir_loop_lag_seconds',
      help: 'How late a background loop pass started after it was due (a previous pass overran, or the event loop was busy).',
      labelNames: ['loop'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [r],
    });
    const loopErrors = new Counter({ name: 'weir_loop_errors_total', help: 'Background loop passes that failed.', labelNames: ['loop'], registers: [r] });
    this.loops = {
      pass: (loop, { seconds, lagSeconds, failed }) => {
        loopPass.labels(loop).observe(seconds);
        loopLag.labels(loop).observe(lagSeconds);
        loopErrors.labels(loop).inc(failed ? 1 : 0);
      },
    };
    this.checkpoint = new Histogram({
      name: 'weir_pglite_checkpoint_seconds',
      help: 'Duration of the checkpoints Weir runs for PGlite (src/db/pglite-checkpoints.ts).',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [r],
    });
  }

  /** Told by the PGlite checkpointer after each checkpoint. */
  checkpointed(seconds: number): void {
    this.checkpoint.observe(seconds);
  }

  /** Wires what is read at scrape time, once the parts that own it have started. */
  observe(sources: MetricSources): void {
    Object.assign(this.sources, sources);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
