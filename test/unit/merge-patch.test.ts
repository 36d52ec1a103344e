// Unit tests for lib/merge-patch.ts: RFC 7396 JSON Merge Patch, the semantics of MODIFY (spec
// "Operations": PATCH). The cases are RFC 7396 Appendix A, in its order.
import t from 'tap'
import { mergePatch } from '../../lib/merge-patch.js'

const appendixA: ReadonlyArray<readonly [unknown, unknown, unknown]> = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [['a', 'b'], ['c', 'd'], ['c', 'd']],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }]
]

for (const [target, patch, result] of appendixA) {
  t.test(`merging ${JSON.stringify(patch)} into ${JSON.stringify(target)} gives ${JSON.stringify(result)}`, async t => {
    t.same(mergePatch(target, patch), result)
  })
}

t.test('merging leaves the target untouched', async t => {
  const target = Object.freeze({ a: 1, nested: Object.freeze({ b: 2 }) })
  const result = mergePatch(target, { a: null, nested: { c: 3 } })
  t.same(result, { nested: { b: 2, c: 3 } })
  t.same(target, { a: 1, nested: { b: 2 } })
})

t.test('merging an empty patch copies the target', async t => {
  const target = { a: 1 }
  const result = mergePatch(target, {})
  t.same(result, target)
  t.not(result, target)
})
