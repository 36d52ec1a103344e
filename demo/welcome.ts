// What `npm start` prints once it listens (docs/demo-contract.md, "Starting it"): where the API, its
// documentation page and its OpenAPI document are, which tokens open it (with their users and
// rights), and one curl line to try.
// Plain lines for a person at a terminal, after the JSON log lines meant for machines.
import type { DemoConfig, Right } from './config.js'
import { sampleCounts } from './seed.js'
import type { SeedOutcome } from './seed.js'

const rights: Record<Right, string> = {
  admin: 'every operation; sees every review and moderatorNote',
  write: 'every operation',
  read: 'GET, HEAD and OPTIONS only'
}

/**
 * The lines to print, for the server listening at `address` (as `app.listen` resolves it); `sample`
 * says whether this start wrote the sample catalogue (seed.ts).
 */
export function welcome (address: string, config: Pick<DemoConfig, 'apiTokens'>, sample: SeedOutcome | 'off' = 'off'): string[] {
  const api = `${address}/v1`
  const tokens = [...config.apiTokens]
  const width = Math.max(0, ...tokens.map(([token]) => token.length))
  const userWidth = Math.max(0, ...tokens.map(([, { user }]) => user.length))
  // Any token can read, and a read is what the first request should be.
  const first = tokens[0]?.[0]
  return [
    'Books demo API is running.',
    `  API:      ${api}`,
    `  Docs:     ${api}/docs  (no token needed)`,
    `  OpenAPI:  ${api}/openapi.json`,
    ...(sample === 'seeded' ? [`  Sample:   ${sampleCounts.authors} authors, ${sampleCounts.books} books and ${sampleCounts.reviews} reviews written into the empty store (SEED=false skips this)`] : []),
    ...(first === undefined
      ? ['  Tokens:   none (API_TOKENS is empty)', 'Try:', `  curl ${address}/health`]
      : [
          '  Tokens (Authorization: Bearer <token>, from API_TOKENS):',
          ...tokens.map(([token, { right, user }]) => `    ${token.padEnd(width)}  user ${user.padEnd(userWidth)}  ${right}: ${rights[right]}`),
          'Try:',
          `  curl -H 'Authorization: Bearer ${first}' ${api}/books`
        ])
  ]
}
