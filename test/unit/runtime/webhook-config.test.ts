import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validatingWebhookConfiguration, type WebhookEndpoint } from '../../../src/runtime/webhook-config.ts';

const hook = (kind: string): WebhookEndpoint => ({
  name: `v${kind}.test.nodewarden.dev`,
  path: `/validate-${kind}`,
  rules: [
    { apiGroups: ['test.nodewarden.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: [kind] },
  ],
});

type Built = { webhooks: { name: string; clientConfig: Record<string, unknown> }[] };

describe('validatingWebhookConfiguration', () => {
  it('calls each webhook of one configuration at its own path behind the Service', () => {
    const built = validatingWebhookConfiguration({ name: 'x', service: { namespace: 'ns', name: 'svc' } }, [
      hook('widgets'),
      hook('gadgets'),
    ]) as unknown as Built;
    assert.deepEqual(
      built.webhooks.map((w) => [w.name, (w.clientConfig.service as { path: string }).path]),
      [
        ['vwidgets.test.nodewarden.dev', '/validate-widgets'],
        ['vgadgets.test.nodewarden.dev', '/validate-gadgets'],
      ],
    );
  });

  it('appends each path to a bare base URL (an operator outside the cluster)', () => {
    const built = validatingWebhookConfiguration(
      { name: 'x', url: 'https://127.0.0.1:9443', caBundle: 'Q0E=' },
      [hook('widgets'), hook('gadgets')],
    ) as unknown as Built;
    assert.deepEqual(
      built.webhooks.map((w) => w.clientConfig.url),
      ['https://127.0.0.1:9443/validate-widgets', 'https://127.0.0.1:9443/validate-gadgets'],
    );
  });
});

describe('validatingWebhookConfiguration under a base URL with a path', () => {
  it("puts every webhook's path under it (the operator's --webhook-url)", () => {
    const built = validatingWebhookConfiguration(
      { name: 'x', url: 'https://10.0.0.1:9443/prefix/', urlIsBase: true },
      [hook('widgets'), hook('gadgets')],
    ) as unknown as Built;
    assert.deepEqual(
      built.webhooks.map((w) => w.clientConfig.url),
      ['https://10.0.0.1:9443/prefix/validate-widgets', 'https://10.0.0.1:9443/prefix/validate-gadgets'],
    );
  });
});
