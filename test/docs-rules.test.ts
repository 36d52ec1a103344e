// docs/rules.md's multi-tenant example (docs/examples/multi-tenant.ts), over HTTP: one tenant's
// rows do not exist for another on any path (lists and totals, items, nested collections, expand,
// include, related-path filters, writes), tenantId is the server's, taskCount follows the tasks
// (also under parallel writes on PGlite and PostgreSQL, when DATABASE_URL is set), and the page
// shows the program exactly as it is.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineResource, memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, Task } from '../docs/examples/multi-tenant.js'
import { openPglite } from './stores/pglite-db.js'
import { runSchemas } from './stores/run-schemas.js'

const tokens = { acme: 'acme-ann-token', globex: 'globex-gus-token' } as const
type Tenant = keyof typeof tokens
type Item = { readonly id: string } & Record<string, unknown>

/** An id no record has, of the same form as the real ones. */
const madeUp = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'

function call (app: FastifyInstance, tenant: Tenant, method: InjectOptions['method'], url: string, payload?: Record<string, unknown>) {
  return app.inject({ method, url, headers: { authorization: `Bearer ${tokens[tenant]}` }, ...(payload === undefined ? {} : { payload }) })
}

async function create (app: FastifyInstance, tenant: Tenant, resource: 'projects' | 'tasks', fields: Record<string, unknown>): Promise<Item> {
  const res = await call(app, tenant, 'POST', `/v1/${resource}`, fields)
  if (res.statusCode !== 201) throw new Error(`POST /v1/${resource} answered ${res.statusCode}: ${res.body}`)
  return res.json().data[resource.slice(0, -1)] as Item
}

async function read (app: FastifyInstance, tenant: Tenant, url: string): Promise<Item> {
  const res = await call(app, tenant, 'GET', url)
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}: ${res.body}`)
  return res.json().data[url.split('/')[2].slice(0, -1)] as Item
}

/** The ids of a collection response's items. */
const idsOf = (res: LightMyRequestResponse, resource: string): string[] => (res.json().data[resource] as Item[]).map(item => item.id)

/** Acme's roadmap with two tasks, Globex's project with one, made through the API. */
async function fixture (t: Test, store?: Store) {
  const app = await buildApp({ store })
  t.teardown(() => app.close())
  const roadmap = await create(app, 'acme', 'projects', { name: 'Acme roadmap' })
  const plan = await create(app, 'acme', 'tasks', { projectId: roadmap.id, title: 'Acme secret plan' })
  const launch = await create(app, 'acme', 'tasks', { projectId: roadmap.id, title: 'Acme launch' })
  const ledger = await create(app, 'globex', 'projects', { name: 'Globex ledger' })
  const audit = await create(app, 'globex', 'tasks', { projectId: ledger.id, title: 'Globex audit' })
  return { app, roadmap, plan, launch, ledger, audit }
}

/** Two 404s are the same answer when they differ only in the id they name. */
function sameNotFound (t: Test, hidden: LightMyRequestResponse, missing: LightMyRequestResponse, id: string, message: string) {
  t.equal(hidden.statusCode, 404, message)
  t.equal(missing.statusCode, 404)
  t.equal(hidden.headers['content-type'], missing.headers['content-type'])
  t.equal(hidden.headers.etag, undefined)
  t.same(hidden.json(), JSON.parse(missing.body.replaceAll(madeUp, id)), `${message}: the body a made-up id gets`)
}

t.test('a caller lists only its tenant\'s rows, and total counts only those', async t => {
  const { app, roadmap, plan, launch, ledger, audit } = await fixture(t)
  const globex = await call(app, 'globex', 'GET', '/v1/tasks?total=true')
  t.equal(globex.statusCode, 200)
  t.same(idsOf(globex, 'tasks'), [audit.id])
  t.equal(globex.json().meta.total, 1)
  const acme = await call(app, 'acme', 'GET', '/v1/tasks?total=true')
  t.same(idsOf(acme, 'tasks'), [plan.id, launch.id])
  t.equal(acme.json().meta.total, 2)
  t.same(idsOf(await call(app, 'globex', 'GET', '/v1/projects'), 'projects'), [ledger.id])
  t.same(idsOf(await call(app, 'acme', 'GET', '/v1/projects'), 'projects'), [roadmap.id])
  // A page of one: Globex's single task has no next page, whatever Acme holds.
  const paged = await call(app, 'globex', 'GET', '/v1/tasks?pageSize=1&total=true')
  t.same((paged.json().links as Array<{ rel: string }>).map(link => link.rel).filter(rel => rel === 'next'), [])
})

t.test('another tenant\'s row is a 404 on RETRIEVE, HEAD and OPTIONS, as a made-up id is', async t => {
  const { app, plan, roadmap } = await fixture(t)
  for (const [resource, id] of [['tasks', plan.id], ['projects', roadmap.id]]) {
    for (const method of ['GET', 'OPTIONS'] as const) {
      sameNotFound(t, await call(app, 'globex', method, `/v1/${resource}/${id}`), await call(app, 'globex', method, `/v1/${resource}/${madeUp}`), id, `${method} /v1/${resource}/{acme's}`)
    }
    const head = await call(app, 'globex', 'HEAD', `/v1/${resource}/${id}`)
    t.equal(head.statusCode, 404, `HEAD /v1/${resource}/{acme's}`)
    t.equal((await call(app, 'acme', 'GET', `/v1/${resource}/${id}`)).statusCode, 200, 'its own tenant reads it')
  }
})

