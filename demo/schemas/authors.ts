// The demo's `authors` resource (docs/demo-contract.md, "Resources").
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'

export const Author = Type.Object({
  id: Type.Readonly(Type.String({ description: 'Server-assigned identifier (UUIDv7).' })),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  born: Type.Optional(Type.Union([Type.String({ format: 'date' }), Type.Null()])),
  country: Type.Optional(Type.Union([Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2' }), Type.Null()]))
}, { additionalProperties: false })

export type AuthorRecord = Static<typeof Author>
