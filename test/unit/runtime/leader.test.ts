// The leader elector's safety rule against a fake API server that can swallow
// requests: a leader cut off from the API server steps down at its renew
// deadline, on its own clock, before any other candidate may take the lease.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaderElector } from '../../../src/runtime/leader.ts';
import { type K8sObject, Leases } from '../../../src/runtime/resources.ts';
import { useFakeApiServer } from './fake-apiserver.ts';

const TIMES = { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 100 };

describe('LeaderElector', () => {
  const t = useFakeApiServer({ retryBaseMs: 5, retryMaxMs: 20 });

  const elector = (identity: string) =>
    new LeaderElector(t.client, { namespace: 'ns', name: 'lock', identity, ...TIMES });

  const renewedAt = () => {
    const lease = t.fake.get(Leases, 'lock', 'ns') as K8sObject & { spec?: { renewTime?: string } };
    return Date.parse(lease.spec?.renewTime ?? '');
  };

  it('steps down at the renew deadline while its renewal hangs, before the lease could pass on', async () => {
    const stop = new AbortController();
    let leading: (() => void) | undefined;
    const led = new Promise<void>((r) => {
      leading = r;
    });
    let steppedDownAt = 0;
    const outcome = elector('a').run(stop.signal, async (signal) => {
      leading?.();
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      steppedDownAt = Date.now();
    });
    await led;
    // Let it renew a few times, then swallow every request.
    await new Promise((r) => setTimeout(r, 500));
    t.fake.blackhole = true;
    const cutAt = Date.now();
    assert.equal(await outcome, 'lost');
    const lastRenewal = renewedAt();
    assert.ok(
      steppedDownAt - lastRenewal <= TIMES.renewDeadlineMs + 100,
      `stepped down ${steppedDownAt - lastRenewal} ms after its last renewal (deadline ${TIMES.renewDeadlineMs})`,
    );
    assert.ok(steppedDownAt - lastRenewal < TIMES.leaseDurationMs, 'before another candidate may take it');
    assert.ok(steppedDownAt - cutAt < TIMES.renewDeadlineMs + 300, 'not held up by the hanging request');
    stop.abort();
  });

  it('renews through a stall shorter than the deadline and keeps leading', async () => {
    const stop = new AbortController();
    let abortedDuringStall = true;
    const outcome = elector('a').run(stop.signal, async (signal) => {
      await new Promise((r) => setTimeout(r, 300));
      t.fake.blackhole = true;
      await new Promise((r) => setTimeout(r, TIMES.renewDeadlineMs / 4));
      t.fake.blackhole = false;
      await new Promise((r) => setTimeout(r, TIMES.leaseDurationMs));
      abortedDuringStall = signal.aborted;
      stop.abort();
    });
    assert.equal(await outcome, 'released');
    assert.equal(abortedDuringStall, false, 'still leading after the stall');
    assert.ok(Date.now() - renewedAt() < TIMES.leaseDurationMs, 'renewed after the stall');
  });

  it('keeps leading when every request is slow, but well inside the deadline', async () => {
    const stop = new AbortController();
    let aborted = true;
    const outcome = elector('a').run(stop.signal, async (signal) => {
      t.fake.delayMs = 300;
      await new Promise((r) => setTimeout(r, 2 * TIMES.leaseDurationMs));
      aborted = signal.aborted;
      t.fake.delayMs = 0;
      stop.abort();
    });
    assert.equal(await outcome, 'released');
    assert.equal(aborted, false, 'still leading');
  });

  it('renews with one PUT a renewal while it leads, reading the lease only to take it', async () => {
    const stop = new AbortController();
    const outcome = elector('a').run(stop.signal, async () => {
      await new Promise((r) => setTimeout(r, 10 * TIMES.retryPeriodMs));
      stop.abort();
    });
    assert.equal(await outcome, 'released');
    const lease = t.fake.requests.filter((r) => r.path.endsWith('/leases/lock'));
    const gets = lease.filter((r) => r.method === 'GET').length;
    const puts = lease.filter((r) => r.method === 'PUT').length;
    // One GET and the create to take it, one GET and one PUT to release it; the rest are renewals.
    assert.equal(gets, 2, `GETs: ${gets}`);
    assert.ok(puts >= 5, `renewals: ${puts - 1}`);
  });

  it('lets a second candidate take the lease only once the holder stopped renewing for a lease duration', async () => {
    const a = elector('a');
    assert.equal(await a.tryAcquireOrRenew(), true);
    const b = elector('b');
    const tookAt = (async () => {
      while (!(await b.tryAcquireOrRenew())) await new Promise((r) => setTimeout(r, 50));
      return Date.now();
    })();
    const lastRenewal = Date.now();
    assert.ok((await tookAt) - lastRenewal >= TIMES.leaseDurationMs, 'waited out the lease');
  });
});
