// `npm start` itself, from outside (docs/demo-contract.md "Starting it"): npm's own process, as a
// container runtime or process manager sees it. SIGTERM or SIGINT sent to npm's pid lets a request in
// flight finish, and then no process of the service is left and its port refuses connections, within
// 10 s; the build runs on a fresh clone and when a source changes, and is skipped otherwise.
// Each start runs in a copy of the project (its sources, a node_modules link), so that building
// there never rewrites the dist/ that other test files run at the same time.
import t from 'tap'
import type { Test } from 'tap'
import { execFile, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

// Two builds of the demo (a fresh clone, then a changed source) take long on a busy machine.
t.setTimeout(400_000)

const root = fileURLToPath(new URL('..', import.meta.url))
const clone = mkdtempSync(join(tmpdir(), 'demo-start-'))
t.teardown(() => rmSync(clone, { recursive: true, force: true }))
for (const path of ['lib', 'demo', 'package.json', 'tsconfig.json', 'tsconfig.demo.json']) cpSync(join(root, path), join(clone, path), { recursive: true })
symlinkSync(realpathSync(join(root, 'node_modules')), join(clone, 'node_modules'))

const auth = { authorization: 'Bearer dev-token', 'content-type': 'application/json' }
const building = /^demo: building to dist\/ \((.+)\): tsc -p tsconfig\.demo\.json$/
const upToDate = 'demo: dist/ is up to date with the sources, not building'

interface NpmStart {
  readonly pid: number
  /** Resolves with the first line of stdout, past or future, that the predicate accepts. */
  line (predicate: (line: string) => boolean): Promise<string>
  readonly lines: readonly string[]
  /** Resolves with the API's origin once the welcome names it. */
  readonly url: Promise<string>
  readonly exited: Promise<{ code: number | null, stderr: string }>
}

/** `npm start` in the copy, in a process group of its own: the group holds every process it starts. */
function npmStart (t: Test, env: Record<string, string>): NpmStart {
  const child = spawn('npm', ['start'], {
    cwd: clone,
    detached: true,
    // Blanked: the outer database settings (each start says its store), tap's NODE_OPTIONS (its
    // coverage hooks in every node process would slow the starts timed here), npm's update check.
    env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: '', DATABASE_READ_URL: '', REDIS_URL: '', NATS_URL: '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', npm_config_update_notifier: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const pid = child.pid as number
  t.teardown(() => { if (groupAlive(pid)) process.kill(-pid, 'SIGKILL') })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', chunk => { stderr += chunk })
  const exited = new Promise<{ code: number | null, stderr: string }>(resolve => child.on('close', code => resolve({ code, stderr })))
  const lines: string[] = []
  const waiting = new Set<{ predicate: (line: string) => boolean, resolve: (line: string) => void }>()
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', text => {
    lines.push(text)
    for (const waiter of waiting) if (waiter.predicate(text)) { waiting.delete(waiter); waiter.resolve(text) }
  })
  const line = (predicate: (line: string) => boolean) => {
    const seen = lines.find(predicate)
    if (seen !== undefined) return Promise.resolve(seen)
    return Promise.race([
      new Promise<string>(resolve => waiting.add({ predicate, resolve })),
      exited.then(({ code, stderr }) => { throw new Error(`npm start exited with ${code} first: ${stderr}\n${lines.join('\n')}`) })
    ])
  }
  const url = line(text => /^\s+API:\s+http:\/\/\S+\/v1$/.test(text)).then(text => (/(http:\/\/\S+)\/v1$/.exec(text) as RegExpExecArray)[1])
  url.catch(() => {}) // a start that never listens rejects it, awaited or not
  return { pid, line, lines, url, exited }
}

/** Whether any process of the group `pgid` is left. */
function groupAlive (pgid: number) {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** Milliseconds until no process of the group is left, polled; gives up at 15 s. */
async function groupGone (pgid: number, since: number) {
  while (groupAlive(pgid) && performance.now() - since < 15_000) await sleep(50)
  return performance.now() - since
}

function refused (url: string) {
  const { hostname, port } = new URL(url)
  return new Promise<string>(resolve => {
    const socket = connect(Number(port), hostname)
    socket.on('connect', () => { socket.destroy(); resolve('connected') }).on('error', (error: NodeJS.ErrnoException) => resolve(error.code as string))
  })
}

/**
 * A CREATE whose body is held back after five bytes, so that it is in flight until `finish()`, from
 * a client that would keep its connection open for a minute, as a proxy or a browser may.
 */
function slowCreate (t: Test, url: string, name: string) {
  const agent = new Agent({ keepAlive: true, timeout: 60_000 })
  t.teardown(() => agent.destroy())
  const body = JSON.stringify({ name })
  const req = request(`${url}/v1/authors`, { agent, method: 'POST', headers: { ...auth, 'content-length': String(Buffer.byteLength(body)) } })
  const response = new Promise<{ status: number, name: string }>((resolve, reject) => {
    req.on('response', res => {
      let text = ''
      res.setEncoding('utf8').on('data', chunk => { text += chunk }).on('end', () => resolve({ status: res.statusCode as number, name: JSON.parse(text).data?.author?.name }))
    }).on('error', reject)
  })
  req.write(body.slice(0, 5))
  return { finish: () => { req.end(body.slice(5)); return response } }
}

/** Signals npm's own pid mid-request; the request finishes, then the service is gone within 10 s. */
async function stopsGracefully (t: Test, start: NpmStart, signal: 'SIGTERM' | 'SIGINT') {
  const url = await start.url
  const create = slowCreate(t, url, `In flight at ${signal}`)
  // The server has the headers and waits for the rest of the body.
  await start.line(text => text.includes('"msg":"incoming request"') && text.includes('"method":"POST"'))
  const sent = performance.now()
  process.kill(start.pid, signal)
  t.match(await start.line(text => text.includes('closing: finishing requests in flight')), `"signal":"${signal}"`, 'the server itself got the signal')
  t.same(await create.finish(), { status: 201, name: `In flight at ${signal}` }, 'the request in flight finishes')
  t.same(await start.exited, { code: 0, stderr: '' }, 'npm exits 0')
  const gone = await groupGone(start.pid, sent)
  t.ok(gone < 10_000, `no process is left ${Math.round(gone)} ms after ${signal} (at most 10 s)`)
  t.equal(await refused(url), 'ECONNREFUSED', 'the port refuses connections')
}

t.test('a first start on a fresh clone builds, serves, and SIGTERM to npm lets a request in flight finish, then leaves nothing running', async t => {
  const start = npmStart(t, { STORE: 'memory' })
  t.equal((building.exec(await start.line(text => building.test(text))) as RegExpExecArray)[1], 'no build yet', 'it builds')
  const health = await fetch(`${await start.url}/health`)
  t.same({ status: health.status, body: await health.json() }, { status: 200, body: { status: 'ok' } })
  await stopsGracefully(t, start, 'SIGTERM')
})

t.test('a second start, the sources unchanged (files touched only), skips the build and serves a fresh PGlite store; SIGINT to npm closes it the same way', async t => {
  // A newer modification time alone changes nothing: the build depends on the files' contents.
  const now = new Date()
  for (const path of ['demo/welcome.ts', 'lib/index.ts', 'tsconfig.json']) utimesSync(join(clone, path), now, now)
  const began = performance.now()
  const start = npmStart(t, { STORE: 'pglite', DATA_DIR: join(clone, 'data-second-start') })
  const url = await start.url
  t.equal((await fetch(`${url}/health`)).status, 200)
  const took = performance.now() - began
  t.comment(`second npm start (PGlite, fresh DATA_DIR) answered /health after ${(took / 1000).toFixed(1)} s`)
  t.ok(start.lines.includes(upToDate), 'it says it does not build')
  t.notOk(start.lines.some(text => building.test(text)), 'it does not build')
  await stopsGracefully(t, start, 'SIGINT')
})

t.test('a changed source makes the next start build again, and the changed code is what runs', async t => {
  const welcome = join(clone, 'demo/welcome.ts')
  writeFileSync(welcome, readFileSync(welcome, 'utf8').replace("'Books demo API is running.'", "'Books demo API is running (changed).'"))
  const start = npmStart(t, { STORE: 'memory' })
  t.equal((building.exec(await start.line(text => building.test(text))) as RegExpExecArray)[1], 'the sources or dist/ changed since the last build')
  t.equal(await start.line(text => text.startsWith('Books demo API')), 'Books demo API is running (changed).')
  process.kill(start.pid, 'SIGTERM')
  t.same(await start.exited, { code: 0, stderr: '' })
})

t.test('a build output changed by anything else is rebuilt; SIGTERM to npm during the build stops the compiler too', async t => {
  writeFileSync(join(clone, 'dist/demo/welcome.js'), 'export function welcome () { return [\'a stale build\'] }\n')
  const start = npmStart(t, { STORE: 'memory' })
  t.equal((building.exec(await start.line(text => building.test(text))) as RegExpExecArray)[1], 'the sources or dist/ changed since the last build')
  const sent = performance.now()
  process.kill(start.pid, 'SIGTERM')
  const { code, stderr } = await start.exited
  const gone = await groupGone(start.pid, sent)
  t.ok(gone < 10_000, `no process (npm, node, tsc) is left ${Math.round(gone)} ms after SIGTERM`)
  t.not(code, 0, 'npm reports the stopped start as a failure')
  t.match(stderr, /^demo: the build failed or was stopped; not starting$/m)
  t.notOk(start.lines.some(text => text.startsWith('Books demo API')), 'nothing was started')
})

t.test('every source tsc compiles for the demo lies in the folders demo/start.js compares (lib/, demo/)', async t => {
  const { stdout } = await promisify(execFile)(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.demo.json', '--listFilesOnly'], { cwd: root })
  const sources = stdout.split('\n').filter(file => file !== '' && !file.includes('/node_modules/')).map(file => relative(root, file))
  t.ok(sources.includes('demo/server.ts') && sources.includes('lib/index.ts'), 'the list holds the demo and the package')
  // A source elsewhere (a schemas/ folder, say) must join `inputs` in demo/start.js, or a change to it would not rebuild.
  t.same(sources.filter(file => !/^(lib|demo)\//.test(file)), [])
})
