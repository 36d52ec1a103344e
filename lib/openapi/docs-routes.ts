// The schemas of the plugin's own documentation routes: the OpenAPI document and the problem type
// pages, public and in one media type each.
import type { SchemaOptions } from '../routes/route-schema.js'
import { problems, requestId } from '../routes/http-prose.js'

const documentation = 'documentation'
const html = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string' } } } })
/** Public routes of one media type: no credentials, so no 401; problems in JSON only (http/negotiation.ts). */
const publicProblems = (options: SchemaOptions, statuses: readonly number[]) => problems({ ...options, authenticated: false }, statuses, {}, false)

/** `{prefix}/openapi.json`: this document. */
export function openApiRouteSchema (options: SchemaOptions) {
  return {
    operationId: 'getOpenApiDocument',
    summary: 'The OpenAPI definition',
    description: 'This OpenAPI 3.1 document, generated from the resource schemas; no authentication.',
    tags: [documentation],
    security: [],
    documentedResponses: {
      200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } }, headers: requestId },
      ...publicProblems(options, [])
    }
  }
}

/** `{prefix}/problems` and `{prefix}/problems/{slug}`: the pages the problem `type` URLs point to. */
export function problemTypesRouteSchema (options: SchemaOptions) {
  return {
    operationId: 'listProblemTypes',
    summary: 'List the problem types',
    description: 'An HTML page listing every problem type (error code) with when it is raised.',
    tags: [documentation],
    security: [],
    documentedResponses: { 200: html('The list of problem types.'), ...publicProblems(options, []) }
  }
}

export function problemTypeRouteSchema (options: SchemaOptions) {
  return {
    operationId: 'getProblemType',
    summary: 'Describe a problem type',
    description: 'The HTML page a problem\'s `type` URL points to: its code, status and when it is raised.',
    tags: [documentation],
    security: [],
    params: { type: 'object', properties: { slug: { type: 'string', description: 'The code in kebab case, e.g. not-found for API_ERR_NOT_FOUND.' } }, required: ['slug'] },
    documentedResponses: { 200: html('The problem type\'s page.'), ...publicProblems(options, [404]) }
  }
}