t.test('another tenant\'s project has no nested collection for the caller', async t => {
  const { app, roadmap, plan, launch } = await fixture(t)
  sameNotFound(t, await call(app, 'globex', 'GET', `/v1/projects/${roadmap.id}/tasks`), await call(app, 'globex', 'GET', `/v1/projects/${madeUp}/tasks`), roadmap.id, 'nested tasks of acme\'s project')
  t.same(idsOf(await call(app, 'acme', 'GET', `/v1/projects/${roadmap.id}/tasks`), 'tasks'), [plan.id, launch.id])
})

t.test('expand and include show only the caller\'s tenant', async t => {
  const { app, roadmap, plan, launch, ledger, audit } = await fixture(t)
  const globex = (await call(app, 'globex', 'GET', '/v1/projects?expand=tasks')).json().data.projects as Item[]
  t.same(globex.map(project => [project.id, (project.tasks as Item[]).map(task => task.id)]), [[ledger.id, [audit.id]]])
  const acme = (await call(app, 'acme', 'GET', '/v1/tasks?expand=project')).json().data.tasks as Item[]
  t.same(acme.map(task => (task.project as Item).id), [roadmap.id, roadmap.id])
  const included = (await call(app, 'acme', 'GET', `/v1/projects/${roadmap.id}?include=tasks`)).json().links as Array<{ rel: string, href: string }>
  t.same(included.filter(link => link.rel === 'tasks').map(link => link.href), [`/v1/tasks/${plan.id}`, `/v1/tasks/${launch.id}`])
})

t.test('a related-path filter cannot find another tenant\'s rows', async t => {
  const { app, roadmap } = await fixture(t)
  const byTitle = `/v1/projects?filter=${encodeURIComponent("tasks/title eq 'Acme secret plan'")}&total=true`
  const globex = await call(app, 'globex', 'GET', byTitle)
  t.equal(globex.statusCode, 200)
  t.same(idsOf(globex, 'projects'), [])
  t.equal(globex.json().meta.total, 0)
  t.same(idsOf(await call(app, 'acme', 'GET', byTitle), 'projects'), [roadmap.id])
  t.same(idsOf(await call(app, 'globex', 'GET', `/v1/tasks?project.name=${encodeURIComponent('Acme roadmap')}`), 'tasks'), [], 'nor a simple filter through a relation')
})

t.test('a filter on tenantId cannot reach another tenant', async t => {
  const { app, audit } = await fixture(t)
  const cases: Array<[string, string[]]> = [
    ["tenantId eq 'acme'", []],
    ["tenantId ne 'globex'", []],
    ["tenantId eq 'acme' or tenantId eq 'globex'", [audit.id]],
    ['tenantId ne null', [audit.id]]
  ]
  for (const [filter, expected] of cases) {
    const res = await call(app, 'globex', 'GET', `/v1/tasks?total=true&filter=${encodeURIComponent(filter)}`)
    t.equal(res.statusCode, 200, filter)
    t.same(idsOf(res, 'tasks'), expected, filter)
    t.equal(res.json().meta.total, expected.length)
  }
  t.same(idsOf(await call(app, 'globex', 'GET', '/v1/tasks?tenantId=acme'), 'tasks'), [], 'nor a simple filter')
  t.same(idsOf(await call(app, 'globex', 'GET', '/v1/tasks?tenantId=acme&tenantId=globex'), 'tasks'), [audit.id])
})

