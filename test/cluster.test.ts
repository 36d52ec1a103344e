// Many instances as one service (docs/demo-contract.md "Many instances"; issue "Past one machine"): three
// demo processes started together on one fresh database, through PgBouncer in transaction mode
// (DATABASE_POOLER=transaction), reading from a streaming replica, sharing Redis and the cursor
// secret. The cluster is .ci/cluster.sh's: a primary and replica of their own, so that stopping
// the primary disturbs no other test. Skipped, saying why, without it.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import pg from 'pg'
import { client, unique } from './helpers/demo-http.js'
import type { Answer, Api } from './helpers/demo-http.js'
import { startDemoProcess } from './helpers/demo-process.js'
import { pgCluster, replicaControl } from './helpers/replica.js'

const { CLUSTER_DATABASE_URL: bouncerUrl, CLUSTER_PRIMARY_URL: primaryUrl, CLUSTER_READ_URL: replicaUrl, CLUSTER_PRIMARY: primaryCluster, REDIS_URL: redisUrl } = process.env
const missing = bouncerUrl === undefined || primaryUrl === undefined || replicaUrl === undefined || primaryCluster === undefined || redisUrl === undefined
/** The cluster's names for its two PostgreSQL clusters (.ci/cluster.sh). */
const primaryName = primaryCluster?.split(' ')[1] ?? 'cluster'
const replicaName = 'clusterreplica'

/** `url` with another database. */
const withDatabase = (url: string, database: string) => Object.assign(new URL(url), { pathname: `/${database}` }).href

