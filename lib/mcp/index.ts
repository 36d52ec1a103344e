// The MCP endpoint (docs/mcp.md): `POST {prefix}/mcp` speaks the Model Context Protocol's Streamable
// HTTP transport, stateless (a server and a transport per request, no session), through the official
// SDK, an optional peer dependency loaded only when the option is on. It is an ordinary route of the
// plugin: authentication, the rate limit, CORS and the response headers apply to it as to any other,
// and each tool call is performed by the operation core as the caller's own request (tools.ts).
import type { FastifyReply, FastifyRequest } from 'fastify'
import { BodyMalformedError, HeaderInvalidError, NotAcceptableError, withInvalidParams } from '../errors.js'
import type { OperationContext } from '../operations/context.js'
import type { Operations } from '../operations/index.js'
import { importOptional } from '../optional.js'
import { apiRoute } from '../route-spec.js'
import type { RouteSpec } from '../route-spec.js'
import { createTools } from './tools.js'
import type { ResolvedMcp } from './options.js'

const sdkPackage = '@modelcontextprotocol/sdk'
type ServerModule = typeof import('@modelcontextprotocol/sdk/server/index.js')
type TransportModule = typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')
type TypesModule = typeof import('@modelcontextprotocol/sdk/types.js')

/** The SDK's parts the endpoint uses; registration fails naming the package when it is not installed. */
async function loadSdk () {
  const load = <T>(module: string) => importOptional<T>(sdkPackage, 'mcp', `${sdkPackage}/${module}`)
  const [{ Server }, { WebStandardStreamableHTTPServerTransport }, types] = await Promise.all([
    load<ServerModule>('server/index.js'),
    load<TransportModule>('server/webStandardStreamableHttp.js'),
    load<TypesModule>('types.js')
  ])
  return { Server, WebStandardStreamableHTTPServerTransport, types }
}

/** The request headers the transport reads; the credentials are not among them, so they go no further. */
const transportHeaders = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id']

/**
 * The transport's own refusals (JSON-RPC errors over 4xx) as the plugin's problems: an unsupported
 * MCP-Protocol-Version header, a body that is JSON but no JSON-RPC message of MCP.
 */
function refusalOf (status: number, text: string): Error | null {
  if (status < 400) return null
  // The transport words each refusal as a JSON-RPC error (its createJsonErrorResponse).
  const message = String((JSON.parse(text) as { error: { message: unknown } }).error.message)
  if (/protocol version/i.test(message)) return withInvalidParams(new HeaderInvalidError(), [{ name: 'MCP-Protocol-Version', reason: message }])
  return withInvalidParams(new BodyMalformedError('it is not a JSON-RPC message of MCP'), [{ name: 'body', reason: message }])
}

/** The route of `POST {prefix}/mcp`. */
export async function mcpRouteSpec (settings: ResolvedMcp, context: OperationContext, core: Operations): Promise<RouteSpec> {
  const { Server, WebStandardStreamableHTTPServerTransport, types } = await loadSdk()
  const tools = createTools(context, core)
  const info = { name: context.options.openapi.title, version: context.options.openapi.version }
  const json = ['application/json']

  /**
   * One MCP request. The transport answers JSON (`enableJsonResponse`), not an event stream: a
   * stateless server sends nothing after its answer. Its web-standard Response is then sent through
   * Fastify's reply, not written to the raw socket, so that every onSend step (security headers,
   * compression, Server-Timing) applies as on any other route.
   */
  async function serveMcp (request: FastifyRequest, reply: FastifyReply) {
    const accept = request.headers.accept ?? ''
    // MCP Streamable HTTP: a client accepts both (the transport would answer a bare JSON-RPC 406).
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) throw new NotAcceptableError('application/json with text/event-stream (MCP Streamable HTTP)')
    const server = new Server(info, { capabilities: { tools: {} }, ...(settings.instructions !== undefined && { instructions: settings.instructions }) })
    server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools: await tools.list(request) }))
    server.setRequestHandler(types.CallToolRequestSchema, async ({ params }) => {
      const result = await tools.call(request, params.name, params.arguments ?? {})
      if (result === undefined) throw new types.McpError(types.ErrorCode.InvalidParams, `Unknown tool: ${params.name}`)
      return result
    })
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    const headers = new Headers()
    for (const name of transportHeaders) {
      const value = request.headers[name]
      // Node joins repeated fields of these into one string.
      if (value !== undefined) headers.set(name, String(value))
    }
    let status: number
    let type: string | null
    let text: string
    try {
      await server.connect(transport)
      const response = await transport.handleRequest(new Request(`http://localhost${context.envelope.prefix}/mcp`, { method: 'POST', headers }), { parsedBody: request.body })
      ;({ status } = response)
      type = response.headers.get('content-type')
      text = await response.text()
    } finally {
      await server.close()
    }
    const refusal = refusalOf(status, text)
    if (refusal !== null) throw refusal
    reply.code(status)
    if (type !== null) reply.type(type)
    return text === '' ? reply.send() : reply.send(text)
  }

  return apiRoute({
    method: 'POST',
    path: '/mcp',
    allow: ['POST'],
    operation: 'mcp',
    bodyTypes: json,
    responseTypes: json,
    // Not in the OpenAPI document: MCP describes itself (tools/list), and docs/mcp.md the endpoint.
    schema: { hide: true },
    handler: serveMcp
  })
}
