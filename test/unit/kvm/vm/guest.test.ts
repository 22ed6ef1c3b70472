import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { GUEST_READY_LINE, VM_HEALTH_PATH } from '../../../../src/api/vm-image.ts';
import { GuestState, serveHealth, watchGuest } from '../../../../src/kvm/vm/guest.ts';

const dir = mkdtempSync(join(tmpdir(), 'nw-guest-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(ok: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    assert.ok(Date.now() < deadline, 'timed out');
    await sleep(20);
  }
}

describe("/healthz follows the guest's ready port", () => {
  it('503 until the guest writes its line on the port (made late, as QEMU makes it), 200 after, 503 once QEMU stopped', async () => {
    const socketPath = join(dir, 'guest.sock');
    const state = new GuestState();
    const health = serveHealth(0, state);
    await new Promise((r) => health.once('listening', r));
    const port = (health.address() as { port: number }).port;
    const status = async (path = VM_HEALTH_PATH) => (await fetch(`http://127.0.0.1:${port}${path}`)).status;
    try {
      // The container follows the port before QEMU made its socket: it retries.
      watchGuest(socketPath, state, () => undefined);
      assert.equal(await status(), 503);
      await sleep(300);
      let guest: Socket | undefined;
      const qemu = createServer((s) => {
        guest = s;
      }).listen(socketPath);
      await until(() => guest !== undefined);
      guest?.write('booting\n');
      await sleep(100);
      assert.equal(await status(), 503, 'another line is not the ready line');
      guest?.write(`${GUEST_READY_LINE}\n`);
      await until(() => state.ready);
      assert.equal(await status(), 200);
      assert.equal(await status('/other'), 404);
      state.running = false;
      assert.equal(await status(), 503, 'QEMU gone: no longer healthy');
      guest?.destroy();
      qemu.close();
    } finally {
      health.close();
    }
  });
});
