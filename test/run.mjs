// `npm test`'s runner: finds the services the suite can use on this machine, says what runs and what
// skips (and why), then runs tap. A variable already set is used as it is; one not set is filled in
// when its service answers on 127.0.0.1 at the port .ci/ gives it:
//   DATABASE_URL       PostgreSQL 5432, database `test` (made when missing; each test file makes its own schema)
//   REDIS_URL          Redis 6379
//   NATS_URL           NATS with JetStream 4222
//   DATABASE_READ_URL  a streaming replica of that PostgreSQL on 5433 (.ci/replica.sh makes one)
//   CLUSTER_*          the many-instances cluster: PgBouncer 6434, primary 5434, replica 5435 (.ci/cluster.sh)
// The coverage gate is 100 % when every service the gate depends on was found; without PostgreSQL or
// Redis, code only they reach is not run, so the gate is reported but cannot fail the run (said twice).
// Arguments after `--` go to tap (`npm test -- test/cors.test.ts`); `npm run test:long` passes its
// files and --disable-coverage the same way.
import { spawn, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { existsSync } from 'node:fs'
import net from 'node:net'
import pg from 'pg'

const host = '127.0.0.1'
const timeoutMs = 2000

/** Connects with `url` and returns the first row of `sql`, or the error's message. */
async function queryOnce (url, sql) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
  client.on('error', () => {})
  try {
    await client.connect()
    return { row: (await client.query(sql)).rows[0] }
  } catch (error) {
    return { error }
  } finally {
    await client.end().catch(() => {})
  }
}

/** The local PostgreSQL's `test` database, made when the server answers without it. */
async function findPostgres () {
  const url = `postgres://postgres@${host}:5432/test`
  const first = await queryOnce(url, 'SELECT 1 AS one')
  if (first.row) return { url }
  if (first.error.code !== '3D000') return { why: `no PostgreSQL answers at ${host}:5432 as user postgres (${first.error.message})` }
  const made = await queryOnce(`postgres://postgres@${host}:5432/postgres`, 'CREATE DATABASE test')
  return made.error ? { why: `database test is missing at ${host}:5432 and could not be made (${made.error.message})` } : { url }
}

/** Redis answers PING with +PONG. */
function findRedis () {
  const url = `redis://${host}:6379`
  return new Promise(resolve => {
    const socket = net.connect({ host, port: 6379 })
    const done = (result) => { socket.destroy(); resolve(result) }
    socket.setTimeout(timeoutMs, () => done({ why: `no Redis answers at ${host}:6379 (timed out)` }))
    socket.on('error', error => done({ why: `no Redis answers at ${host}:6379 (${error.code ?? error.message})` }))
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', data => done(data.toString().startsWith('+PONG') ? { url } : { why: `${host}:6379 answered PING with ${JSON.stringify(data.toString().trim())}` }))
  })
}

/** A NATS server greets a connection with INFO; JetStream on says `"jetstream":true` in it. */
function findNats () {
  const url = `nats://${host}:4222`
  return new Promise(resolve => {
    const socket = net.connect({ host, port: 4222 })
    const done = (result) => { socket.destroy(); resolve(result) }
    socket.setTimeout(timeoutMs, () => done({ why: `no NATS answers at ${host}:4222 (timed out)` }))
    socket.on('error', error => done({ why: `no NATS answers at ${host}:4222 (${error.code ?? error.message})` }))
    socket.once('data', data => {
      const text = data.toString()
      if (!text.startsWith('INFO ')) done({ why: `${host}:4222 is not a NATS server (it said ${JSON.stringify(text.slice(0, 40))})` })
      else done(text.includes('"jetstream":true') ? { url } : { why: `the NATS at ${host}:4222 runs without JetStream (-js)` })
    })
  })
}

/** A server at `port` in recovery, streaming from the primary at `primaryPort`. */
async function findReplica (port, primaryPort, maker) {
  const url = `postgres://postgres@${host}:${port}/test`
  const { row, error } = await queryOnce(url, 'SELECT pg_is_in_recovery() AS recovering, (SELECT sender_port FROM pg_stat_wal_receiver) AS sender')
  if (error) return { why: `no PostgreSQL replica answers at ${host}:${port} (${error.message}); ${maker}` }
  if (!row.recovering || row.sender !== primaryPort) return { why: `the PostgreSQL at ${host}:${port} is not a streaming replica of ${host}:${primaryPort}` }
  return { url }
}

