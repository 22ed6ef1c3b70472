import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import {
  ChecksumError,
  checksumAlgorithm,
  digestFromChecksumFile,
  verifyImageChecksum,
} from '../../../../src/baremetal/hosts/image-checksum.ts';

const IMAGE = Buffer.from('a live ISO, or something standing for one\n'.repeat(1000));
const sha256 = createHash('sha256').update(IMAGE).digest('hex');
const md5 = createHash('md5').update(IMAGE).digest('hex');
const sha512 = createHash('sha512').update(IMAGE).digest('hex');

describe('the checksum algorithm', () => {
  const rows: [string, string | undefined, string | undefined][] = [
    [md5, undefined, 'md5'],
    [sha256, 'auto', 'sha256'],
    [sha512, 'AUTO', 'sha512'],
    [sha256, 'sha256', 'sha256'],
    [md5, 'md5', 'md5'],
    ['abc', undefined, undefined],
    [sha256, 'crc32', undefined],
  ];
  for (const [digest, type, want] of rows)
    it(`is ${want ?? 'none'} for a ${digest.length}-digit digest with checksumType ${type ?? '(none)'}`, () => {
      assert.equal(checksumAlgorithm(digest, type), want);
    });
});

describe('a checksum file', () => {
  const url = 'http://images.example/live/nwos-1.2.iso';
  it("gives the digest on the line naming the image's file (sha256sum's form, binary mark too)", () => {
    const text = `# comment\n${'1'.repeat(64)}  other.iso\n${sha256.toUpperCase()} *nwos-1.2.iso\n`;
    assert.equal(digestFromChecksumFile(text, url), sha256);
  });
  it('gives its one bare digest', () => {
    assert.equal(digestFromChecksumFile(`${sha256}\n`, url), sha256);
  });
  it('gives none when no line names the image', () => {
    assert.equal(digestFromChecksumFile(`${sha256}  other.iso\n${md5}  more.iso\n`, url), undefined);
  });
});

describe('verifying an image before its BMC is given it', () => {
  let server: Server;
  let base = '';
  let fetched = 0;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/live.iso') {
        fetched++;
        res.end(IMAGE);
      } else if (req.url === '/SHA256SUMS') res.end(`${sha256}  live.iso\n`);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => server.close());

  it('fetches nothing when no checksum is given', async () => {
    const before = fetched;
    assert.equal(await verifyImageChecksum({ url: `${base}/live.iso` }), undefined);
    assert.equal(fetched, before);
  });

  it('takes an image whose digest is the checksum, whatever the algorithm', async () => {
    for (const [checksum, algorithm] of [
      [sha256, 'sha256'],
      [md5, 'md5'],
      [sha512, 'sha512'],
    ] as const)
      assert.deepEqual(await verifyImageChecksum({ url: `${base}/live.iso`, checksum }), {
        algorithm,
        digest: checksum,
      });
  });

  it('takes the digest from a checksum file at a URL', async () => {
    const got = await verifyImageChecksum({ url: `${base}/live.iso`, checksum: `${base}/SHA256SUMS` });
    assert.equal(got?.digest, sha256);
  });

  it('refuses an image whose digest differs, saying both', async () => {
    const wrong = '0'.repeat(64);
    await assert.rejects(
      verifyImageChecksum({ url: `${base}/live.iso`, checksum: wrong, checksumType: 'sha256' }),
      (err: unknown) =>
        err instanceof ChecksumError &&
        err.kind === 'mismatch' &&
        err.message.includes(sha256) &&
        err.message.includes(wrong),
    );
  });

  it('refuses a checksum that is no digest of its type, and an image it cannot fetch', async () => {
    await assert.rejects(
      verifyImageChecksum({ url: `${base}/live.iso`, checksum: md5, checksumType: 'sha256' }),
      (err: unknown) => err instanceof ChecksumError && err.kind === 'badChecksum',
    );
    await assert.rejects(
      verifyImageChecksum({ url: `${base}/gone.iso`, checksum: sha256 }),
      (err: unknown) =>
        err instanceof ChecksumError && err.kind === 'unfetchable' && /HTTP 404/.test(err.message),
    );
  });
});
