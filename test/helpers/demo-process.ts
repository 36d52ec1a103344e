// `npm start`'s server (demo/server.ts) as a process of its own, for tests that need what only
// separate processes show: nothing shared in memory between instances, a kill at any moment.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createInterface } from 'node:readline'
import pg from 'pg'

export interface DemoProcess {
  /** Where the server listens (no prefix), e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly child: ChildProcess
  readonly exited: Promise<unknown>
}

interface TestLike { teardown (fn: () => unknown): void }

/**
 * The demo's settings for a schema of its own in DATABASE_URL's database (`env` added): made now,
 * dropped when `t` ends. Registered before the demos are started, its teardown runs after theirs,
 * when nothing holds the schema any more.
 */
export async function freshSchemaPlace (t: TestLike, name: string, env: Record<string, string>): Promise<Record<string, string>> {
  const url = new URL(process.env.DATABASE_URL as string)
  const schema = `apic_test_${name}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString: url.href })
  await admin.query(`CREATE SCHEMA "${schema}"`)
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`)
    await admin.end()
  })
  url.searchParams.set('options', `-c search_path=${schema}`)
  return { ...env, DATABASE_URL: url.href }
}

// Demos still running when this process ends (a test timed out, say) end with it.
const running = new Set<ChildProcess>()
process.once('exit', () => { for (const child of running) child.kill('SIGKILL') })

/**
 * Starts the demo on a free port with the outer environment's database, Redis and NATS settings blanked (each
 * test says what it wants in `env`), no sample data and warnings only in the log; resolves once it
 * listens. Killed, and waited for, when `t` ends.
 */
export async function startDemoProcess (t: TestLike, env: Record<string, string>): Promise<DemoProcess> {
  const child = spawn(process.execPath, [...process.execArgv, 'demo/server.ts'], {
    env: { ...process.env, DATABASE_URL: '', DATABASE_READ_URL: '', REDIS_URL: '', NATS_URL: '', SEED: 'false', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  running.add(child)
  const exited = new Promise(resolve => child.once('exit', resolve)).finally(() => running.delete(child))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  })
  // The welcome printed once it listens names the API; stdout is read to the end, so the server never blocks on it.
  let errorsShown = 0
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', line => {
      const api = /^\s+API:\s+(http:\/\/\S+)\/v1$/.exec(line)
      if (api !== null) resolve(api[1])
      // The first errors the server logs (a 500's cause) are shown with the test's output.
      else if (/^\{"level":(50|60)\b/.test(line) && errorsShown++ < 3) process.stderr.write(`demo: ${line}\n`)
    })
    exited.then(() => reject(new Error('the demo exited before listening')), () => {})
  })
  return { url, child, exited }
}
