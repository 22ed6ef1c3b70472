// Every haproxy.cfg nodewarden renders is judged by HAProxy itself (haproxy -c).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Backend,
  renderControlPlaneConfig,
  renderWorkerConfig,
} from '../../../../src/tenant/services/haproxy-config.ts';
import { haproxyCheck } from './fixtures.ts';

const ctx = { cluster: 'blue', namespace: 'tenants' };
const v4 = (n: number): Backend[] =>
  Array.from({ length: n }, (_, i) => ({ name: `cp-${i}`, ip: `192.168.10.${10 + i}` }));
const v6: Backend[] = [
  { name: 'cp-1', ip: 'fd00:10::11' },
  { name: 'cp-0', ip: 'fd00:10::10' },
  { name: 'cp-2', ip: '2001:db8::ff' },
];

/** The `server` lines of a config, as HAProxy will read them. */
const servers = (cfg: string) => [...cfg.matchAll(/^\s*server (\S+) (\S+)/gm)].map((m) => `${m[1]} ${m[2]}`);

const CUSTOM_CONTROL_PLANE = `# every documented variable: {{cluster}} {{namespace}}
global
  maxconn 2000
defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h
listen api
  bind 127.0.0.1:{{frontendPort}}
  balance leastconn
  {{#each backends}}
  server {{name}}-{{port}} {{address}} check # {{ip}} {{host}}
  {{/each}}
`;

const CUSTOM_WORKER = `# {{cluster}} {{namespace}}
defaults
  mode tcp
  timeout connect 5s
  timeout client 1m
  timeout server 1m
{{#each ports}}
listen ingress-{{port}}
  bind :{{port}}
  {{#each backends}}
  server {{name}} {{host}}:{{port}} check # {{ip}}
  {{/each}}
{{/each}}
`;

describe('control-plane haproxy.cfg', () => {
  for (const [what, backends] of [
    ['no backend', v4(0)],
    ['one backend', v4(1)],
    ['three backends', v4(3)],
    ['IPv6 backends', v6],
  ] as const)
    it(`passes haproxy -c with ${what}, built-in and user template`, () => {
      for (const template of [undefined, CUSTOM_CONTROL_PLANE]) {
        const cfg = renderControlPlaneConfig(ctx, backends, template);
        const verdict = haproxyCheck(cfg);
        assert.ok(verdict.valid, `${verdict.output}\n${cfg}`);
        assert.equal(servers(cfg).length, backends.length);
      }
    });

  it('sends the API port to every host by name, sorted, with /readyz checks over TLS as the anchor', () => {
    const cfg = renderControlPlaneConfig(ctx, v6);
    assert.deepEqual(servers(cfg), [
      'cp-0 [fd00:10::10]:6443',
      'cp-1 [fd00:10::11]:6443',
      'cp-2 [2001:db8::ff]:6443',
    ]);
    assert.match(cfg, /^\s*bind :6443$/m);
    assert.match(cfg, /^\s*option httpchk GET \/readyz$/m);
    assert.match(cfg, /^\s*http-check expect status 200$/m);
    assert.match(cfg, /^\s*default-server check check-ssl verify none inter 5s downinter 2s fall 4$/m);
    for (const t of ['connect 30s', 'client 600s', 'server 600s'])
      assert.match(cfg, new RegExp(`timeout ${t}`));
  });

  it('hands a user template every documented variable', () => {
    const cfg = renderControlPlaneConfig(ctx, v4(1), CUSTOM_CONTROL_PLANE);
    assert.match(cfg, /^# every documented variable: blue tenants$/m);
    assert.match(
      cfg,
      /^\s*server cp-0-6443 192\.168\.10\.10:6443 check # 192\.168\.10\.10 192\.168\.10\.10$/m,
    );
  });
});

describe('worker haproxy.cfg', () => {
  for (const [what, ports, backends] of [
    ['no backend', [30002], v4(0)],
    ['one port, one backend', [30002], v4(1)],
    ['ten ports, three backends', Array.from({ length: 10 }, (_, i) => 30002 + i), v4(3)],
    ['IPv6 backends', [30100, 30101], v6],
  ] as const)
    it(`passes haproxy -c with ${what}, built-in and user template`, () => {
      for (const template of [undefined, CUSTOM_WORKER]) {
        const cfg = renderWorkerConfig(ctx, ports, backends, template);
        const verdict = haproxyCheck(cfg);
        assert.ok(verdict.valid, `${verdict.output}\n${cfg}`);
        assert.equal(servers(cfg).length, ports.length * backends.length);
      }
    });

  it('has one frontend per port, each to the same port on every worker, with TCP checks', () => {
    const cfg = renderWorkerConfig(ctx, [30003, 30002], v6.slice(0, 2));
    assert.deepEqual(
      [...cfg.matchAll(/^\s*bind :(\d+)$/gm)].map((m) => m[1]),
      ['30002', '30003'],
    );
    assert.deepEqual(servers(cfg), [
      'cp-0 [fd00:10::10]:30002',
      'cp-1 [fd00:10::11]:30002',
      'cp-0 [fd00:10::10]:30003',
      'cp-1 [fd00:10::11]:30003',
    ]);
    assert.equal([...cfg.matchAll(/^\s*tcp-check connect$/gm)].length, 2);
  });
});

describe('the check itself', () => {
  it('fails a config HAProxy cannot read (so the checks above can fail)', () => {
    const cfg = renderControlPlaneConfig(ctx, v4(1)).replace('bind :6443', 'bind :6443 no-such-keyword');
    assert.equal(haproxyCheck(cfg).valid, false);
  });
});
