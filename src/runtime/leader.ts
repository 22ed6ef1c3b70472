// Leader election on a coordination.k8s.io Lease, with client-go's rules:
// a candidate takes the lease only when its holder has not renewed it for a
// whole lease duration, measured on OUR clock from when we last saw the record
// change (so clock skew between machines cannot hand the lease to two holders);
// updates carry the resourceVersion, so two candidates racing cannot both win;
// a leader that cannot renew within the renew deadline steps down.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from './client.ts';
import { isAlreadyExists, isConflict, isNotFound } from './errors.ts';
import { type Logger, rootLogger } from './log.ts';
import { type K8sObject, Leases } from './resources.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease holds without renewal (client-go default 15 s). */
  leaseDurationMs?: number;
  /** A leader that has not renewed for this long gives up (default 10 s). */
  renewDeadlineMs?: number;
  /** Wait between tries to acquire or renew (default 2 s). */
  retryPeriodMs?: number;
  log?: Logger;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
type Lease = K8sObject & { spec?: LeaseSpec };

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(d = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly o: Required<Omit<LeaderElectionOptions, 'log'>>;
  private readonly log: Logger;
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  /** The lease as we last wrote it (its resourceVersion makes the fast renewal safe). */
  private written: Lease | undefined;

  constructor(client: KubeClient, opts: LeaderElectionOptions) {
    this.client = client;
    this.o = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, ...opts };
    if (this.o.renewDeadlineMs >= this.o.leaseDurationMs) {
      throw new Error('leader election: the renew deadline must be shorter than the lease duration');
    }
    this.log = (opts.log ?? rootLogger).child({
      lease: `${opts.namespace}/${opts.name}`,
      identity: opts.identity,
    });
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Waits until we hold the lease, then calls lead() with a signal that aborts
   * when leadership is lost or `signal` aborts. Returns after lead() returns;
   * on a clean shutdown (signal aborted) the lease is released so the next
   * candidate need not wait out the lease duration.
   */
  async run(
    signal: AbortSignal,
    lead: (leaderSignal: AbortSignal) => Promise<void>,
  ): Promise<'released' | 'lost'> {
    let acquiredAt = 0;
    while (!signal.aborted) {
      const started = Date.now();
      if (await this.tryAcquireOrRenew(this.bounded(signal, this.o.renewDeadlineMs))) {
        acquiredAt = started;
        break;
      }
      await sleep(this.o.retryPeriodMs * (1 + Math.random() * 0.2), undefined, { signal }).catch(() => {});
    }
    if (signal.aborted) return 'released';
    this.leading = true;
    this.log.info('became leader');
    const leaderCtl = new AbortController();
    const onStop = () => leaderCtl.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const renewing = this.renewLoop(leaderCtl, acquiredAt);
    try {
      await lead(leaderCtl.signal);
    } finally {
      signal.removeEventListener('abort', onStop);
      const lost = leaderCtl.signal.aborted && !signal.aborted;
      leaderCtl.abort();
      await renewing;
      this.leading = false;
      if (!lost) await this.release();
    }
    const outcome = signal.aborted ? 'released' : 'lost';
    this.log.info({ outcome }, 'stopped leading');
    return outcome;
  }

  /**
   * Renews until the renew deadline passes without a renewal, then steps down.
   * The deadline is kept by the clock, not by the answers: a renewal counts from
   * when its try began (the others measure the lease from no earlier than that),
   * and each try is cut off by the deadline, so a request hanging in a partition
   * cannot keep us leading past it. Stepping down at renewDeadline, before any
   * other candidate may take the lease at leaseDuration, is what keeps two
   * leaders from acting at once.
   */
  private async renewLoop(leaderCtl: AbortController, acquiredAt: number): Promise<void> {
    let renewedAt = acquiredAt;
    while (!leaderCtl.signal.aborted) {
      const deadline = renewedAt + this.o.renewDeadlineMs;
      const wait = Math.min(this.o.retryPeriodMs, deadline - Date.now());
      await sleep(Math.max(0, wait), undefined, { signal: leaderCtl.signal }).catch(() => {});
      if (leaderCtl.signal.aborted) return;
      const started = Date.now();
      const left = deadline - started;
      // A try that hangs is cut off with time left for another before the deadline.
      const tryMs = Math.min(left, this.o.renewDeadlineMs / 2);
      if (left > 0 && (await this.tryAcquireOrRenew(this.bounded(leaderCtl.signal, tryMs)))) {
        renewedAt = started;
      } else if (Date.now() >= deadline) {
        this.log.error('could not renew the lease before the renew deadline; stepping down');
        leaderCtl.abort();
        return;
      }
    }
  }

  /** `signal`, also aborted after `ms`. */
  private bounded(signal: AbortSignal, ms: number): AbortSignal {
    return AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, ms))]);
  }

  /** One try: create the lease, take an expired one, or renew our own. */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    const now = new Date();
    const mine: LeaseSpec = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    // Fast path, as client-go's: while we lead, renew the lease we last wrote in
    // one request; a conflict (someone else wrote it) falls back to reading it.
    const held = this.written;
    if (this.leading && held?.spec?.holderIdentity === this.o.identity) {
      const renewed = await this.write(
        { ...held, spec: { ...held.spec, renewTime: mine.renewTime } },
        signal,
      ).catch((err: unknown) => (isConflict(err) ? undefined : this.failed(err)));
      if (renewed !== undefined) return renewed;
    }
    let lease: Lease;
    try {
      lease = await this.client.get<Lease>(Leases, this.o.name, this.o.namespace, signal);
    } catch (err) {
      if (!isNotFound(err)) return this.failed(err);
      try {
        this.written = await this.client.create<Lease>(
          Leases,
          {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.o.name, namespace: this.o.namespace },
            spec: mine,
          },
          { signal },
        );
        this.observe(mine);
        return true;
      } catch (createErr) {
        return isAlreadyExists(createErr) ? false : this.failed(createErr);
      }
    }

    const spec = lease.spec ?? {};
    this.observe(spec);
    const othersHold = spec.holderIdentity && spec.holderIdentity !== this.o.identity;
    const expired = Date.now() > (this.observed?.at ?? 0) + (spec.leaseDurationSeconds ?? 15) * 1000;
    if (othersHold && !expired) return false;

    const next: LeaseSpec =
      spec.holderIdentity === this.o.identity
        ? { ...spec, renewTime: mine.renewTime, leaseDurationSeconds: mine.leaseDurationSeconds }
        : { ...mine, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
    try {
      return await this.write({ ...lease, spec: next }, signal);
    } catch (err) {
      return isConflict(err) ? false : this.failed(err);
    }
  }

  /** Updates the lease, keeping what the server answered for the next renewal. */
  private async write(lease: Lease, signal: AbortSignal | undefined): Promise<true> {
    this.written = await this.client.update<Lease>(Leases, lease, signal);
    this.observe(lease.spec ?? {});
    return true;
  }

  /** Gives the lease up: empty holder and a one-second duration, as client-go's ReleaseOnCancel. */
  private async release(): Promise<void> {
    try {
      const lease = await this.client.get<Lease>(Leases, this.o.name, this.o.namespace);
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      const now = microTime();
      await this.client.update(Leases, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      });
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn({ err }, 'could not release the lease; the next leader waits for it to expire');
    }
  }

  private observe(spec: LeaseSpec): void {
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
  }

  private failed(err: unknown): false {
    this.log.warn({ err }, 'leader election request failed');
    return false;
  }
}
