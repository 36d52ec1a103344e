// The durable work queue's part of the store contract (stores/store.ts; lib/work/ uses it): jobs
// kept in the store's backend, so that work accepted by one instance survives it and is done by
// any. A job's completion is written in the same transaction as the work's own writes, so the two
// are kept together or not at all. Pure types.

/** `pending`: waiting to be claimed; `running`: claimed, under a lease; then `succeeded` or `failed`. */
export type JobState = 'pending' | 'running' | 'succeeded' | 'failed'

/** A job as it is added: what it is (`kind`: which runner takes it), whose it is, and what it needs (JSON). */
export interface NewJob {
  /** Unique, chosen by the caller (an unguessable id: it is part of a URL). */
  readonly id: string
  readonly kind: string
  /** Who may see it (a caller's key); null: no one but those who see every job. */
  readonly owner: string | null
  /** Anything JSON can hold. */
  readonly payload: unknown
  /** When it was added (its `updatedAt` too, until it changes). */
  readonly createdAt: Date
}

export interface Job extends NewJob {
  readonly state: JobState
  /** How many times it was claimed; a claim's attempt number is its lease's token. */
  readonly attempt: number
  /** Once finished: what it produced (JSON); null before. */
  readonly outcome: unknown
  readonly updatedAt: Date
}

/**
 * What a store keeping jobs implements (optional members of Store: a store without them serves no
 * asynchronous work).
 * - `addJob` keeps a new job, `pending`; in a transaction, with it.
 * - `claimJobs` (outside a transaction) marks up to `limit` jobs of these kinds `running` under a
 *   lease of `leaseMillis`, oldest first, and returns them with their new attempt number: pending
 *   ones, and running ones whose lease expired (their instance died). Instances sharing a backend
 *   never claim the same attempt (`FOR UPDATE SKIP LOCKED`).
 * - `holdJob`, in the transaction doing the job's work: true when the job is still `running` under
 *   this attempt, and then holds it against every other claim until the transaction ends; false
 *   when the lease was lost (the job was claimed again, or finished).
 * - `finishJob`, in that same transaction (or one of its own, for a failure): `succeeded` or
 *   `failed` with its outcome, kept until `keepUntil`.
 * - `getJob` reads one; `purgeJobs` deletes the finished ones whose time is up before `now`.
 */
export interface JobStore {
  addJob (job: NewJob): Promise<void>
  claimJobs (kinds: readonly string[], limit: number, leaseMillis: number): Promise<readonly Job[]>
  holdJob (id: string, attempt: number): Promise<boolean>
  finishJob (id: string, state: 'succeeded' | 'failed', outcome: unknown, keepUntil: Date): Promise<void>
  getJob (id: string): Promise<Job | null>
  purgeJobs (now: Date): Promise<number>
}
