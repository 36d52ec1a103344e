// The streaming replica of the test PostgreSQL (.ci/replica.sh; DATABASE_READ_URL): made to lag
// (recovery_min_apply_delay), stopped and started again, always restored when a test ends. Test
// files run in parallel: one test at a time holds the replica (an advisory lock on the primary).
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import pg from 'pg'

interface TestLike { teardown (fn: () => unknown): void }

const run = promisify(execFile)
/** Starts or stops a cluster of this machine's PostgreSQL (.ci/replica.sh, .ci/cluster.sh made them). */
export async function pgCluster (name: string, action: 'start' | 'stop'): Promise<void> {
  const version = (await run('sh', ['-c', 'ls /etc/postgresql | sort -n | tail -1'])).stdout.trim()
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, action, ...action === 'stop' ? ['-m', 'fast'] : []])
}

export interface ReplicaControl {
  /** Until `undo`, the replica applies each commit this long after it was made. */
  lag (delay: string): Promise<void>
  stop (): Promise<void>
  start (): Promise<void>
  /** Resolves once the replica has replayed everything the primary has written so far. */
  caughtUp (): Promise<void>
  /** Connections to the replica whose application_name is `name`. */
  connections (name: string): Promise<number>
}

/** `cluster`: the replica's cluster name (`replica`, of .ci/replica.sh's default pair). */
export async function replicaControl (t: TestLike, primaryUrl: string, replicaUrl: string, cluster = 'replica'): Promise<ReplicaControl> {
  // Held by this session until the test ends; its two int keys never meet the store's locks.
  const holder = new pg.Client({ connectionString: primaryUrl })
  await holder.connect()
  await holder.query('SELECT pg_advisory_lock(424242, 7)')
  let lagging = false
  let stopped = false
  const onReplica = async <R extends pg.QueryResultRow>(text: string) => {
    const client = new pg.Client({ connectionString: replicaUrl })
    await client.connect()
    try {
      return (await client.query<R>(text)).rows
    } finally {
      await client.end()
    }
  }
  const setDelay = async (delay: string | null) => {
    await onReplica(delay === null ? 'ALTER SYSTEM RESET recovery_min_apply_delay' : `ALTER SYSTEM SET recovery_min_apply_delay = '${delay}'`)
    await onReplica('SELECT pg_reload_conf()')
  }
  const control: ReplicaControl = {
    async lag (delay) {
      lagging = true
      await setDelay(delay)
    },
    async stop () {
      stopped = true
      await pgCluster(cluster, 'stop')
    },
    async start () {
      await pgCluster(cluster, 'start')
      stopped = false
    },
    async caughtUp () {
      const primary = new pg.Client({ connectionString: primaryUrl })
      await primary.connect()
      const { rows: [{ lsn }] } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
      await primary.end()
      for (let tries = 0; tries < 200; tries++) {
        const [{ done }] = await onReplica<{ done: boolean }>(`SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`)
        if (done) return
        await new Promise(resolve => setTimeout(resolve, 50))
      }
      throw new Error(`the replica did not replay ${lsn} in 10 seconds`)
    },
    async connections (name) {
      const [{ count }] = await onReplica<{ count: string }>(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${name}'`)
      return Number(count)
    }
  }
  t.teardown(async () => {
    if (stopped) await control.start()
    if (lagging) await setDelay(null)
    // Ending the session releases the lock.
    await holder.end()
  })
  return control
}
