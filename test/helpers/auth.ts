// Credentials for tests: a bearer verifier over two tokens with the demo's rights
// (`read`: GET/HEAD/OPTIONS only; `write`: everything), and the headers a client sends with them.
import { defineAuth, secretTable } from '../../lib/index.js'
import type { AuthOptions } from '../../lib/index.js'

export interface TestPrincipal { readonly id: string, readonly right: 'read' | 'write' }

export const tokens = { write: 'write-token-0123', read: 'read-token-4567' } as const

const readMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Bearer auth over `tokens`, authorising like the demo; `overrides` replace any member. */
export function testAuth (overrides: Partial<AuthOptions<TestPrincipal>> = {}) {
  const lookUp = secretTable<TestPrincipal>([
    [tokens.write, { id: 'writer', right: 'write' }],
    [tokens.read, { id: 'reader', right: 'read' }]
  ])
  return defineAuth<TestPrincipal>({
    realm: 'test',
    authorizationUri: 'https://auth.example.com/authorize',
    bearer: async token => lookUp(token),
    authorize: ({ principal, method }) => principal.right === 'write' || readMethods.has(method),
    ...overrides
  })
}

/** Request headers: valid read and write credentials, and a well-formed but unknown token. */
export const auth = {
  read: { authorization: `Bearer ${tokens.read}` },
  write: { authorization: `Bearer ${tokens.write}` },
  bad: { authorization: 'Bearer not-a-known-token' },
  writeJson: { authorization: `Bearer ${tokens.write}`, 'content-type': 'application/json' },
  readJson: { authorization: `Bearer ${tokens.read}`, 'content-type': 'application/json' }
} as const
