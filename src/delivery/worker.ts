import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Db } from '../db/db.ts';
import type { DeliveryMetrics } from '../metrics/metrics.ts';
import { claimDeliveries, nextDueAt, releaseLeases, requeueExpiredLeases } from './claim.ts';
import { PACING_LATE_MS } from './claim-statement.ts';
import { CompletionBatcher, finishUnattempted } from './complete.ts';
import { DELIVERY_CHANNEL } from './enqueue.ts';
import type { Handoff } from './handoff.ts';
import { decide } from './retry-policy.ts';
import type { ClaimedDelivery, Transport } from './transport.ts';
import { QueueLoop } from './queue-loop.ts';
import { FilterGate, finishFiltered } from '../routing/apply.ts';
import { transformDelivery } from '../transformations/run.ts';
import type { Limits } from '../transformations/sandbox.ts';

/**
 * How long a batch of outcomes smaller than the concurrency waits for more
 * before it is recorded (CompletionBatcher), at any load: a lone outcome on
 * a quiet node is recorded this much later. Measured on 2026-11-28
 * (bench:forward-trees): PGlite 1.06-1.08x the forwards a second at
 * 0.81-0.86x the CPU a forward; PostgreSQL 1.03x at 0.84x this process's
 * CPU a forward.
 */
const COMPLETION_LINGER_MS = 4;

export interface WorkerOptions {
  db: Db;
  transport: Transport;
  logger: Logger;
  /** Identifies this node in deliveries.leased_by. */
  node: string;
  /** Forwards sent at once on this node (with claim-ahead it holds up to `claimAhead.batches` × `batchSize` more leased). */
  concurrency: number;
  /**
   * Claim ahead: hold up to `batches` × `batchSize` more leased deliveries than are
   * being sent, each waiting for a send slot, so claims and completions run
   * while the slots are busy and come in full batches. `maxWaitMs` is how
   * long a held delivery may wait for its slot and still have its whole
   * attempt inside the lease (lease minus the attempt's timeout, less a
   * margin); past it the lease is given back instead. `holdBytes` bounds
   * the captured bodies held: a claim takes rows beyond the free send slots
   * only while the bodies held, and as many more as the last claim's mean
   * body size says would fit, stay within it (unbounded when absent).
   * `batches` is how many batches it holds beyond its send slots (default
   * 1): with two, the next claim's rows arrive while a whole batch still
   * waits for slots, so the slots do not run dry during a claim's round
   * trip (src/delivery/start.ts deliveryQueueFor). Off when absent.
   */
  claimAhead?: { maxWaitMs: number; holdBytes?: number; batches?: number };
  /**
   * Deliveries claimed and not yet recorded, at most: those held (sending
   * or waiting for a send slot) and answered ones whose outcome waits for
   * its completion statement. A claim takes no more than this leaves
   * room for, so a database slower than the destinations holds claims back
   * instead of piling up answered forwards. Default twice the concurrency;
   * never less than what is held (src/delivery/start.ts deliveryQueueFor).
   */
  unrecordedLimit?: number;
  /**
   * Rows per claim statement at most, default the concurrency. With
   * claim-ahead a node holds up to the concurrency plus `claimAhead.batches`
   * times this many leased;
   * without, no more than the concurrency. Completions linger for as many
   * outcomes (COMPLETION_LINGER_MS).
   */
  batchSize?: number;
  /** How long a claim holds a delivery; must outlast one attempt (the transport's total timeout). */
  leaseMs: number;
  /** Safety poll: re-scan and recover expired leases this often, whatever NOTIFY says. */
  pollMs: number;
  /** Wake on NOTIFY (default). Off only to measure polling alone (bench/forward). */
  listen?: boolean;
  /**
   * Deliveries can be given up one by one (abandon(): an agent's link
   * dropped), so each gets an AbortController of its own. Otherwise every
   * delivery of a run shares one, which only stopping aborts: a controller,
   * its signal and the transport's listener on it cost about 7 µs of CPU a
   * forward (docs/forwarding.md).
   */
  abandonable?: boolean;
  /** Agent workers claim only their connected agents' deliveries. */
  agentIds?: () => readonly string[];
  /** Called after each recorded outcome, with the delivery (its `capture` released once sent) (tests and benchmarks observe through it). */
  onSettled?: (delivery: ClaimedDelivery, status: string) => void;
  /** Called each time the loop goes to sleep, with the epoch ms it sleeps until unless woken (tests wait for idleness through it). */
  onIdle?: (until: number) => void;
  /** Absent when metrics are off (WEIR_METRICS=0). */
  metrics?: DeliveryMetrics;
  /** The transformation sandbox's limits (src/transformations/sandbox.ts DEFAULT_LIMITS when absent). */
  transformLimits?: Limits;
}

