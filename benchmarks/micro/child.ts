// Runs each micro-benchmark case in a child process of its own, so one case's JIT feedback and
// garbage never slow another, and times one function with tinybench on a CPU-time clock.
import { spawnSync } from 'node:child_process'
import { Bench } from 'tinybench'

export interface Timing { readonly opsPerSec: number, readonly rme: number }

/** Runs `script --case <id> [--quick]` and parses the JSON it prints. */
export function inChild<T> (script: string, id: string, quick: boolean): T {
  const child = spawnSync(process.execPath, [script, '--case', id, ...(quick ? ['--quick'] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  if (child.status !== 0) throw new Error(`${script} --case ${id}: exited with ${String(child.status)}`)
  return JSON.parse(child.stdout) as T
}

/** The `--case` argument when this process is a child, else undefined. */
export function caseArgument (): string | undefined {
  const at = process.argv.indexOf('--case')
  return at === -1 ? undefined : process.argv[at + 1]
}

export const isQuick = () => process.argv.includes('--quick')

function cpuMilliseconds (): number {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

export async function time (name: string, run: () => unknown, quick: boolean): Promise<Timing> {
  // The clock is this process's CPU time, not the wall clock: other processes competing for the
  // two cores then barely change the result (wall-clock runs varied by ±25 % on a busy machine).
  const bench = new Bench({ time: quick ? 300 : 1000, warmupTime: quick ? 100 : 300, now: cpuMilliseconds })
  bench.add(name, run)
  await bench.run()
  const result = bench.tasks[0].result
  if (result.state !== 'completed') throw new Error(`${name}: ${result.state}`)
  // From the mean time per call: the mean of per-sample rates would overweight the fastest samples.
  return { opsPerSec: 1000 / result.latency.mean, rme: result.latency.rme }
}
