// The demo's `books` resource (demo-service.md, "Resources").
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'

export const Book = Type.Object({
  id: Type.Readonly(Type.String({ description: 'Server-assigned identifier (UUIDv7).' })),
  title: Type.String({ minLength: 1, maxLength: 500 }),
  authorId: Type.String({ minLength: 1, description: 'The id of an existing author.' }),
  year: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  rating: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 5 }), Type.Null()])),
  available: Type.Optional(Type.Boolean({ default: true }))
}, { additionalProperties: false })

export type BookRecord = Static<typeof Book>
