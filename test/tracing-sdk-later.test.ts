// Tracing (docs/metrics.md "Tracing") while no OpenTelemetry SDK is registered: on by default since
// @opentelemetry/api is installed, the API's no-op tracer records nothing and requests are served
// as ever; an SDK the host registers after the plugin records the spans from then on. A file of
// its own: the SDK registers globally, once per process.
import t from 'tap'
import { trace, SpanKind } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { buildApp, seed } from './helpers/app.js'

t.test('without an SDK requests are served untraced; an SDK registered later records the next ones', async t => {
  const app = await buildApp(t)
  const { books: [book] } = await seed(app)
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
  const before = await app.inject({ url: `/v1/books/${book.id}`, headers: { traceparent } })
  t.equal(before.statusCode, 200)
  t.match(before.json(), { data: { book: { id: book.id } } })

  const exporter = new InMemorySpanExporter()
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  provider.register()
  t.teardown(async () => {
    await provider.shutdown()
    trace.disable()
  })
  const after = await app.inject({ url: `/v1/books/${book.id}`, headers: { traceparent } })
  t.equal(after.statusCode, 200)
  await new Promise(resolve => setImmediate(resolve))
  t.match(exporter.getFinishedSpans(), [{ name: 'GET /v1/books/:id', kind: SpanKind.SERVER, attributes: { 'http.response.status_code': 200 } }])
  t.equal(exporter.getFinishedSpans()[0].spanContext().traceId, '0af7651916cd43dd8448eb211c80319c')
})