/**
 * One node's delivery loop for one transport: claim due deliveries in
 * batches up to the free concurrency, send each, record each outcome.
 * It sleeps until one of: a NOTIFY (new deliveries committed), a slot
 * freeing up while work was left behind, the earliest scheduled retry or
 * paced slot coming due, or the safety poll. After the listen connection
 * is re-established it re-scans, because notifications sent meanwhile are lost.
 */
export class DeliveryWorker extends QueueLoop<{ delivery: ClaimedDelivery; abort: AbortController; done: Promise<void> }> {
  /** Forwards being sent: at most `concurrency`. */
  private sending = 0;
  /** Held deliveries waiting for a send slot, first claimed first (claim-ahead only). */
  private readonly sendQueue: Array<() => void> = [];
  /** Deliveries held at once, sending or waiting to: `concurrency`, plus `claimAhead.batches` batches with claim-ahead. */
  private readonly holdLimit: number;
  /** WorkerOptions.unrecordedLimit. */
  private readonly unrecordedLimit: number;
  /** The last claim left due work behind for want of free slots. */
  private backlog = false;
  /** The last claim saw a paced replay batch (a hint for the next claim, see claimDeliveries). */
  private pacedBatches = false;

  private readonly completions: CompletionBatcher;
  /**
   * Outcomes sent and not yet recorded. A forward gives its slot back once
   * its answer is in: recording it is the database's work, not the
   * destination's, so the next forward does not wait for a commit (on
   * PostgreSQL a group's commit took 10-13 ms, the whole slot idle). Its
   * lease holds until the record commits, so no claim can take it again.
   */
  private readonly recording = new Set<Promise<void>>();
  /** Destination filters, read and compiled once per destination version (src/routing/apply.ts). */
  private readonly filters: FilterGate;
  /** Free slots that make a claim worthwhile while a backlog waits. */
  private readonly refill: number;
  /** Rows per claim at most (WorkerOptions.batchSize), and the completions' batch a lone outcome lingers for. */
  private readonly batch: number;
  /** Free slots that make a claim worthwhile while a backlog waits and the byte budget keeps claims smaller than a batch. */
  private readonly budgetRefill: number;
  /** Bytes of the captured bodies the held deliveries carry. */
  private heldBytes = 0;
  /**
   * The transport queues attempts itself at this worker's concurrency
   * (Transport.queueLimit: the HTTPS transport on its own thread): every
   * held delivery is handed to it at once, and the checks sendSlot makes
   * when a delivery gets its slot are made by the transport when the
   * attempt would start (startBy), instead of the send slots here.
   */
  private readonly queued: boolean;
  /** Mean body size of the last claim that took rows: how many more fit the byte budget; null before the first. */
  private meanBody: number | null = null;

