// A multi-tenant API (docs/rules.md): every row belongs to a tenant, set by the server from the
// caller; each caller sees and changes only its own tenant's rows, and a project's taskCount
// follows its tasks in the same transaction as each task write.
// Run it from the repository: TS_NODE_TRANSPILE_ONLY=1 PORT=3000 node --import @tapjs/typescript/import docs/examples/multi-tenant.ts
// (an application imports from 'fastify-api-conventions' rather than '../../lib/index.js').
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import apiConventions, { defineAuth, defineResource, memoryStore, secretTable } from '../../lib/index.js'
import type { Store, Transaction } from '../../lib/index.js'

/** Who calls: a user of one tenant. */
export interface Caller { readonly user: string, readonly tenant: string }

// Bearer tokens and whom they stand for. A real service verifies a signed token or looks the
// token up in its database; a fixed table keeps the example whole.
const callers = secretTable<Caller>([
  ['acme-ann-token', { user: 'ann', tenant: 'acme' }],
  ['acme-al-token', { user: 'al', tenant: 'acme' }],
  ['globex-gus-token', { user: 'gus', tenant: 'globex' }]
])

export const Project = Type.Object({
  id: Type.Readonly(Type.String()),
  tenantId: Type.Readonly(Type.String({ description: 'The tenant the project belongs to.' })),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  taskCount: Type.ReadonlyOptional(Type.Integer({ minimum: 0, description: 'Number of tasks of the project.' }))
}, { additionalProperties: false })

export const Task = Type.Object({
  id: Type.Readonly(Type.String()),
  tenantId: Type.Readonly(Type.String({ description: 'The tenant the task belongs to.' })),
  projectId: Type.String({ description: 'The project of the task, one of the same tenant.' }),
  title: Type.String({ minLength: 1, maxLength: 200 }),
  done: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

type TaskRecord = Static<typeof Task>

// Every route of the API requires credentials, so a write always has a caller.
const tenantOf = (principal: Caller | null): string => (principal as Caller).tenant

// What both resources share: a caller's rows are its tenant's, and a new row is stamped with it.
const tenantRows = { read: 'tenantId eq @principal.tenant' }
const tenantStamp = { on: 'create', value: ({ principal }: { principal: Caller | null }) => tenantOf(principal) } as const

/** A string literal of the filter language. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The projects a task write touches (two when it moves the task), in id order: the order they are locked in. */
const touchedProjects = (record: TaskRecord | null, previous: TaskRecord | null): string[] =>
  [...new Set([record?.projectId, previous?.projectId].filter(id => id !== undefined))].sort()

/** Counts the project's tasks; the transaction sees every row, whatever the caller may see. */
async function recount (tx: Transaction, projectId: string) {
  const tasks = await tx.list('tasks', { filter: `projectId eq ${literal(projectId)}` })
  await tx.update('projects', projectId, { taskCount: tasks.length })
}

/** The app with both resources on `store` (a memory store unless given), which it closes when it closes. */
export async function buildApp ({ store = memoryStore() }: { store?: Store } = {}): Promise<FastifyInstance> {
  const projects = defineResource<typeof Project, Caller>({
    name: 'projects',
    singular: 'project',
    schema: Project,
    store,
    relations: { tasks: { kind: 'many', resource: 'tasks', field: 'projectId' } },
    rules: tenantRows,
    serverValues: { tenantId: tenantStamp, taskCount: { on: 'create', value: () => 0 } }
  })

  const tasks = defineResource<typeof Task, Caller>({
    name: 'tasks',
    singular: 'task',
    schema: Task,
    store,
    relations: { project: { kind: 'one', resource: 'projects', field: 'projectId' } },
    rules: tenantRows,
    serverValues: { tenantId: tenantStamp },
    hooks: {
      async beforeWrite ({ record, previous, tx }) {
        // Locked until the write commits: task writes of one project take turns, so each
        // recount sees the tasks the others committed. (Another tenant's project is, for the
        // caller, one that does not exist: the plugin answers 422 before this hook runs.)
        for (const projectId of touchedProjects(record, previous)) await tx.get('projects', projectId, { lock: true })
      },
      async afterWrite ({ record, previous, tx }) {
        for (const projectId of touchedProjects(record, previous)) await recount(tx, projectId)
      }
    }
  })

  const app = Fastify()
  app.addHook('onClose', async () => { await store.close() })
  await app.register(apiConventions, {
    prefix: '/v1',
    resources: [projects, tasks],
    auth: defineAuth({ bearer: token => callers(token) })
  })
  return app
}

// Run directly rather than imported (by test/docs-rules.test.ts): listen on PORT.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { PORT = '3000', HOST = '127.0.0.1' } = process.env
  const app = await buildApp()
  console.log(`multi-tenant example listening on ${await app.listen({ port: Number(PORT), host: HOST })}`)
}
