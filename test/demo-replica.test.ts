// The demo on a read replica (docs/demo-contract.md "Many instances"; docs/stores.md "Read replicas"):
// with DATABASE_URL and DATABASE_READ_URL (.ci/replica.sh), buildDemoApp reads on the replica, and
// a caller who writes reads its write at once while another caller still sees the replica's state.
import t from 'tap'
import { open, places, unique } from './helpers/demo-http.js'
import { replicaControl } from './helpers/replica.js'

const primaryUrl = process.env.DATABASE_URL
const replicaUrl = process.env.DATABASE_READ_URL
t.test('the demo with DATABASE_READ_URL: reads served, each writer reads its own write', { skip: (primaryUrl === undefined || replicaUrl === undefined) && 'needs DATABASE_URL and DATABASE_READ_URL' }, async t => {
  const postgres = places('demo-replica').find(place => place.name === 'PostgreSQL')
  const place = await (postgres as NonNullable<typeof postgres>).make()
  t.teardown(() => place.drop())
  // The replica reads the test's schema too: the same search_path.
  const readUrl = new URL(replicaUrl as string)
  readUrl.search = new URL(place.env.DATABASE_URL).search
  const { api, close } = await open({ ...place, env: { ...place.env, DATABASE_READ_URL: readUrl.href } })
  t.teardown(close)
  t.equal((await api('reader', 'GET', '/v1/authors')).status, 200, 'tables made')
  const replica = await replicaControl(t, primaryUrl as string, replicaUrl as string)
  await replica.caughtUp()
  await replica.lag('2s')
  const written = await api('alice', 'POST', '/v1/authors', { body: { name: unique('Author') } })
  t.equal(written.status, 201)
  const path = `/v1/authors/${written.body.data.author.id as string}`
  t.match(await api('alice', 'GET', path), { status: 200, body: { data: { author: { name: written.body.data.author.name } } } }, 'the writer reads its write')
  t.equal((await api('reader', 'GET', path)).status, 404, 'another caller reads the replica, which has not applied it yet')
  await replica.caughtUp()
  t.equal((await api('reader', 'GET', path)).status, 200, 'then it has')
})