  constructor(private readonly o: WorkerOptions) {
    super({
      db: o.db,
      logger: o.logger,
      pollMs: o.pollMs,
      channel: o.listen === false ? null : DELIVERY_CHANNEL,
      messages: { requeued: 'requeued deliveries whose lease expired', passFailed: 'delivery claim failed; retrying' },
      onIdle: o.onIdle,
    });
    this.batch = o.batchSize ?? o.concurrency;
    // a batch of fewer outcomes than a claim's rows waits COMPLETION_LINGER_MS for more
    this.completions = new CompletionBatcher(o.db, o.node, { minBatch: this.batch, ms: COMPLETION_LINGER_MS });
    this.filters = new FilterGate(o.db);
    // A backlog is claimed once all but half a concurrency of a batch fits
    // (with claim-ahead, while the send slots are still busy; without it,
    // half the slots).
    const half = Math.floor(o.concurrency / 2);
    this.budgetRefill = Math.max(1, Math.min(this.batch, half));
    this.refill = o.claimAhead ? Math.max(1, this.batch - half) : this.budgetRefill;
    this.holdLimit = o.claimAhead ? o.concurrency + (o.claimAhead.batches ?? 1) * this.batch : o.concurrency;
    this.unrecordedLimit = Math.max(this.holdLimit, o.unrecordedLimit ?? 2 * o.concurrency);
    this.queued = o.transport.queueLimit === o.concurrency && o.transport.sendQueued !== undefined;
  }

  protected recoverLeases(): Promise<number> {
    return requeueExpiredLeases(this.o.db);
  }

  protected async pass(until: number): Promise<number | null> {
    let sleepUntil = until;
    const want = this.claimWant();
    const agentIds = this.o.agentIds?.() ?? null;
    // no agent connected (or none with room): nothing this worker may claim
    if (agentIds?.length === 0) this.backlog = false;
    // With due work left behind, claim only once a batch's worth of
    // slots is free: one claim per batch, not one per finished forward.
    else if (want >= this.claimLeast(want)) {
      const claimedAt = Date.now();
      const { claimed, rescheduled, pacedBatches } = await claimDeliveries(this.o.db, {
        destinationType: this.o.transport.destinationType,
        agentIds,
        limit: want,
        leaseMs: this.o.leaseMs,
        node: this.o.node,
        pacedBatches: this.pacedBatches,
      });
      this.pacedBatches = pacedBatches;
      let bytes = 0;
      for (const d of claimed) bytes += this.launch(d, claimedAt);
      if (claimed.length > 0) this.meanBody = Math.max(1, bytes / claimed.length);
      // a full batch means more may be due right now
      this.backlog = claimed.length + rescheduled >= want;
      if (this.backlog && this.roomForBacklog()) return null;
    }
    if (!this.backlog && agentIds?.length !== 0) {
      const due = await nextDueAt(this.o.db, this.o.transport.destinationType, agentIds);
      if (due !== null) sleepUntil = Math.min(sleepUntil, Math.max(due, Date.now()));
    }
    return sleepUntil;
  }

  /** The controller deliveries share when they are not abandonable (WorkerOptions.abandonable); a new one after a stop. */
  private shared: AbortController | undefined;

  /** Starts a claimed delivery; returns the bytes of its captured body, counted as held until it ends. */
  private launch(d: ClaimedDelivery, claimedAt: number): number {
    const bytes = d.capture?.body.length ?? 0;
    let abort: AbortController;
    if (this.o.abandonable) abort = new AbortController();
    else {
      if (!this.shared || this.shared.signal.aborted) {
        this.shared = new AbortController();
        // a paced delivery waits for its slot on this signal: as many listeners as deliveries held, no leak
        setMaxListeners(0, this.shared.signal);
      }
      abort = this.shared;
    }
    const done = this.process(d, abort.signal, claimedAt)
      .catch((err) => this.o.logger.error({ err, delivery: d.id }, 'recording a delivery outcome failed; its lease will expire and it will be retried'))
      .finally(() => {
        this.inflight.delete(d.id);
        this.heldBytes -= bytes;
        this.wakeForRoom();
      });
    this.heldBytes += bytes;
    this.inflight.set(d.id, { delivery: d, abort, done });
    return bytes;
  }

