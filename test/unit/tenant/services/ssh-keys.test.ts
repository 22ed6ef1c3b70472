// Authorized keys are read as sshd reads them; ssh-keygen, which nobody here
// wrote, is the referee: what we accept it accepts, what we refuse it refuses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAuthorizedKey } from '../../../../src/tenant/services/ssh-keys.ts';
import { sshKeygenAccepts, sshPublicKey } from './fixtures.ts';

const ed25519 = sshPublicKey('ed25519', undefined, 'alice@laptop');
const [edType, edBlob] = ed25519.split(' ') as [string, string];

/** A blob in SSH wire format from its strings, to build keys ssh-keygen never would. */
const wire = (...parts: (string | Buffer)[]) =>
  Buffer.concat(
    parts.flatMap((p) => {
      const b = typeof p === 'string' ? Buffer.from(p) : p;
      const len = Buffer.alloc(4);
      len.writeUInt32BE(b.length);
      return [len, b];
    }),
  ).toString('base64');

describe('authorized keys', () => {
  for (const [type, bits] of [
    ['ed25519', undefined],
    ['rsa', 2048],
    ['ecdsa', 256],
    ['ecdsa', 384],
    ['ecdsa', 521],
  ] as const)
    it(`accepts a ${type}${bits ? `-${bits}` : ''} key from ssh-keygen, comment kept`, () => {
      const line = sshPublicKey(type, bits, 'bob@example');
      const key = parseAuthorizedKey(`  ${line}\n`);
      assert.equal(key.line, line);
      assert.equal(key.comment, 'bob@example');
      assert.equal(key.type, line.split(' ')[0]);
    });

  it('accepts sshd options before the type', () => {
    const key = parseAuthorizedKey(`no-pty,from="10.0.0.0/8" ${ed25519}`);
    assert.equal(key.type, 'ssh-ed25519');
    assert.equal(key.line, `no-pty,from="10.0.0.0/8" ${ed25519}`);
  });

  const bad: [string, string, RegExp][] = [
    [
      'the type on the line differs from the key inside',
      `ssh-rsa ${edBlob}`,
      /says ssh-rsa but the key inside is ssh-ed25519/,
    ],
    ['the blob is cut short', `${edType} ${edBlob.slice(0, 40)}`, /cut short/],
    ['the blob is not base64', `${edType} ${edBlob.slice(0, 20)}!${edBlob.slice(21)}`, /not valid base64/],
    ['there is no key after the type', 'ssh-ed25519', /no key after it/],
    ['no type is named', 'AAAAC3NzaC1lZDI1NTE5 alice', /names no key type/],
    [
      'it is a DSA key',
      `ssh-dss ${wire('ssh-dss', 'p', 'q', 'g', 'y')}`,
      /DSA key, which OpenSSH no longer accepts/,
    ],
    [
      'an Ed25519 key has the wrong length',
      `ssh-ed25519 ${wire('ssh-ed25519', Buffer.alloc(31, 1))}`,
      /must be 32 bytes, this one is 31/,
    ],
    ['bytes trail the key', `ssh-ed25519 ${wire('ssh-ed25519', Buffer.alloc(32, 1), 'x')}`, /stray bytes/],
    [
      'an ECDSA key names another curve',
      `ecdsa-sha2-nistp256 ${wire('ecdsa-sha2-nistp256', 'nistp384', Buffer.alloc(65, 4))}`,
      /curve nistp256 but the key inside is on nistp384/,
    ],
    [
      'an RSA key is too short',
      `ssh-rsa ${wire('ssh-rsa', Buffer.from([1, 0, 1]), Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 0xff)]))}`,
      /RSA key of 512 bits is too short/,
    ],
    ['two keys are pasted as one', `${ed25519}\n${ed25519}`, /more than one line/],
    ['it is empty', '   ', /is empty/],
    ['it is a comment', `# ${ed25519}`, /is a comment/],
  ];
  for (const [what, line, why] of bad)
    it(`refuses a key when ${what}, saying so (and so does ssh-keygen)`, () => {
      assert.throws(() => parseAuthorizedKey(line), why);
      // DSA is refused by policy (sshd disables it), not by format: ssh-keygen still reads it.
      if (!line.includes('\n') && line.trim() && !line.startsWith('ssh-dss'))
        assert.equal(sshKeygenAccepts(line), false, 'ssh-keygen accepted it');
    });

  it('agrees with ssh-keygen on the keys it accepts', () => {
    assert.equal(sshKeygenAccepts(ed25519), true);
  });
});
