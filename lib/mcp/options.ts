// The `mcp` option (docs/mcp.md): the Model Context Protocol endpoint at `{prefix}/mcp`, off unless given.
import { OptionsInvalidError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'

export interface McpOptions {
  /** Told to the client when it connects (MCP `instructions`), for its model: what the API is for. Default: none. */
  readonly instructions?: string | undefined
}

export interface ResolvedMcp { readonly instructions: string | undefined }

const mcpKeys = knownKeys({ instructions: true } satisfies Record<keyof McpOptions, true>)

/** `true` or an object serves the endpoint; `false` or nothing does not. */
export function resolveMcp (value: unknown): ResolvedMcp | null {
  if (value === undefined || value === false) return null
  if (value !== true && (typeof value !== 'object' || value === null)) throw new OptionsInvalidError(`mcp must be a boolean or an object { instructions? }, received ${JSON.stringify(value)}`)
  const given = (value === true ? {} : value) as Record<string, unknown>
  refuseUnknownKeys(given, mcpKeys, 'mcp')
  const { instructions } = given
  if (instructions !== undefined && (typeof instructions !== 'string' || instructions.trim() === '')) throw new OptionsInvalidError(`mcp.instructions must be a non-empty string, received ${JSON.stringify(instructions)}`)
  return Object.freeze({ instructions })
}
