// A span per SQL statement (docs/metrics.md "Tracing"), child of the request's span, when the
// plugin traces the request: it sets the tracer in the request's OpenTelemetry context
// (tracing.ts). Statements outside a traced request (start-up, host code) start none. The text is
// the parameterised one: values stay placeholders, in the span as on the wire.
import { findOptional } from '../../optional.js'
import { kStatementTracer } from '../../symbols.js'
import type { QueryFunction, SqlDatabase } from './store.js'

type OpenTelemetry = typeof import('@opentelemetry/api')
type Tracer = import('@opentelemetry/api').Tracer

/** The statement's first keyword (`SELECT`, `WITH`, `INSERT`): OpenTelemetry's database conventions take the first operation found. */
function operationOf (text: string): string {
  // Every statement the store sends begins with one, perhaps after a parenthesis.
  return (/[A-Za-z]+/.exec(text) as RegExpExecArray)[0].toUpperCase()
}

/** Adds the statement spans to a database, when @opentelemetry/api is installed; without it, the database as it is. */
export async function statementTracing (): Promise<(db: SqlDatabase) => SqlDatabase> {
  const api = await findOptional<OpenTelemetry>('@opentelemetry/api')
  if (api === null) return db => db
  const { context, SpanKind, SpanStatusCode } = api
  const traced = (query: QueryFunction): QueryFunction => (text, values) => {
    const tracer = context.active().getValue(kStatementTracer) as Tracer | undefined
    if (tracer === undefined) return query(text, values)
    const operation = operationOf(text)
    // The span's parent is the active one: the request's.
    const span = tracer.startSpan(operation, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': text }
    })
    return query(text, values).then(rows => {
      span.end()
      return rows
    }, (error: unknown) => {
      // The SQLSTATE (or the driver's code), not the message, which may quote a value.
      const code = (error as { code?: unknown }).code
      span.setAttribute('error.type', typeof code === 'string' ? code : (error as Error).name)
      span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
      throw error
    })
  }
  return db => ({
    ...db,
    query: traced(db.query),
    transaction: async work => await db.transaction(async query => await work(traced(query)))
  })
}
