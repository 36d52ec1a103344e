// Hand-written fast-json-stringify schemas for the demo's book (and review) envelopes, as someone writing bare
// Fastify routes would write them. The baseline serves with them and micro/serialize.ts races the
// plugin's derived schemas against them; the bytes must equal the plugin's (run.ts checks).

export const book = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    title: { type: 'string' },
    authorId: { type: 'string' },
    year: { type: ['integer', 'null'] },
    rating: { type: ['number', 'null'] },
    available: { type: 'boolean' },
    reviewCount: { type: 'integer' },
    averageRating: { type: ['number', 'null'] }
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

// A review as a caller who is not an admin sees it: no moderatorNote (the serializer drops it).
// Members in the order the plugin writes them, the mandatory ones first.
const review = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    bookId: { type: 'string' },
    rating: { type: 'integer' },
    ownerId: { type: 'string' },
    text: { type: ['string', 'null'] },
    private: { type: 'boolean' },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' }
  },
  required: ['id', 'bookId', 'rating', 'ownerId']
}

export const reviewListSchema = {
  type: 'object',
  properties: {
    meta: { type: 'object', properties: { pageSize: { type: 'integer' } }, required: ['pageSize'] },
    data: {
      type: 'object',
      properties: { reviews: { type: 'array', items: review }, pageSize: { type: 'integer' } },
      required: ['reviews', 'pageSize']
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
