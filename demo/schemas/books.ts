// The demo's `books` resource (docs/demo-contract.md, "Resources", and the derived values of "Application rules").
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'

export const Book = Type.Object({
  id: Type.Readonly(Type.String({ description: 'Server-assigned identifier (UUIDv7).' })),
  title: Type.String({ minLength: 1, maxLength: 500 }),
  authorId: Type.String({ minLength: 1, description: 'The id of an existing author.' }),
  year: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  rating: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 5 }), Type.Null()])),
  available: Type.Optional(Type.Boolean({ default: true })),
  // Derived from the book's reviews (reviews.ts keeps them in step).
  reviewCount: Type.ReadonlyOptional(Type.Integer({ minimum: 0, description: 'Number of reviews of the book, private ones included (set by the server).' })),
  averageRating: Type.ReadonlyOptional(Type.Union([Type.Number(), Type.Null()], { description: 'Average review rating, rounded to 2 decimals; null without reviews (set by the server).' }))
}, { additionalProperties: false })

export type BookRecord = Static<typeof Book>
