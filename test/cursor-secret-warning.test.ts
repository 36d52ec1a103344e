// Without cursorSecret, paging tokens use a random key (README "Options"). The warning reaches the
// operator whether or not the host has a logger: the log line where the log shows warnings, else a
// process warning, which Node prints on stderr. In a file of its own: the process warning is once
// per process.
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import { Writable } from 'node:stream'
import apiConventions, { memoryStore } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import type { ApiConventionsOptions } from '../lib/index.js'

const warnings: Error[] = []
const collect = (warning: Error) => { warnings.push(warning) }
process.on('warning', collect)
t.teardown(() => { process.off('warning', collect) })

/** Registers the plugin on an app with `logger`; the process warnings it raised. */
async function register (t: Test, logger: object | false, options: Partial<ApiConventionsOptions> = {}): Promise<Error[]> {
  const before = warnings.length
  const app = Fastify({ logger })
  t.teardown(() => app.close())
  await app.register(apiConventions, { resources: demoResources(memoryStore()), ...options }).ready()
  // process.emitWarning delivers on the next tick.
  await new Promise(resolve => setImmediate(resolve))
  return warnings.slice(before)
}

function logLines (level: string): { lines: Array<{ level: number, msg: string }>, logger: object } {
  const lines: Array<{ level: number, msg: string }> = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(String(chunk))); done() } })
  return { lines, logger: { level, stream } }
}

t.test('a host whose log shows warnings gets the log line, and no process warning', async t => {
  const { lines, logger } = logLines('warn')
  t.same(await register(t, logger), [])
  t.match(lines, [{ level: 40, msg: /^api-conventions: no cursorSecret configured; paging tokens use a random key/ }])
})

t.test('a host without a logger gets a process warning naming the option, once per process', async t => {
  const [warning, ...more] = await register(t, false)
  t.match(warning, {
    name: 'ApiConventionsWarning',
    code: 'API_WARN_NO_CURSOR_SECRET',
    message: 'api-conventions: no cursorSecret configured; paging tokens use a random key and will not survive a restart or work across instances'
  })
  t.same(more, [])
  t.same(await register(t, false), [], 'a second registration adds none')
})

t.test('with a cursorSecret there is nothing to warn of', async t => {
  const { lines, logger } = logLines('info')
  t.same(await register(t, logger, { cursorSecret: 'a-test-secret-of-enough-length' }), [])
  t.same(lines.filter(line => line.level >= 40), [])
})
