// The pieces of application rules below the routes (lib/rules/): placeholders filled with a
// caller's values, bound rules and views kept per distinct caller shape, and the hooks'
// transaction handle.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { buildRegistry } from '../../lib/registry/index.js'
import { defineResource } from '../../lib/define.js'
import { memoryStore } from '../../lib/stores/memory.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import type { Store } from '../../lib/stores/store.js'
import { compileRules, fillPlaceholders } from '../../lib/rules/compile.js'
import type { ModelRules } from '../../lib/rules/compile.js'
import { createViews } from '../../lib/rules/view.js'
import { transactionHandle } from '../../lib/rules/write.js'
import type { ApplicationRules } from '../../lib/rules/types.js'

const Note = Type.Object({
  id: Type.Readonly(Type.String()),
  ownerId: Type.String(),
  level: Type.Integer(),
  text: Type.String(),
  stamp: Type.Readonly(Type.Optional(Type.String()))
}, { additionalProperties: false })

function setUp (rules: ApplicationRules<any, any>, store: Store = memoryStore()) {
  const definition = defineResource({ name: 'notes', singular: 'note', schema: Note, store, ...rules })
  const [notes] = buildRegistry([definition])
  const compiled = compileRules(notes, definition) as ModelRules
  const rulesOf = (model: ResourceModel) => model === notes ? compiled : null
  return { notes, compiled, rulesOf, views: createViews([notes], rulesOf) }
}

t.test('placeholders take the caller\'s values as literals, never as filter text', async t => {
  const rule = "ownerId eq @principal.user and level le @principal.level and text ne '@principal.user'"
  t.equal(fillPlaceholders(rule, { user: "o'brien", level: 3 }), "ownerId eq 'o''brien' and level le 3 and text ne '@principal.user'")
  t.equal(fillPlaceholders(rule, null), "ownerId eq null and level le null and text ne '@principal.user'", 'no caller: null')
  t.equal(fillPlaceholders(rule, 'a string principal'), "ownerId eq null and level le null and text ne '@principal.user'")
  t.equal(fillPlaceholders('x eq @principal.flag', { flag: true }), 'x eq true')
  t.equal(fillPlaceholders('x eq @principal.n', { n: Number.NaN }), "x eq 'NaN'", 'a number no literal can write is text')
  t.equal(fillPlaceholders('x eq @principal.when', { when: { toString: () => 'then' } }), "x eq 'then'")
})

t.test('a function rule may return null or nothing for every record, and fails the request when its text is wrong', async t => {
  const { compiled } = setUp({ rules: { read: (caller: { user: string } | null) => caller === null ? null : caller.user === 'all' ? '' : caller.user === 'bad' ? 'nonesuch eq 1' : 'ownerId eq @principal.user' } })
  t.equal(compiled.read?.(null), null)
  t.equal(compiled.read?.({ user: 'all' }), null)
  t.equal(compiled.read?.({ user: 'ann' })?.text, "ownerId eq 'ann'")
  t.equal(compiled.read?.({ user: 'ann' }), compiled.read?.({ user: 'ann' }), 'bound once per text')
  t.throws(() => compiled.read?.({ user: 'bad' }), { name: 'TypeError', message: "notes.rules.read: unknown field 'nonesuch' in 'nonesuch eq 1'" })
})

t.test('bound rules and views are kept for a bounded number of distinct callers', async t => {
  const { compiled, views, notes } = setUp({ rules: { read: 'ownerId eq @principal.user' } })
  const first = compiled.read?.({ user: 'u0' })
  const firstView = views.forCaller({ user: 'u0' })(notes)
  t.equal(views.forCaller({ user: 'u0' })(notes), firstView, 'one view per caller shape')
  for (let i = 1; i <= 500; i++) views.forCaller({ user: `u${i}` })(notes)
  t.not(compiled.read?.({ user: 'u0' }), first, 'the bound rule was made again once the cache started over')
  t.not(views.forCaller({ user: 'u0' })(notes), firstView, 'so was the view')
  t.same(views.forCaller({ user: 'u0' })(notes).visible, firstView.visible)
})

t.test('no rules: every caller gets the registered models', async t => {
  const { views, notes } = setUp({ serverValues: { stamp: { on: 'write', value: () => 'x' } } })
  t.equal(views.forCaller({ user: 'ann' })(notes), notes)
  t.equal(views.writable({ user: 'ann' }, notes), notes)
})

t.test('the writable view narrows the readable one by the write rule', async t => {
  const onlyWrite = setUp({ rules: { write: 'ownerId eq @principal.user' } })
  t.same(onlyWrite.views.writable({ user: 'ann' }, onlyWrite.notes).visible, { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['ownerId'] }, right: { kind: 'literal', type: 'string', value: 'ann' } })
  const both = setUp({ rules: { read: 'level ge 1', write: 'ownerId eq @principal.user' } })
  t.equal(both.views.writable({ user: 'ann' }, both.notes).visible?.kind, 'and')
  const none = setUp({ rules: { read: 'level ge 1' } })
  const view = none.views.forCaller({ user: 'ann' })(none.notes)
  t.equal(none.views.writable({ user: 'ann' }, none.notes), view, 'without a write rule: what the caller sees')
})

t.test('the hooks\' transaction handle: resources by name, in the write\'s store only', async t => {
  const store = memoryStore()
  const { notes, rulesOf } = setUp({ serverValues: { stamp: { on: 'create', value: ({ principal }) => `by ${String(principal)}` } } }, store)
  const models = new Map([['notes', notes]])
  const elsewhere = memoryStore()
  const handle = transactionHandle(store, store, models, () => store, rulesOf, 'ann')
  const made = await handle.create('notes', { ownerId: 'ann', level: 2, text: 'b' })
  t.equal(made.stamp, 'by ann', 'server values apply to what hooks create')
  await handle.create('notes', { id: 'fixed', ownerId: 'bob', level: 1, text: 'a' })
  t.same((await handle.list('notes', { sort: 'level' })).map(note => note.text), ['a', 'b'])
  t.same((await handle.list('notes', { filter: 'level gt 1' })).map(note => note.text), ['b'])
  t.same((await handle.list('notes', { sort: '-level', limit: 1 })).map(note => note.text), ['b'])
  await t.rejects(handle.list('notes', { sort: 'nonesuch' }), { name: 'TypeError', message: "transaction: notes sort 'nonesuch': unknown field 'nonesuch'" })
  t.equal((await handle.update('notes', 'fixed', { level: 5 })).level, 5)
  t.equal((await handle.get('notes', 'fixed'))?.text, 'a', 'update keeps the fields it is not given')
  await t.rejects(handle.update('notes', 'gone', { level: 1 }), { message: 'transaction: notes gone does not exist' })
  t.equal(await handle.remove('notes', 'fixed'), true)
  t.equal(await handle.remove('notes', 'fixed'), false)
  t.equal(await handle.get('notes', 'fixed'), null)
  await t.rejects(handle.get('nonesuch', 'x'), { message: "transaction: no resource 'nonesuch'" })
  const split = transactionHandle(store, store, models, () => elsewhere, rulesOf, 'ann')
  await t.rejects(split.get('notes', 'x'), { message: 'transaction: notes is kept in another store than this write, out of its transaction' })
})