t.test('another tenant\'s row is a 404 on PUT, PATCH and DELETE, and stays as it was', async t => {
  const { app, roadmap, plan } = await fixture(t)
  const before = await call(app, 'acme', 'GET', `/v1/tasks/${plan.id}`)
  const writes = [
    ['PUT', { projectId: roadmap.id, title: 'Taken over' }],
    ['PATCH', { title: 'Taken over' }],
    ['DELETE', undefined]
  ] as const
  for (const [method, body] of writes) {
    sameNotFound(t, await call(app, 'globex', method, `/v1/tasks/${plan.id}`, body), await call(app, 'globex', method, `/v1/tasks/${madeUp}`, body), plan.id, `${method} of acme's task`)
  }
  sameNotFound(t, await call(app, 'globex', 'DELETE', `/v1/projects/${roadmap.id}`), await call(app, 'globex', 'DELETE', `/v1/projects/${madeUp}`), roadmap.id, 'DELETE of acme\'s project')
  const after = await call(app, 'acme', 'GET', `/v1/tasks/${plan.id}`)
  t.equal(after.headers.etag, before.headers.etag, 'same version')
  t.same(after.json(), before.json())
})

t.test('tenantId is set by the server from the caller; a client value is a 400 naming it', async t => {
  const { app, ledger, audit } = await fixture(t)
  t.equal(audit.tenantId, 'globex')
  t.equal(ledger.tenantId, 'globex')
  for (const [method, url, body] of [
    ['POST', '/v1/tasks', { projectId: ledger.id, title: 'Mine now', tenantId: 'acme' }],
    ['PUT', `/v1/tasks/${audit.id}`, { projectId: ledger.id, title: 'Mine now', tenantId: 'acme' }],
    ['PATCH', `/v1/tasks/${audit.id}`, { tenantId: 'acme' }],
    ['POST', '/v1/projects', { name: 'Elsewhere', tenantId: 'acme' }]
  ] as const) {
    const res = await call(app, 'globex', method, url, body)
    t.equal(res.statusCode, 400, `${method} ${url}`)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
    t.same(res.json().invalidParams, [{ name: 'tenantId', reason: 'is read-only and set by the server' }])
  }
  const kept = await call(app, 'globex', 'GET', '/v1/tasks')
  t.same(kept.json().data.tasks, [audit], 'nothing written')
  t.same((await call(app, 'acme', 'GET', '/v1/tasks?total=true')).json().meta.total, 2)
})

t.test('a task cannot join another tenant\'s project: 422, as for a project that does not exist', async t => {
  const { app, roadmap, ledger, audit } = await fixture(t)
  const attempts = [
    ['POST', '/v1/tasks', (projectId: string) => ({ projectId, title: 'Sneak in' })],
    ['PATCH', `/v1/tasks/${audit.id}`, (projectId: string) => ({ projectId })],
    ['PUT', `/v1/tasks/${audit.id}`, (projectId: string) => ({ projectId, title: 'Sneak in' })]
  ] as const
  for (const [method, url, body] of attempts) {
    const foreign = await call(app, 'globex', method, url, body(roadmap.id))
    const missing = await call(app, 'globex', method, url, body(madeUp))
    t.equal(foreign.statusCode, 422, `${method} with acme's project`)
    t.equal(foreign.headers['content-type'], 'application/problem+json; charset=utf-8')
    t.same(foreign.json(), JSON.parse(missing.body.replaceAll(madeUp, roadmap.id)), 'the body a made-up project id gets')
    t.same(foreign.json().invalidParams, [{ name: 'projectId', reason: 'no project has this id' }])
  }
  t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 2, 'acme\'s count unchanged')
  t.equal((await read(app, 'globex', `/v1/projects/${ledger.id}`)).taskCount, 1)
  t.same(await read(app, 'globex', `/v1/tasks/${audit.id}`), audit, 'the task unchanged')
})

