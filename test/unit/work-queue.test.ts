// The work queue's workers (lib/work/queue.ts) on a memory store: a job done once with its
// completion, a failure kept, an error left for the lease, a lost lease undone, claims and purges
// that fail, and stopping with a claim under way or a job still running.
import t from 'tap'
import { memoryStore } from '../../lib/index.js'
import type { Store } from '../../lib/index.js'
import { createWorkers, JobFailed } from '../../lib/work/queue.js'
import type { JobWork } from '../../lib/work/queue.js'

const settings = { concurrency: 2, leaseMillis: 60_000, pollMillis: 5, keepMillis: 60_000, maxAttempts: 5 }

function logger () {
  const warnings: string[] = []
  return { warnings, log: { warn: (_fields: object, message: string) => { warnings.push(message) } } }
}

const add = async (store: Store, id: string, kind = 'k') => await (store as Required<Store>).addJob({ id, kind, owner: null, payload: { id }, createdAt: new Date() })

/** Waits until `done` holds, polling; bounded by the test's timeout. */
async function until (done: () => Promise<boolean>) {
  while (!await done()) await new Promise(resolve => setTimeout(resolve, 5))
}

t.test('a job succeeds once, a JobFailed is kept as failed, another error waits for its lease', async t => {
  const store = memoryStore() as Required<Store>
  const runs: string[] = []
  const work: JobWork = async (job, tx) => {
    runs.push(job.id)
    if (job.id === 'fails') throw new JobFailed({ status: 404 })
    if (job.id === 'errs') throw new Error('store down')
    await tx.create({ name: 'x' } as never, { id: job.id }).catch(() => {})
    return { status: 201 }
  }
  const { warnings, log } = logger()
  const workers = createWorkers([store], { k: work }, settings, log)
  for (const id of ['ok', 'fails', 'errs']) await add(store, id)
  workers.start()
  workers.start()
  await until(async () => (await store.getJob('ok'))?.state === 'succeeded' && (await store.getJob('fails'))?.state === 'failed' && warnings.length > 0)
  await workers.stop(1000)
  t.match(await store.getJob('ok'), { state: 'succeeded', outcome: { status: 201 } })
  t.match(await store.getJob('fails'), { state: 'failed', outcome: { status: 404 } })
  t.match(await store.getJob('errs'), { state: 'running' }, 'left for its lease to end')
  t.same(runs.filter(id => id === 'ok'), ['ok'], 'done once')
  t.match(warnings, [/tried again when its lease ends/])
})

t.test('a job that keeps failing is kept failed after its last attempt, with the problem it carried or a 503', async t => {
  const store = memoryStore() as Required<Store>
  const attempts: Record<string, number[]> = { carried: [], thrown: [] }
  const problem = { type: 'about:blank', status: 503, title: 'Service Unavailable', detail: 'the store is unavailable' }
  const work: JobWork = async job => {
    attempts[job.id].push(job.attempt)
    throw job.id === 'carried' ? Object.assign(new Error('store down'), { outcome: problem }) : new Error('a bug')
  }
  const { warnings, log } = logger()
  // Leases of 1 ms: each failure is claimed again at once.
  const workers = createWorkers([store], { k: work }, { ...settings, leaseMillis: 1, maxAttempts: 3 }, log)
  for (const id of ['carried', 'thrown']) await add(store, id)
  workers.start()
  await until(async () => (await store.getJob('carried'))?.state === 'failed' && (await store.getJob('thrown'))?.state === 'failed')
  await workers.stop(1000)
  t.same(attempts, { carried: [1, 2, 3], thrown: [1, 2, 3] }, 'three attempts each, then no more')
  t.match(await store.getJob('carried'), { outcome: problem })
  t.match(await store.getJob('thrown'), { outcome: { status: 503, title: 'Service Unavailable', detail: /failed 3 times/ } })
  t.equal(warnings.filter(warning => /last attempt/.test(warning)).length, 2)
})

t.test('a lost lease: the work is undone and nothing recorded', async t => {
  const store = memoryStore() as Required<Store>
  await add(store, 'lost')
  const { log } = logger()
  let ran = false
  const workers = createWorkers([store], {
    k: async job => {
      ran = true
      // Another instance took the job meanwhile: its attempt is no longer this one's.
      return job.attempt
    }
  }, { ...settings, leaseMillis: 1 }, log)
  // Claimed, then claimed again before the first attempt ran: the first finds its lease lost.
  const [first] = await store.claimJobs(['k'], 1, 1)
  await new Promise(resolve => setTimeout(resolve, 5))
  workers.start()
  await until(async () => (await store.getJob('lost'))?.state === 'succeeded')
  await workers.stop(1000)
  t.ok(ran)
  t.equal((await store.getJob('lost'))?.outcome, first.attempt + 1, 'completed by the later attempt')
  t.equal(await store.holdJob('lost', first.attempt), false, 'the first attempt holds nothing')
})

t.test('claims, purges and recording a failure that fail are reported, and the loop goes on', async t => {
  const inner = memoryStore() as Required<Store>
  await add(inner, 'f')
  let claims = 0
  let transactions = 0
  const store: Store = {
    ...inner,
    claimJobs: async (...args) => { if (claims++ === 0) throw new Error('claim failed'); return await inner.claimJobs(...args) },
    purgeJobs: async () => { throw new Error('purge failed') },
    transaction: async work => { if (transactions++ === 1) throw new Error('record failed'); return await inner.transaction(work) }
  }
  const { warnings, log } = logger()
  const workers = createWorkers([store], { k: async () => { throw new JobFailed({ status: 409 }) } }, settings, log)
  workers.start()
  await until(async () => warnings.some(warning => /could not be recorded/.test(warning)))
  await workers.stop(1000)
  t.ok(warnings.some(warning => /claiming jobs failed/.test(warning)))
  t.ok(warnings.some(warning => /purging finished jobs failed/.test(warning)))
  t.match(await inner.getJob('f'), { state: 'running' }, 'left for its lease to end')
})

t.test('jobs a claim answers once the workers are stopping are not run: they are left for their lease', async t => {
  const inner = memoryStore() as Required<Store>
  await add(inner, 'late')
  let answer = () => {}
  let claiming = false
  // The claim waits (as behind a running transaction) until the workers were told to stop.
  const store: Store = { ...inner, claimJobs: async (...args) => { claiming = true; await new Promise<void>(resolve => { answer = resolve }); return await inner.claimJobs(...args) } }
  let ran = false
  const { log } = logger()
  const workers = createWorkers([store], { k: async () => { ran = true } }, settings, log)
  workers.start()
  await until(async () => claiming)
  const stopped = workers.stop(1000)
  answer()
  await stopped
  t.notOk(ran, 'not run')
  t.match(await inner.getJob('late'), { state: 'running', attempt: 1 }, 'claimed: another instance takes it when the lease ends')
})

t.test('stop waits for the running job no longer than its grace', async t => {
  const store = memoryStore() as Required<Store>
  await add(store, 'slow')
  let release = () => {}
  let began = false
  const { log } = logger()
  const workers = createWorkers([store], { k: async () => { began = true; await new Promise<void>(resolve => { release = resolve }) } }, settings, log)
  workers.start()
  workers.wake()
  await until(async () => began)
  await workers.stop(10)
  t.match(await store.getJob('slow'), { state: 'running' }, 'still running when the grace ran out: left to be claimed again')
  release()
})