  /**
   * This node stalled past a paced slot it was waiting for (PACING_LATE_MS,
   * claim-statement.ts): the lease goes back and the next claim gives the
   * delivery a new slot, instead of sending it in a burst with the ones due
   * after it.
   */
  private async giveUpSlot(d: ClaimedDelivery): Promise<void> {
    await releaseLeases(this.o.db, [d.leaseId]);
    this.wake();
  }

  private async process(d: ClaimedDelivery, signal: AbortSignal, claimedAt: number): Promise<void> {
    if (d.sendAt > Date.now()) await abortableDelay(d.sendAt - Date.now(), signal);
    if (signal.aborted) return;
    if (missedPacedSlot(d)) return this.giveUpSlot(d);
    if (d.sendAt > 0) this.o.metrics?.pacingLag(Math.max(0, Date.now() - d.sendAt) / 1000);
    if (!d.capture) {
      await finishUnattempted(this.o.db, d, 'the captured request no longer exists (retention removed it)');
      this.o.onSettled?.(d, 'failed');
      return;
    }
    if (!d.enabled) {
      await finishUnattempted(this.o.db, d, 'the destination was disabled after this delivery was queued');
      this.o.onSettled?.(d, 'failed');
      return;
    }
    // A capture that does not match the destination's current filter ends `filtered`, unsent
    // (the filter reads the request as captured, before any transformation).
    if (d.filterVersion != null) {
      const verdict = await this.filters.check(d);
      if (!verdict.matches) {
        await finishFiltered(this.o.db, d, verdict.reason!);
        this.o.onSettled?.(d, 'filtered');
        return;
      }
    }
    // the destination's transformation (src/transformations): may end the delivery here, or reshape what is sent
    const t = await transformDelivery(d, { db: this.o.db, completions: this.completions, logger: this.o.logger, limits: this.o.transformLimits });
    if (t.settled) return void this.o.onSettled?.(d, t.settled);
    let sent;
    if (this.queued) {
      sent = await this.o.transport.sendQueued!(t.delivery, signal, this.startBy(d, claimedAt));
      if (sent === null) return this.notStarted(d, signal);
    } else {
      if (!(await this.sendSlot(d, signal, claimedAt))) return;
      try {
        sent = await this.o.transport.send(t.delivery, signal);
      } finally {
        this.releaseSendSlot();
      }
    }
    const result = t.finish(sent);
    // aborted by shutdown: the lease is released instead, and the outcome is unknown
    if (signal.aborted) return;
    const decision = decide(result, d.retry, d.attemptNumber);
    // Waiting for its statement, the outcome holds the delivery without the
    // captured request: up to the unrecorded limit of them wait at once,
    // and a body may be megabytes.
    const answered: ClaimedDelivery = d.capture ? { ...d, capture: null } : d;
    const recorded = this.completions
      .record({ delivery: answered, result, decision })
      .then((owned) => {
        // counted once recorded, so a scrape never shows an attempt the queue does not yet reflect
        this.o.metrics?.attempt(this.o.transport.destinationType, decision.status, result.durationMs / 1000);
        if (!owned) this.o.logger.warn({ delivery: answered.id }, 'lease lost before the outcome was recorded; another worker retries it');
        else if (decision.status === 'pending') this.sleeper.wakeBy(Date.now() + decision.delaySeconds * 1000);
        this.o.onSettled?.(answered, decision.status);
      })
      .catch((err) => this.o.logger.error({ err, delivery: answered.id }, 'recording a delivery outcome failed; its lease will expire and it will be retried'))
      .finally(() => {
        this.recording.delete(recorded);
        this.wakeForRoom();
      });
    this.recording.add(recorded);
  }

