// `npm start`: reads the environment, listens, and closes gracefully on SIGTERM/SIGINT
// (requests in flight finish, then the store closes). A bad setting is one line and exit 1.
import { loadConfig, ConfigError } from './config.js'
import { startDemoApp } from './app.js'
import { welcome } from './welcome.js'

// Slow clients: the headers must arrive within 10 s and the whole request within 30 s,
// else 408 (Fastify's default of 0 waits for ever); a socket silent for 75 s, a client that
// stopped reading say, is closed. Idle keep-alive connections end first, at Fastify's 72 s.
const timeouts = { requestTimeout: 30_000, connectionTimeout: 75_000 }
const headersTimeout = 10_000
const connectionsCheckingInterval = 1000
// While closing, Fastify's default answers requests still arriving on open connections (pipelined
// behind one in flight) with a plain JSON 503 of its own, before any hook: no security headers, no
// problem+json. Served instead, with Connection: close, they finish like the requests in flight.
const return503OnClosing = false

async function main () {
  const config = loadConfig(process.env)
  // The log goes through process.stdout, as console.log does, so the welcome printed after the log
  // lines arrives after them (pino's own stdout stream writes asynchronously, overtaken by console.log).
  const { app, sample } = await startDemoApp(config, { logger: { level: process.env.LOG_LEVEL || 'info', stream: process.stdout }, return503OnClosing, ...timeouts })
  // Node enforces requestTimeout on bodies only while headersTimeout (default 60 s) is not longer,
  // and checks both only every connectionsCheckingInterval (default 30 s, so 10 s became ~33 s).
  // Node reads these when it starts listening; its types know the interval only as a constructor option.
  const server = app.server as typeof app.server & { maxHeaderSize?: number, connectionsCheckingInterval: number }
  server.headersTimeout = headersTimeout
  server.connectionsCheckingInterval = connectionsCheckingInterval
  let closing = false
  function shutdown (signal: string) {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'closing: finishing requests in flight')
    // Fastify closes the connections idle when closing begins; one busy then stays open after its
    // response until the client drops it (Node's agent: 5 s, a proxy: minutes; keepAliveTimeout is
    // 72 s), holding the exit. Each is closed once idle instead, after any request pipelined on it.
    setInterval(() => server.closeIdleConnections(), 100).unref()
    app.close().then(() => process.exit(0), onCloseFailed)
  }
  /* c8 ignore next 4 */ // only a store whose close() rejects gets here, and the demo's stores do not
  function onCloseFailed (error: unknown) {
    app.log.error({ err: error }, 'close failed')
    process.exit(1)
  }
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
  let address: string
  try {
    address = await app.listen({ port: config.port, host: config.host })
  } catch (error) {
    // Close the store this process opened before reporting (an embedded database holds a lock).
    await app.close()
    throw error
  }
  // The limits in force, read back from the server, for operators (and the slow-client tests).
  app.log.info({
    requestTimeout: server.requestTimeout,
    headersTimeout: server.headersTimeout,
    connectionsCheckingInterval: server.connectionsCheckingInterval,
    connectionTimeout: server.timeout,
    keepAliveTimeout: server.keepAliveTimeout,
    maxHeaderSize: server.maxHeaderSize,
    bodyLimit: app.initialConfig.bodyLimit
  }, 'limits')
  // Last, so it is what a person starting the demo sees. console.log, as it is not a log record.
  console.log(welcome(address, config, sample).join('\n'))
}

main().catch((error: Error) => {
  // A bad setting names itself (ConfigError, from the environment or from connecting); anything else is a failed start.
  process.stderr.write(`${error instanceof ConfigError ? '' : 'Start-up failed: '}${error.message}\n`)
  process.exit(1)
})
