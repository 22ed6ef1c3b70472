// A throwaway "Flatcar release" for the download tests: small files signed by
// keys made with real gpg in a private GNUPGHOME, served over loopback HTTP
// with every request counted.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLATCAR_PXE, signatureOf } from '../../../../src/kvm/vm/os-release.ts';

export const gpgMissing = ['gpg', 'gpgv', 'gpgconf'].find(
  (tool) => spawnSync(tool, ['--version']).status !== 0,
);

/** A GNUPGHOME holding one signing key per uid given. */
export class Signer {
  readonly home = mkdtempSync(join(tmpdir(), 'nw-gpg-'));
  readonly uid: string;

  constructor(uid: string) {
    this.uid = uid;
    this.gpg('--quick-gen-key', uid, 'ed25519', 'sign', 'never');
  }

  gpg(...args: string[]): Buffer {
    return execFileSync(
      'gpg',
      ['--homedir', this.home, '--batch', '--pinentry-mode', 'loopback', '--passphrase', '', ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  }

  publicKey(): string {
    return this.gpg('--armor', '--export', this.uid).toString();
  }

  sign(file: string): Buffer {
    this.gpg('--yes', '-u', this.uid, '--detach-sign', '-o', `${file}.sig`, file);
    return readFileSync(`${file}.sig`);
  }

  close(): void {
    spawnSync('gpgconf', ['--homedir', this.home, '--kill', 'gpg-agent']);
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** The release's files by name: the PXE pair (small stand-ins) and their signatures by `signer`. */
export function signedRelease(signer: Signer): Map<string, Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'nw-release-'));
  try {
    const files = new Map<string, Buffer>();
    for (const [name, size] of [
      [FLATCAR_PXE.kernel, 64 * 1024],
      [FLATCAR_PXE.initrd, 256 * 1024],
    ] as const) {
      const body = Buffer.alloc(size, `${name} `);
      writeFileSync(join(dir, name), body);
      files.set(name, body);
      files.set(signatureOf(name), signer.sign(join(dir, name)));
    }
    return files;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A mirror on loopback serving /<version>/<file>; `hits` counts GETs per path. */
export class LoopbackMirror {
  readonly hits = new Map<string, number>();
  private server: Server | undefined;
  /** Each response is held this long, so concurrent downloads overlap. */
  delayMs = 0;

  readonly version: string;
  readonly files: Map<string, Buffer>;

  constructor(version: string, files: Map<string, Buffer>) {
    this.version = version;
    this.files = files;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const path = req.url ?? '';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const body = path.startsWith(`/${this.version}/`)
        ? this.files.get(path.slice(this.version.length + 2))
        : undefined;
      setTimeout(() => {
        if (!body) res.writeHead(404).end();
        else res.writeHead(200, { 'content-length': body.length }).end(body);
      }, this.delayMs);
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
  }

  totalHits(): number {
    return [...this.hits.values()].reduce((a, b) => a + b, 0);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }
}