t.test('taskCount follows creates, moves and deletes of tasks, in the same write', async t => {
  const { app, roadmap, plan, launch } = await fixture(t)
  const fresh = await create(app, 'acme', 'projects', { name: 'Acme backlog' })
  t.equal(fresh.taskCount, 0, 'a new project has none')
  t.equal(roadmap.taskCount, 0)
  const counted = await call(app, 'acme', 'GET', `/v1/projects/${roadmap.id}`)
  t.equal(counted.json().data.project.taskCount, 2)
  t.equal(counted.headers.etag, '"3"', 'the project was written with each task')

  await create(app, 'acme', 'tasks', { projectId: roadmap.id, title: 'Acme review' })
  t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 3)

  const done = await call(app, 'acme', 'PATCH', `/v1/tasks/${plan.id}`, { done: true })
  t.equal(done.statusCode, 200)
  t.equal(done.json().data.task.done, true)
  t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 3, 'a change within the project counts the same')

  const moved = await call(app, 'acme', 'PATCH', `/v1/tasks/${launch.id}`, { projectId: fresh.id })
  t.equal(moved.statusCode, 200)
  t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 2, 'the project it left')
  t.equal((await read(app, 'acme', `/v1/projects/${fresh.id}`)).taskCount, 1, 'the project it joined')

  t.equal((await call(app, 'acme', 'DELETE', `/v1/tasks/${plan.id}`)).statusCode, 204)
  t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 1)
  t.equal((await call(app, 'acme', 'DELETE', `/v1/tasks/${launch.id}`)).statusCode, 204)
  t.equal((await read(app, 'acme', `/v1/projects/${fresh.id}`)).taskCount, 0)

  const counts = (await call(app, 'acme', 'GET', '/v1/projects?expand=tasks')).json().data.projects as Item[]
  t.same(counts.map(project => [project.taskCount, (project.tasks as Item[]).length]), [[1, 1], [0, 0]], 'each count is the number of tasks')
  t.equal((await call(app, 'acme', 'PATCH', `/v1/projects/${fresh.id}`, { taskCount: 7 })).statusCode, 400, 'and no client sets it')
})

t.test('rows linked across tenants outside the API still do not show through relations', async t => {
  // A back office with no rules on the same store (an import, say) files a Globex task under
  // Acme's roadmap: a link the API itself never makes.
  const store = memoryStore()
  const { app, roadmap, plan, launch } = await fixture(t, store)
  const office = Fastify()
  t.teardown(() => office.close())
  const Imported = Type.Object({ ...Task.properties, tenantId: Type.String() }, { additionalProperties: false })
  await office.register(apiConventions, { prefix: '/v1', resources: [defineResource({ name: 'tasks', singular: 'task', schema: Imported, store })] })
  const planted = await office.inject({ method: 'POST', url: '/v1/tasks', payload: { tenantId: 'globex', projectId: roadmap.id, title: 'Globex import' } })
  t.equal(planted.statusCode, 201)
  const stray = planted.json().data.task as Item

  t.same(idsOf(await call(app, 'acme', 'GET', `/v1/projects/${roadmap.id}/tasks?total=true`), 'tasks'), [plan.id, launch.id], 'acme\'s nested collection')
  const expanded = await read(app, 'acme', `/v1/projects/${roadmap.id}?expand=tasks`)
  t.same((expanded.tasks as Item[]).map(task => task.id), [plan.id, launch.id], 'acme\'s expand')
  const links = (await call(app, 'acme', 'GET', '/v1/projects?include=tasks')).json().links as Array<{ rel: string, href: string }>
  t.notOk(links.some(link => link.href.endsWith(stray.id)), 'acme\'s include')
  t.same(idsOf(await call(app, 'acme', 'GET', `/v1/projects?filter=${encodeURIComponent("tasks/title eq 'Globex import'")}`), 'projects'), [], 'acme\'s related-path filter')

  const own = await read(app, 'globex', `/v1/tasks/${stray.id}?expand=project`)
  t.equal(own.project, null, 'globex sees its task, not acme\'s project')
  t.same(idsOf(await call(app, 'globex', 'GET', `/v1/tasks?filter=${encodeURIComponent("project/name eq 'Acme roadmap'")}`), 'tasks'), [], 'globex\'s related-path filter')
  const included = await call(app, 'globex', 'GET', `/v1/tasks/${stray.id}?include=project`)
  t.equal(included.statusCode, 200)
  t.notOk('links' in included.json(), 'globex\'s include: no link')
})

