import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderTemplate, TemplateError } from '../../../../src/tenant/services/template.ts';

describe('haproxy.cfg templates', () => {
  it('substitutes values, with or without spaces inside the braces', () => {
    assert.equal(
      renderTemplate('bind :{{port}} # {{ name }}\n', { port: 6443, name: 'api' }),
      'bind :6443 # api\n',
    );
  });

  it('repeats a loop body per item, and a block tag alone on its line leaves no blank line', () => {
    const src = 'backend b\n  {{#each servers}}\n  server {{name}} {{ip}}\n  {{/each}}\nend\n';
    const got = renderTemplate(src, {
      servers: [
        { name: 'a', ip: '1' },
        { name: 'b', ip: '2' },
      ],
    });
    assert.equal(got, 'backend b\n  server a 1\n  server b 2\nend\n');
    assert.equal(renderTemplate(src, { servers: [] }), 'backend b\nend\n');
  });

  it('keeps block tags inline when text shares their line', () => {
    assert.equal(renderTemplate('[{{#each xs}}{{v}},{{/each}}]', { xs: [{ v: 1 }, { v: 2 }] }), '[1,2,]');
  });

  it('lets an inner loop see the outer item (the worker config: ports × backends)', () => {
    const src = '{{#each ports}}\n{{#each backends}}\n{{name}}:{{port}}\n{{/each}}\n{{/each}}\n';
    const got = renderTemplate(src, {
      ports: [{ port: 1 }, { port: 2 }],
      backends: [{ name: 'x' }, { name: 'y' }],
    });
    assert.equal(got, 'x:1\ny:1\nx:2\ny:2\n');
  });

  const errors: [string, string, RegExp][] = [
    [
      'an unknown variable, with the ones that exist',
      'a\n{{ nope }}',
      /line 2: unknown variable nope \(here: port, xs\)/,
    ],
    ['a tag it cannot read', 'x {{ port | upper }}', /line 1: cannot read \{\{ port \| upper \}\}/],
    ['an unclosed loop', '{{#each xs}}\nx\n', /line 1: \{\{#each xs\}\} is never closed/],
    ['a stray end', 'x\n{{/each}}', /line 2: \{\{\/each\}\} without an \{\{#each\}\}/],
    ['an unclosed brace', 'ok\n\nbind {{port', /line 3: unclosed \{\{/],
    ['a list used as a value', '{{xs}}', /line 1: xs is a list; use \{\{#each xs\}\}/],
    ['a loop over a value', '{{#each port}}{{/each}}', /line 1: port is not a list/],
  ];
  for (const [what, src, message] of errors)
    it(`refuses ${what}`, () => {
      assert.throws(
        () => renderTemplate(src, { port: 1, xs: [] }),
        (e: unknown) => {
          assert.ok(e instanceof TemplateError);
          assert.match(e.message, message);
          return true;
        },
      );
    });
});
