// Hand-written fast-json-stringify schemas for the demo's book envelopes, as someone writing bare
// Fastify routes would write them. The baseline serves with them and micro/serialize.ts races the
// plugin's derived schemas against them; the bytes must equal the plugin's (run.ts checks).

const book = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    title: { type: 'string' },
    authorId: { type: 'string' },
    year: { type: ['integer', 'null'] },
    rating: { type: ['number', 'null'] },
    available: { type: 'boolean' }
  },
  required: ['id', 'title', 'authorId']
}

const links = {
  type: 'array',
  items: { type: 'object', properties: { rel: { type: 'string' }, href: { type: 'string' } }, required: ['rel', 'href'] }
}

export const bookItemSchema = {
  type: 'object',
  properties: { data: { type: 'object', properties: { book }, required: ['book'] } },
  required: ['data']
}

export const bookListSchema = {
  type: 'object',
  properties: {
    meta: { type: 'object', properties: { pageSize: { type: 'integer' } }, required: ['pageSize'] },
    data: {
      type: 'object',
      properties: { books: { type: 'array', items: book }, pageSize: { type: 'integer' } },
      required: ['books', 'pageSize']
    },
    links
  },
  required: ['meta', 'data', 'links']
}

export const problemSchema = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string' },
    invalidParams: {
      type: 'array',
      items: { type: 'object', properties: { name: { type: 'string' }, reason: { type: 'string' } }, required: ['name', 'reason'] }
    }
  },
  required: ['type', 'title', 'status', 'detail']
}