/** .ci/cluster.sh's cluster: its primary, its replica and PgBouncer in front of the primary. */
async function findCluster () {
  const maker = 'as root, `.ci/cluster.sh` makes it'
  const primaryUrl = `postgres://postgres@${host}:5434/test`
  const primary = await queryOnce(primaryUrl, 'SELECT current_setting(\'server_version_num\') AS version')
  if (primary.error) return { why: `no cluster primary answers at ${host}:5434 (${primary.error.message}); ${maker}` }
  const replica = await findReplica(5435, 5434, maker)
  if (replica.why) return replica
  const bouncerUrl = `postgres://postgres@${host}:6434/test`
  const bouncer = await queryOnce(bouncerUrl, 'SELECT 1 AS one')
  if (bouncer.error) return { why: `no PgBouncer answers at ${host}:6434 (${bouncer.error.message}); ${maker}` }
  // The test stops and starts the primary by its Debian cluster name (pg_ctlcluster <version> cluster).
  let clusters = ''
  try { clusters = execFileSync('pg_lsclusters', ['-h'], { encoding: 'utf8' }) } catch {}
  const line = clusters.split('\n').map(l => l.trim().split(/\s+/)).find(([, , port]) => port === '5434')
  if (!line) return { why: `the cluster primary at ${host}:5434 is not a cluster pg_lsclusters lists (the test stops and starts it); ${maker}` }
  return {
    env: {
      CLUSTER_DATABASE_URL: bouncerUrl,
      CLUSTER_PRIMARY_URL: primaryUrl,
      CLUSTER_READ_URL: replica.url,
      CLUSTER_PRIMARY: `${line[0]} ${line[1]}`
    }
  }
}

const env = { ...process.env }
/** What skips, and why: printed before and after tap's output. */
const skipped = []
/** Services the coverage gate depends on that were not found. */
const gateMissing = []
const found = []

async function settle (name, variable, find, { gate, skips }) {
  if (env[variable] !== undefined) { found.push(`${name}: ${variable} as given`); return }
  const result = await find()
  if (result.url !== undefined) {
    env[variable] = result.url
    found.push(`${name}: ${result.url}`)
  } else {
    skipped.push(`${name}: ${result.why}. Skipped: ${skips}`)
    if (gate) gateMissing.push(name)
  }
}

await settle('PostgreSQL', 'DATABASE_URL', findPostgres, { gate: true, skips: 'every PostgreSQL run (the same suites run on PGlite)' })
await settle('Redis', 'REDIS_URL', findRedis, { gate: true, skips: 'rate limits shared through Redis, writers\' positions kept in Redis' })
await settle('NATS', 'NATS_URL', findNats, { gate: true, skips: 'publishing the changes to NATS JetStream (test/changes-nats.test.ts)' })
if (env.DATABASE_URL !== undefined) {
  await settle('Read replica', 'DATABASE_READ_URL', () => findReplica(5433, 5432, 'as root, `.ci/replica.sh` makes one'), { gate: false, skips: 'the read-replica tests (test/stores/sql-replica.test.ts, test/demo-replica.test.ts)' })
}
if (env.CLUSTER_DATABASE_URL !== undefined) {
  found.push('Cluster: CLUSTER_DATABASE_URL as given')
} else {
  const cluster = await findCluster()
  if (cluster.env) {
    Object.assign(env, cluster.env)
    found.push(`Cluster: PgBouncer ${cluster.env.CLUSTER_DATABASE_URL}, primary ${cluster.env.CLUSTER_PRIMARY_URL}, replica ${cluster.env.CLUSTER_READ_URL}`)
  } else {
    skipped.push(`Cluster: ${cluster.why}. Skipped: test/cluster.test.ts (three demo instances through PgBouncer)`)
  }
}
const chromium = '/usr/bin/chromium'
if (!existsSync(chromium)) skipped.push(`Chromium: none at ${chromium} (apt-get install -y chromium). Skipped: the docs page in a browser (test/docs-page.test.ts)`)

// tap runs one file at a time on two cores (its default is the CPU count less one); most files
// wait on PostgreSQL, sockets and child processes, so two at a time halve the run. `-j` overrides.
const tapArgs = ['--jobs=2', ...process.argv.slice(2)]
if (gateMissing.length > 0) tapArgs.unshift('--allow-incomplete-coverage')

function summary () {
  const lines = ['# Services for this run:', ...found.map(f => `#   found ${f}`), ...skipped.map(s => `#   MISSING ${s}`)]
  if (tapArgs.includes('--disable-coverage')) lines.push('# Coverage: not measured (--disable-coverage).')
  else if (gateMissing.length > 0) lines.push(`# Coverage gate: reported, not enforced: without ${gateMissing.join(' and ')} the code only they reach does not run.`)
  else lines.push('# Coverage gate: 100 % of lines, branches and functions.')
  return lines.join('\n')
}

console.log(summary())
const tapBin = fileURLToPath(new URL('../node_modules/.bin/tap', import.meta.url))
const tap = spawn(tapBin, tapArgs, { env, stdio: 'inherit' })
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => tap.kill(signal))
tap.on('exit', (code, signal) => {
  console.log(summary())
  process.exit(code ?? (signal ? 1 : 0))
})