const connectionString = process.env.DATABASE_URL
const sqlStores: Array<[string, (t: Test) => Promise<Store>]> = [
  ['PGlite', async t => {
    const db = await openPglite()
    t.teardown(() => db.close())
    return await pgliteStore({ db })
  }],
  ['PostgreSQL', async t => await postgresStore({ connectionString, schema: `${runSchemas(t, connectionString).prefix}_tenants` })]
]

for (const [name, makeStore] of sqlStores) {
  const skip = name === 'PostgreSQL' && connectionString === undefined && 'DATABASE_URL is not set'
  t.test(`${name}: tenants stay apart, and taskCount stays exact under parallel writes`, { skip }, async t => {
    const { app, roadmap, plan, ledger, audit } = await fixture(t, await makeStore(t))
    t.same(idsOf(await call(app, 'globex', 'GET', '/v1/tasks?total=true'), 'tasks'), [audit.id])
    sameNotFound(t, await call(app, 'globex', 'PATCH', `/v1/tasks/${plan.id}`, { done: true }), await call(app, 'globex', 'PATCH', `/v1/tasks/${madeUp}`, { done: true }), plan.id, 'PATCH of acme\'s task')
    t.equal((await call(app, 'globex', 'POST', '/v1/tasks', { projectId: roadmap.id, title: 'Sneak in' })).statusCode, 422)

    const creates = await Promise.all(Array.from({ length: 24 }, (_, i) => i % 2 === 0
      ? call(app, 'acme', 'POST', '/v1/tasks', { projectId: roadmap.id, title: `acme ${i}` })
      : call(app, 'globex', 'POST', '/v1/tasks', { projectId: ledger.id, title: `globex ${i}` })))
    t.same([...new Set(creates.map(res => res.statusCode))], [201])
    t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 14)
    t.equal((await read(app, 'globex', `/v1/projects/${ledger.id}`)).taskCount, 13)

    const acmeTasks = creates.filter((_, i) => i % 2 === 0).map(res => res.json().data.task as Item)
    const deletes = await Promise.all(acmeTasks.slice(0, 6).map(task => call(app, 'acme', 'DELETE', `/v1/tasks/${task.id}`)))
    t.same([...new Set(deletes.map(res => res.statusCode))], [204])
    t.equal((await read(app, 'acme', `/v1/projects/${roadmap.id}`)).taskCount, 8)
    t.equal((await call(app, 'acme', 'GET', `/v1/projects/${roadmap.id}/tasks?total=true`)).json().meta.total, 8)
  })
}

t.test('every route needs a caller', async t => {
  const { app } = await fixture(t)
  const res = await app.inject({ url: '/v1/tasks' })
  t.equal(res.statusCode, 401)
  t.match(res.headers['www-authenticate'], /^Bearer /)
  t.equal((await app.inject({ url: '/v1/tasks', headers: { authorization: 'Bearer not-a-token' } })).statusCode, 401)
})

t.test('docs/rules.md shows the program exactly as it is', async t => {
  const program = await readFile(new URL('../docs/examples/multi-tenant.ts', import.meta.url), 'utf8')
  const page = await readFile(new URL('../docs/rules.md', import.meta.url), 'utf8')
  t.ok(page.includes(`\`\`\`ts\n${program}\`\`\`\n`), 'the ts block holds the file, byte for byte')
})

t.test('run directly, the program listens on PORT', async t => {
  const child = spawn(process.execPath, [...process.execArgv, 'docs/examples/multi-tenant.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => { child.kill('SIGKILL') })
  const url = await new Promise<string>((resolve, reject) => {
    let seen = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen += chunk)
      if (match !== null) resolve(match[1])
    })
    child.once('exit', () => reject(new Error('the program exited before listening')))
  })
  const created = await fetch(`${url}/v1/projects`, { method: 'POST', headers: { authorization: 'Bearer acme-al-token', 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Started' }) })
  t.equal(created.status, 201)
  const listed = await fetch(`${url}/v1/projects`, { headers: { authorization: 'Bearer acme-ann-token' } })
  t.same(((await listed.json()) as { data: { projects: Item[] } }).data.projects.map(project => project.name), ['Started'], 'a user of the same tenant sees it')
  const other = await fetch(`${url}/v1/projects`, { headers: { authorization: 'Bearer globex-gus-token' } })
  t.same(((await other.json()) as { data: { projects: Item[] } }).data.projects, [])
  child.kill('SIGTERM')
  await once(child, 'exit')
})
