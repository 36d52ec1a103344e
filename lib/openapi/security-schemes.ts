// The document's security schemes: one per credential method the authentication options accept.
import type { ResolvedOptions } from '../options.js'

export type SecurityScheme =
  | { readonly type: 'http', readonly scheme: 'bearer' | 'basic', readonly description: string }
  | { readonly type: 'apiKey', readonly in: 'header', readonly name: string, readonly description: string }

/** OpenAPI security schemes of the configured authentication (spec "Authentication" 1, 2), by name; any one of them is accepted. */
export function securitySchemes (options: ResolvedOptions): Record<string, SecurityScheme> {
  const auth = options.auth
  if (auth === null) return {}
  const schemes: Record<string, SecurityScheme> = { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <token> (RFC 6750).' } }
  if (auth.basic !== undefined) schemes.basic = { type: 'http', scheme: 'basic', description: 'Authorization: Basic (RFC 7617).' }
  if (auth.apiKey !== undefined) schemes.apiKey = { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'Legacy key; Authorization wins when both are sent.' }
  return schemes
}
