// A Kubernetes LabelSelector as a CRD field (matchLabels + matchExpressions),
// with the API server's own rules as CEL: In and NotIn need values, Exists and
// DoesNotExist take none. Read against labels by src/runtime/label-selector.ts.
import Type, { type TObjectOptions } from 'typebox';
import { cel } from './openapi.ts';

const SelectorRequirement = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 317 }),
    operator: Type.Union([
      Type.Literal('In'),
      Type.Literal('NotIn'),
      Type.Literal('Exists'),
      Type.Literal('DoesNotExist'),
    ]),
    values: Type.Optional(Type.Array(Type.String({ maxLength: 63 }), { maxItems: 64 })),
  },
  {
    ...cel({
      rule: "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
      message: 'In and NotIn need values; Exists and DoesNotExist take none',
    }),
  },
);

/** A LabelSelector field; `options` carries its description and any CEL of its own. */
export function LabelSelectorSchema(options: TObjectOptions) {
  return Type.Object(
    {
      matchLabels: Type.Optional(
        Type.Record(Type.String(), Type.String({ maxLength: 63 }), { maxProperties: 32 }),
      ),
      matchExpressions: Type.Optional(Type.Array(SelectorRequirement, { maxItems: 32 })),
    },
    options,
  );
}
