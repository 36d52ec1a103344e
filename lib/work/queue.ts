// The work queue's workers (STYLE: one home per concern): on every instance, a loop per store that
// claims jobs of the kinds it knows (stores/jobs.ts), runs each, and writes its completion in the
// transaction of its work, so that a job's effects and its `succeeded` are kept together or not at
// all. A job is done at least once (a claim whose instance died returns to the queue when its lease
// ends) and at most once (the work's transaction holds the job under its own attempt, and a lost
// lease rolls the work back). Resource writes answered 202 are one kind of job (work/async-writes.ts).
import type { Store } from '../stores/store.js'
import type { Job } from '../stores/jobs.js'

/** Thrown by a job's work to roll its writes back and record the job `failed` with `outcome`. */
export class JobFailed extends Error {
  constructor (readonly outcome: unknown) {
    super('the job failed')
  }
}

/**
 * A kind of job: its work, given the job and the transaction its writes must join; it answers the
 * outcome kept with `succeeded`, throws JobFailed for a failure to keep, and anything else for one
 * to try again (the store unavailable, say: the job returns to the queue when its lease ends).
 */
export type JobWork = (job: Job, tx: Store) => Promise<unknown>

export interface WorkerSettings {
  /** How many jobs one instance runs at once, per store. */
  readonly concurrency: number
  /** How long a claim holds a job before another instance may take it (its instance presumed dead). */
  readonly leaseMillis: number
  /** How long an idle worker waits before it looks again (work added on this instance wakes it at once). */
  readonly pollMillis: number
  /** How long a finished job is kept, then purged. */
  readonly keepMillis: number
  /** How many claims a job gets: the last one's failure is kept (`failed`), not tried again. */
  readonly maxAttempts: number
}

export interface Workers {
  /** Begins claiming. */
  start (): void
  /** A job was just added on this instance: look now rather than at the next poll. */
  wake (): void
  /** Stops claiming; resolves once the jobs running have finished, or after `graceMillis`, leaving those to be claimed again. */
  stop (graceMillis: number): Promise<void>
}

/** What the workers report: work that failed in a way the queue retries. */
export interface WorkLog { warn (fields: object, message: string): void }

/** How often finished jobs past their time are purged, at most, per store. */
const purgeInterval = 60_000

/** A lease lost before the work committed (the job was claimed again): the work is undone. */
class LeaseLost extends Error {}

/** What a job that failed every attempt without a failure of its own to keep is kept with. */
const attemptsSpent = (attempts: number) => ({
  type: 'about:blank',
  status: 503,
  title: 'Service Unavailable',
  detail: `The operation failed ${attempts} times on a transient fault (the store unavailable, say) and will not be tried again: send it again.`
})

export function createWorkers (stores: readonly Store[], kinds: Readonly<Record<string, JobWork>>, settings: WorkerSettings, log: WorkLog): Workers {
  const names = Object.keys(kinds)
  /** Read by the loops between their awaits; set by `stop`. */
  const state = { stopping: true }
  const loops: Array<Promise<void>> = []
  const running = new Set<Promise<void>>()
  /** The idle loops, each woken by calling its function. */
  const sleepers = new Set<() => void>()
  const wakeAll = () => { for (const wake of sleepers) wake() }

  /** Waits for the next poll, or a wake. */
  function idle (): Promise<void> {
    return new Promise<void>(resolve => {
      const wake = () => { clearTimeout(timer); sleepers.delete(wake); resolve() }
      const timer = setTimeout(wake, settings.pollMillis)
      sleepers.add(wake)
    })
  }

  async function runJob (store: Store, job: Job): Promise<void> {
    const keepUntil = () => new Date(Date.now() + settings.keepMillis)
    try {
      await store.transaction(async tx => {
        if (!await (tx.holdJob as NonNullable<Store['holdJob']>)(job.id, job.attempt)) throw new LeaseLost()
        const outcome = await kinds[job.kind](job, tx)
        await (tx.finishJob as NonNullable<Store['finishJob']>)(job.id, 'succeeded', outcome, keepUntil())
      })
    } catch (error) {
      if (error instanceof LeaseLost) return
      const lastAttempt = job.attempt >= settings.maxAttempts
      if (!(error instanceof JobFailed) && !lastAttempt) {
        log.warn({ err: error, job: job.id, attempt: job.attempt }, 'api-conventions: a job failed and will be tried again when its lease ends')
        return
      }
      // Its writes were rolled back with its transaction; the failure is kept in one of its own.
      const outcome = error instanceof JobFailed ? error.outcome : (error as { outcome?: unknown }).outcome ?? attemptsSpent(job.attempt)
      if (!(error instanceof JobFailed)) log.warn({ err: error, job: job.id, attempt: job.attempt }, 'api-conventions: a job failed on its last attempt and is kept failed')
      await store.transaction(async tx => {
        if (await (tx.holdJob as NonNullable<Store['holdJob']>)(job.id, job.attempt)) await (tx.finishJob as NonNullable<Store['finishJob']>)(job.id, 'failed', outcome, keepUntil())
      }).catch((failure: unknown) => log.warn({ err: failure, job: job.id }, 'api-conventions: a failed job could not be recorded; it will be tried again when its lease ends'))
    }
  }

  async function loop (store: Store): Promise<void> {
    let lastPurge = 0
    while (!state.stopping) {
      const free = settings.concurrency - running.size
      let claimed: readonly Job[] = []
      if (free > 0) {
        claimed = await (store.claimJobs as NonNullable<Store['claimJobs']>)(names, free, settings.leaseMillis).catch((error: unknown) => {
          log.warn({ err: error }, 'api-conventions: claiming jobs failed; trying again')
          return []
        })
      }
      // Claimed while stopping (a claim waits for a running transaction on memory and PGlite): left for the lease.
      for (const job of state.stopping ? [] : claimed) {
        const done: Promise<void> = runJob(store, job).finally(() => {
          running.delete(done)
          wakeAll()
        })
        running.add(done)
      }
      if (Date.now() - lastPurge > purgeInterval) {
        lastPurge = Date.now()
        await (store.purgeJobs as NonNullable<Store['purgeJobs']>)(new Date()).catch((error: unknown) => log.warn({ err: error }, 'api-conventions: purging finished jobs failed'))
      }
      // A full claim may have left more: look again at once.
      if (claimed.length === 0 || claimed.length < free) await idle()
    }
  }

  return {
    start () {
      if (!state.stopping) return
      state.stopping = false
      for (const store of stores) loops.push(loop(store))
    },
    wake: wakeAll,
    async stop (graceMillis) {
      state.stopping = true
      wakeAll()
      let grace: NodeJS.Timeout | undefined
      const timeUp = new Promise<void>(resolve => { grace = setTimeout(resolve, graceMillis) })
      // A loop may wait on a claim that waits for a running job: both within the grace.
      await Promise.race([Promise.all([...loops.splice(0), ...running]), timeUp])
      clearTimeout(grace)
    }
  }
}
