import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CONSOLE_HEADER, objectBody, RouteTable, reply } from '../../../src/cluster/infra/kit/routes.ts';
import { HttpError } from '../../../src/runtime/http.ts';

class Refused extends Error {
  readonly code = 409;
}

let guarded = false;
let ticks = 0;
const table = new RouteTable({
  beforeEach: () => ticks++,
  guard: () => (guarded ? reply(503, { error: 'injected' }, { 'retry-after': '1' }) : undefined),
  statusOf: (err) => (err instanceof Refused ? err.code : undefined),
})
  .add('GET', '/settings', () => reply(200, { open: true }), { open: true })
  .add('GET', '/things', ({ url }) => reply(200, { filter: url.searchParams.get('q') }))
  .add('POST', '/things', ({ body }) => reply(201, objectBody(body)))
  .add('GET', '/things/:id', ({ params }) => reply(200, params))
  .add('GET', '/things/:id/parts/:part', ({ params }) => reply(200, params))
  .add('DELETE', '/things/:id', ({ params }) => {
    if (params.id === 'held') throw new Refused('it is held');
    if (params.id === 'gone') throw new HttpError(404, 'no thing "gone"');
    throw new Error('boom');
  });

const server = http.createServer(table.listener);
let base = '';
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(
  () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections(); // fetch keeps connections alive
    }),
);

async function call(method: string, path: string, body?: string) {
  const res = await fetch(base + path, { method, body });
  return {
    status: res.status,
    body: (await res.json()) as unknown,
    retryAfter: res.headers.get('retry-after'),
  };
}

describe('the route table', () => {
  const cases: [string, string, string, string | undefined, number, unknown][] = [
    ['a plain path', 'GET', '/things?q=x', undefined, 200, { filter: 'x' }],
    ['a JSON body', 'POST', '/things', '{"a":1}', 201, { a: 1 }],
    ['an empty body as {}', 'POST', '/things', undefined, 201, {}],
    ['a body that is not an object', 'POST', '/things', '[1]', 400, { error: 'body must be a JSON object' }],
    ['a parameter, URL-decoded', 'GET', '/things/a%2Fb', undefined, 200, { id: 'a/b' }],
    ['two parameters', 'GET', '/things/t/parts/p', undefined, 200, { id: 't', part: 'p' }],
    ['a trailing slash', 'GET', '/things/t/', undefined, 200, { id: 't' }],
    ['an unknown path', 'GET', '/nope', undefined, 404, { error: 'no route GET /nope' }],
    [
      'a deeper unknown path',
      'GET',
      '/things/t/parts',
      undefined,
      404,
      { error: 'no route GET /things/t/parts' },
    ],
    ['a known path, wrong method', 'PUT', '/things', '{}', 405, { error: 'PUT not allowed on /things' }],
    ["a handler's HttpError", 'DELETE', '/things/gone', undefined, 404, { error: 'no thing "gone"' }],
    ['an error statusOf knows', 'DELETE', '/things/held', undefined, 409, { error: 'it is held' }],
    ['any other error', 'DELETE', '/things/x', undefined, 500, { error: 'boom' }],
  ];
  for (const [what, method, path, body, status, want] of cases) {
    it(`answers ${what}: ${status}`, async () => {
      const got = await call(method, path, body);
      assert.deepEqual([got.status, got.body], [status, want]);
    });
  }

  it('runs beforeEach on every request, matched or not', async () => {
    const before = ticks;
    await call('GET', '/things');
    await call('GET', '/nope');
    assert.equal(ticks - before, 2);
  });

  describe('with the guard refusing', () => {
    before(() => {
      guarded = true;
    });
    after(() => {
      guarded = false;
    });

    it('answers guarded routes, and unknown paths, with its reply and headers', async () => {
      for (const path of ['/things', '/nope']) {
        const got = await call('GET', path);
        assert.deepEqual([got.status, got.body, got.retryAfter], [503, { error: 'injected' }, '1']);
      }
    });

    it('lets open routes through', async () => {
      assert.deepEqual((await call('GET', '/settings')).body, { open: true });
    });

    it("lets a console's calls through (its header), so they never take the operator's faults", async () => {
      const res = await fetch(`${base}/things/a`, { headers: { [CONSOLE_HEADER]: '1' } });
      assert.deepEqual([res.status, await res.json()], [200, { id: 'a' }]);
    });
  });
});