t.test('three demo instances through PgBouncer, a replica and Redis', { skip: missing && 'needs .ci/cluster.sh (CLUSTER_DATABASE_URL, CLUSTER_PRIMARY_URL, CLUSTER_READ_URL, CLUSTER_PRIMARY) and REDIS_URL' }, async t => {
  const database = `apic_cluster_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: primaryUrl })
  await admin.connect()
  // Its session ends when the primary is stopped below; it reconnects for the teardown.
  admin.on('error', () => {})
  await admin.query(`CREATE DATABASE ${database}`)
  t.teardown(async () => {
    await admin.end().catch(() => {})
    // The demos are gone by now (their teardowns ran first): nothing holds the database.
    const again = new pg.Client({ connectionString: primaryUrl })
    await again.connect()
    await again.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await again.end()
  })
  // Tokens and users of this run only: the rate limit's counters in the shared Redis are its own.
  const run = randomBytes(4).toString('hex')
  const tokens = { writer: `writer-${run}`, other: `other-${run}`, reader: `reader-${run}`, admin: `admin-${run}` }
  const env = {
    DATABASE_URL: withDatabase(bouncerUrl as string, database),
    DATABASE_POOLER: 'transaction',
    DATABASE_READ_URL: withDatabase(replicaUrl as string, database),
    REDIS_URL: redisUrl as string,
    CURSOR_SECRET: `cluster-test-secret-${run}`,
    API_TOKENS: `${tokens.writer}:write:writer-${run},${tokens.other}:write:other-${run},${tokens.reader}:read:reader-${run},${tokens.admin}:admin:admin-${run}`,
    RATE_LIMIT_MAX: '1000000'
  }
  // Started together: their migrations of the empty database take turns.
  const demos = await Promise.all([1, 2, 3].map(() => startDemoProcess(t, env)))
  const apis: Api[] = demos.map(demo => client(demo.url, tokens))
  /** The i-th request's instance, round robin. */
  const on = (i: number) => apis[i % apis.length]
  const admin0 = apis[0]

  async function newAuthor (api: Api, caller = 'admin'): Promise<string> {
    const res = await api(caller, 'POST', '/v1/authors', { body: { name: unique('Author') } })
    if (res.status !== 201) throw new Error(`author not created: ${res.status} ${res.text}`)
    return res.body.data.author.id
  }

  t.test('a paging token from one instance works on every other', async t => {
    const name = unique('Paged')
    for (let i = 0; i < 5; i++) await on(i)('admin', 'POST', '/v1/authors', { body: { name: `${name} ${i}` } })
    const filter = encodeURIComponent(`startswith(name, '${name}')`)
    const whole = await admin0('admin', 'GET', `/v1/authors?filter=${filter}&sort=name&pageSize=5`)
    t.equal(whole.status, 200)
    let next: string | undefined = `/v1/authors?filter=${filter}&sort=name&pageSize=2`
    const names: string[] = []
    const hrefs: string[] = []
    for (let i = 0; next !== undefined; i++) {
      hrefs.push(next)
      const page: Answer = await on(i)('admin', 'GET', next)
      t.equal(page.status, 200, `page ${i + 1}, on instance ${(i % 3) + 1}`)
      names.push(...page.body.data.authors.map((a: { name: string }) => a.name))
      next = page.body.links.find((link: { rel: string }) => link.rel === 'next')?.href
    }
    t.equal(hrefs.length, 3, 'three pages')
    t.match(hrefs[1], /[?&]token=/, 'walked with paging tokens')
    t.same(names, whole.body.data.authors.map((a: { name: string }) => a.name), 'the pages, each from another instance, are the list')
  })

  t.test('the rate limit is one limit: each instance counts on from the last', async t => {
    const remaining: number[] = []
    for (let i = 0; i < 9; i++) {
      const res = await on(i)('reader', 'GET', '/v1/authors?pageSize=1')
      t.equal(res.status, 200)
      remaining.push(Number(/;r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1]))
    }
    t.same(remaining.slice(1).map((r, i) => remaining[i] - r), Array(8).fill(1), `one counter across the instances: ${remaining.join(', ')}`)
  })

  t.test('an If-Match race across the instances has exactly one winner', async t => {
    const book = await admin0('admin', 'POST', '/v1/books', { body: { title: unique('Raced'), authorId: await newAuthor(admin0) } })
    const etag = book.headers.get('etag') as string
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      on(i)('admin', 'PATCH', `/v1/books/${book.body.data.book.id as string}`, { body: { year: 1900 + i }, headers: { 'if-match': etag } })))
    const statuses = answers.map(res => res.status)
    t.equal(statuses.filter(s => s === 200).length, 1, 'one 200')
    t.equal(statuses.filter(s => s === 412).length, 29, 'the other 29 are 412')
  })

  t.test('an Idempotency-Key replays on any instance, the write made once', async t => {
    const key = `cluster-${run}-create`
    const title = unique('Keyed')
    const authorId = await newAuthor(admin0)
    const first = await on(0)('admin', 'POST', '/v1/books', { body: { title, authorId }, key })
    t.equal(first.status, 201)
    // At once on the two others, at the same moment.
    const again = await Promise.all([1, 2].map(i => on(i)('admin', 'POST', '/v1/books', { body: { title, authorId }, key })))
    for (const res of again) {
      t.equal(res.headers.get('idempotent-replayed'), 'true', 'marked replayed')
      t.same({ status: res.status, body: res.text, location: res.headers.get('location') }, { status: first.status, body: first.text, location: first.headers.get('location') }, 'the first answer again')
    }
    const count = await admin0('admin', 'GET', `/v1/books?filter=${encodeURIComponent(`title eq '${title}'`)}&total=true`)
    t.equal(count.body.meta.total, 1, 'one book')
  })

  t.test('read-your-writes on every instance while the replica lags', async t => {
    const replica = await replicaControl(t, withDatabase(primaryUrl as string, database), withDatabase(replicaUrl as string, database), replicaName)
    const authorId = await newAuthor(admin0)
    await replica.caughtUp()
    await replica.lag('3s')
    const created = await on(0)('writer', 'POST', '/v1/books', { body: { title: unique('Fresh'), authorId } })
    t.equal(created.status, 201)
    const path = `/v1/books/${created.body.data.book.id as string}`
    for (const i of [1, 2, 0]) t.equal((await on(i)('writer', 'GET', path)).status, 200, `the writer reads its write at once on instance ${i + 1}`)
    t.equal((await on(2)('reader', 'GET', path)).status, 404, 'another caller reads the lagging replica')
    await replica.caughtUp()
    t.equal((await on(2)('reader', 'GET', path)).status, 200, 'and sees the book once the replica has replayed it')
  })

  t.test('stopping the replica mid-load costs no failed request', async t => {
    const replica = await replicaControl(t, withDatabase(primaryUrl as string, database), withDatabase(replicaUrl as string, database), replicaName)
    const statuses: number[] = []
    const reading = { going: true }
    const load = Promise.all([0, 1, 2, 3, 4, 5].map(async worker => {
      for (let i = worker; reading.going; i += 6) statuses.push((await on(i)('reader', 'GET', '/v1/authors?pageSize=5')).status)
    }))
    await new Promise(resolve => setTimeout(resolve, 500))
    await replica.stop()
    await new Promise(resolve => setTimeout(resolve, 1500))
    await replica.start()
    await new Promise(resolve => setTimeout(resolve, 500))
    reading.going = false
    await load
    t.ok(statuses.length > 30, `${statuses.length} reads`)
    t.same([...new Set(statuses)], [200], 'every read answered 200')
  })

  t.test('stopping the primary: 503s with Retry-After, then full service, no acknowledged write lost', async t => {
    const authorId = await newAuthor(admin0)
    const acknowledged: string[] = []
    const refused: Answer[] = []
    const other: Answer[] = []
    let restarted = false
    /** `serving` bit i: instance i+1 has acknowledged a write since the primary came back. */
    const writing = { done: false, serving: 0 }
    const load = Promise.all([0, 1, 2, 3, 4, 5].map(async worker => {
      for (let i = worker; !writing.done; i += 6) {
        // A connection the server drops (an instance that died) is reported below with the other
        // failures, not thrown: thrown, it would end the test while the primary is still down.
        const res: Answer = await on(i)('writer', 'POST', '/v1/books', { body: { title: unique('Load'), authorId } })
          .catch((error: unknown) => ({ status: 0, headers: new Headers(), text: String((error as Error).cause ?? error), body: undefined }))
        if (res.status === 201) {
          acknowledged.push(res.body.data.book.id)
          if (restarted) writing.serving |= 1 << (i % 3)
        } else if (res.status === 503) refused.push(res)
        else other.push(res)
      }
    }))
    await new Promise(resolve => setTimeout(resolve, 700))
    await pgCluster(primaryName, 'stop')
    // Started again whatever happens below.
    t.teardown(async () => { if (!restarted) await pgCluster(primaryName, 'start') })
    await new Promise(resolve => setTimeout(resolve, 2000))
    await pgCluster(primaryName, 'start')
    restarted = true
    for (let waited = 0; writing.serving !== 0b111 && waited < 30_000; waited += 100) await new Promise(resolve => setTimeout(resolve, 100))
    writing.done = true
    await load
    t.same(other.map(res => `${res.status} ${res.text}`), [], 'nothing but 201 and 503')
    t.ok(refused.length > 0, `${refused.length} writes refused with 503 while the primary was down`)
    t.same(refused.filter(res => !/^\d+$/.test(res.headers.get('retry-after') ?? '')).map(res => res.headers.get('retry-after')), [], 'every 503 says when to retry')
    t.equal(writing.serving, 0b111, 'every instance writes again once the primary is back')
    // What was acknowledged is there: read from the primary, by the writer.
    const missingIds: string[] = []
    for (const [i, id] of acknowledged.entries()) {
      if ((await on(i)('writer', 'GET', `/v1/books/${id}`)).status !== 200) missingIds.push(id)
    }
    t.same(missingIds, [], `all ${acknowledged.length} acknowledged writes kept`)
  })
})