  /**
   * Takes one of the `concurrency` send slots, waiting for it in claim
   * order when all are busy (only with claim-ahead: otherwise every held
   * delivery has one). False when the delivery is not to be sent now:
   * aborted while waiting (stopping, abandoned), or it waited so long that
   * its attempt might outlast its lease, or past its paced slot; then its
   * lease goes back (due as it was, or re-slotted by the next claim) and a
   * later claim takes it again.
   */
  private async sendSlot(d: ClaimedDelivery, signal: AbortSignal, claimedAt: number): Promise<boolean> {
    if (this.sending < this.o.concurrency && this.sendQueue.length === 0) {
      this.sending++;
      return true;
    }
    let handed = false;
    await new Promise<void>((resolve) => {
      const take = () => {
        handed = true;
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.sendQueue.indexOf(take);
        if (i >= 0) this.sendQueue.splice(i, 1);
        resolve();
      };
      this.sendQueue.push(take);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    if (!handed) return false;
    if (signal.aborted) {
      this.releaseSendSlot();
      return false;
    }
    if (Date.now() - claimedAt > (this.o.claimAhead?.maxWaitMs ?? 0)) {
      this.releaseSendSlot();
      await releaseLeases(this.o.db, [d.leaseId], { keepDue: true });
      this.wake();
      return false;
    }
    if (missedPacedSlot(d)) {
      this.releaseSendSlot();
      await this.giveUpSlot(d);
      return false;
    }
    return true;
  }

  /**
   * The latest moment a queued delivery's attempt may start (sendQueued):
   * within the claim-ahead's longest wait from its claim, or from its paced
   * slot, which its lease runs from; a paced one no later than
   * PACING_LATE_MS after its slot. The same bounds sendSlot keeps.
   */
  private startBy(d: ClaimedDelivery, claimedAt: number): number {
    const wait = this.o.claimAhead?.maxWaitMs;
    const by = wait === undefined ? Number.MAX_SAFE_INTEGER : Math.max(claimedAt, d.sendAt) + wait;
    return d.sendAt > 0 ? Math.min(by, d.sendAt + PACING_LATE_MS) : by;
  }

  /**
   * A queued delivery the transport did not start: aborted (stopping,
   * abandoned: the lease is given back there), or too late to start within
   * its lease or its paced slot; then its lease goes back as in sendSlot.
   */
  private async notStarted(d: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    if (missedPacedSlot(d)) return this.giveUpSlot(d);
    await releaseLeases(this.o.db, [d.leaseId], { keepDue: true });
    this.wake();
  }

  /** Hands a finished send's slot to the first delivery waiting for one, or frees it. */
  private releaseSendSlot(): void {
    const next = this.sendQueue.shift();
    if (next) next();
    else this.sending--;
  }

  /**
   * Slots a claim may fill: deliveries held stay within the hold limit
   * (sends themselves within the concurrency, sendSlot), and with the
   * outcomes waiting to be recorded within the unrecorded limit.
   */
  private freeSlots(): number {
    return Math.min(this.holdLimit - this.inflight.size, this.unrecordedLimit - this.inflight.size - this.recording.size);
  }

  /**
   * Rows the next claim may take: within the free slots and a batch, and
   * with claim-ahead, beyond the free send slots only as many as the byte
   * budget has room for at the last claim's mean body size (none before
   * the first claim, whose bodies are unknown).
   */
  private claimWant(): number {
    const want = Math.min(this.freeSlots(), this.batch);
    const budget = this.o.claimAhead?.holdBytes;
    if (budget === undefined) return want;
    const sendRoom = Math.max(0, this.o.concurrency - this.inflight.size);
    if (sendRoom >= want) return want;
    const ahead = this.meanBody === null ? 0 : Math.floor(Math.max(0, budget - this.heldBytes) / this.meanBody);
    return Math.min(want, sendRoom + ahead);
  }

  /**
   * The fewest rows worth a claim: any when no backlog waits; with one, a
   * batch less half a concurrency, or, while the byte budget holds the
   * claim below the free slots, half a concurrency, which finished sends
   * always make room for (a stricter threshold would wait forever).
   */
  private claimLeast(want: number): number {
    if (!this.backlog) return 1;
    return want < Math.min(this.freeSlots(), this.batch) ? this.budgetRefill : this.refill;
  }

  /** With due work left behind: a claim is worthwhile now. */
  private roomForBacklog(): boolean {
    const want = this.claimWant();
    return want >= this.claimLeast(want);
  }

  /** With due work left behind, claims again once a batch's worth of slots is free. */
  private wakeForRoom(): void {
    if (this.backlog && this.roomForBacklog()) this.wake();
  }

  /**
   * Gives up the in-flight deliveries `which` selects without recording an
   * outcome (an agent's link dropped: whether they arrived is unknown):
   * aborts them, then releases their leases keeping their due time, so they
   * are sent again, first, wherever the agent reconnects.
   */
  async abandon(which: (d: ClaimedDelivery) => boolean): Promise<number> {
    if (!this.o.abandonable) throw new Error('this worker was not started with abandonable: its deliveries share one abort signal');
    const left = [...this.inflight.values()].filter((f) => which(f.delivery));
    for (const f of left) f.abort.abort();
    await Promise.all(left.map((f) => f.done));
    const n = await releaseLeases(this.o.db, left.map((f) => f.delivery.leaseId), { keepDue: true });
    if (left.length > 0) this.wake();
    return n;
  }

  /**
   * This worker as the capture statement sees it (src/delivery/handoff.ts):
   * room for fresh deliveries while it runs, has a free send slot for each
   * and left no due work behind (a backlog goes first, by claim), and a
   * way to take the ones a committed capture statement leased to it. Only
   * the HTTPS worker is handed deliveries.
   */
  handoff(): Handoff {
    return {
      leaseMs: this.o.leaseMs,
      node: this.o.node,
      room: () => (this.running && !this.backlog ? Math.max(0, Math.min(this.o.concurrency - this.inflight.size, this.freeSlots())) : 0),
      adopt: (deliveries) => this.adopt(deliveries),
    };
  }

  /** Starts handed deliveries as a claim's; stopped meanwhile, it gives their leases back at once instead. */
  private adopt(deliveries: ClaimedDelivery[]): void {
    if (!this.running) {
      void releaseLeases(this.o.db, deliveries.map((d) => d.leaseId)).catch((err) =>
        this.o.logger.warn({ err }, 'could not release the leases of handed deliveries; they expire on their own'),
      );
      return;
    }
    this.o.metrics?.handedOff(deliveries.length);
    const now = Date.now();
    for (const d of deliveries) this.launch(d, now);
  }

  /** How many deliveries this worker holds right now (sending or waiting for a send slot), and their captured bodies' bytes. */
  held(): { deliveries: number; bytes: number } {
    return { deliveries: this.inflight.size, bytes: this.heldBytes };
  }

  /** The deliveries this worker holds right now. */
  inFlightDeliveries(): ClaimedDelivery[] {
    return [...this.inflight.values()].map((f) => f.delivery);
  }

  /**
   * Stops claiming, lets in-flight forwards finish for up to `graceMs`,
   * then aborts the rest and gives their leases back so another node (or
   * the next start) sends them at once instead of after the lease expires.
   */
  async stop(graceMs = 10_000): Promise<void> {
    const stopped = await this.stopLoop(graceMs, (left) =>
      releaseLeases(this.o.db, left.map((f) => f.delivery.leaseId)).catch((err) =>
        this.o.logger.warn({ err }, 'could not release delivery leases; they expire on their own'),
      ),
    );
    // answered forwards: their outcomes are recorded before the database can be closed
    await Promise.all([...this.recording]);
    if (stopped) await this.o.transport.close();
  }
}

/** A paced delivery this node is too late to send in its slot (PACING_LATE_MS): it gives the slot back instead (giveUpSlot). */
function missedPacedSlot(d: ClaimedDelivery): boolean {
  return d.sendAt > 0 && Date.now() - d.sendAt > PACING_LATE_MS;
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
