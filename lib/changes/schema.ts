// The feed's route schema (docs/changes.md), documentation only: the handler checks its parameters
// (feed.ts) and writes its answer; the OpenAPI document shows `/changes` from this.
import type { JsonSchema } from '../registry/derive.js'
import type { OperationContext } from '../operations/context.js'
import { problems, requestHeaders, requestId } from '../routes/http-prose.js'
import type { SchemaOptions } from '../routes/route-schema.js'

const change: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'Identifies the change, the same wherever it is delivered.' },
    position: { type: 'string', description: 'Where the change sits in commit order; opaque: give it back as `after` or Last-Event-ID.' },
    resource: { type: 'string', description: 'The resource (plural name) of the record changed.' },
    recordId: { type: 'string' },
    operation: { type: 'string', enum: ['create', 'replace', 'modify', 'delete'], description: 'As the caller sees it: a record it can now see for the first time is a `create`, one it can no longer see a `delete`.' },
    version: { type: 'integer', description: 'The record\'s version after the change (its ETag\'s).' },
    at: { type: 'string', format: 'date-time' },
    data: { type: 'object', description: 'The record after the change, under its singular name, with the fields the caller may read; absent for a delete.' }
  },
  required: ['id', 'position', 'resource', 'recordId', 'operation', 'version', 'at']
}

/**
 * The OpenAPI 3.1 `webhooks` entry (docs/changes.md "Webhooks"): what a subscription's url receives,
 * a change as the subscription's owner may see it, signed as Standard Webhooks say.
 */
export const changeWebhook = {
  post: {
    operationId: 'receiveChange',
    summary: 'A change, POSTed to a subscription\'s url',
    description: 'One request per change the subscription\'s owner may see, in commit order for each record. Signed as Standard Webhooks say: verify `webhook-signature` against `{webhook-id}.{webhook-timestamp}.{body}` before trusting the body, and drop a `webhook-id` already handled (a delivery may come more than once).',
    tags: ['webhooks'],
    parameters: [
      { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' }, description: 'The change\'s id: the same on every attempt, and in the body.' },
      { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string', pattern: '^[0-9]+$' }, description: 'When the attempt was made, in seconds since the epoch.' },
      { name: 'webhook-signature', in: 'header', required: true, schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}$' }, description: '`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the bytes of the subscription\'s secret (base64 after `whsec_`).' }
    ],
    requestBody: { required: true, content: { 'application/json': { schema: change } } },
    responses: { '2XX': { description: 'Received: the delivery is done. Any other answer, or none within the timeout, is tried again on the retry schedule; after the last attempt the delivery is dead.' } },
    security: []
  }
}

export function changesRouteSchema (context: OperationContext, options: SchemaOptions) {
  const resources = [...context.models.keys()]
  return {
    operationId: 'listChanges',
    summary: 'Read the changes',
    description: 'Every committed write (CREATE, REPLACE, MODIFY, DELETE, in a batch or not, and the derived values they update), one change per record written, in the order the writes committed, as the caller may see each record. A page that ends before the head is final: the same `after` always reads the same changes, and it may be cached. With `Accept: text/event-stream`, the backlog and then each change as it commits, as Server-Sent Events (`id` the position, `event: change`), with a comment line at least every 15 s; `Last-Event-ID` resumes after that change.',
    tags: ['changes'],
    querystring: {
      type: 'object',
      properties: {
        after: { type: 'string', pattern: '^[0-9]+$', description: 'Start after this position (a `position` or the `next` link\'s). Default: the oldest change kept.' },
        pageSize: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        resource: { type: 'string', description: `Only these resources, comma-separated: ${resources.join(', ')}.` },
        wait: { type: 'integer', minimum: 1, maximum: 30, description: 'When nothing follows `after`: wait up to this many seconds for the next change, answering as soon as one commits.' }
      }
    },
    headers: requestHeaders('changes', options),
    produces: ['application/json', 'text/event-stream'],
    documentedResponses: {
      200: {
        type: 'object',
        properties: {
          meta: { type: 'object', properties: { pageSize: { type: 'integer' } }, required: ['pageSize'] },
          data: { type: 'object', properties: { changes: { type: 'array', items: change } }, required: ['changes'] },
          links: { description: '`self`, and `next`: always there; at the head it is where to resume.' }
        },
        required: ['meta', 'data', 'links'],
        description: 'A page of changes. A final page (more follow) carries Cache-Control `private, max-age=…` and an ETag.',
        headers: { ...requestId, 'Cache-Control': { type: 'string' }, ETag: { type: 'string' } }
      },
      ...problems(options, [400, 410], {
        400: '`after` or Last-Event-ID is not a position, `pageSize` or `wait` is out of range, or `resource` names no resource; invalidParams names each.'
      }, false)
    }
  }
}
