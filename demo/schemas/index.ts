// The demo's resources, defined over one store so relations and referential rules hold.
import { defineResource } from '../../lib/index.js'
import type { Store } from '../../lib/index.js'
import { Author } from './authors.js'
import { Book } from './books.js'
import { reviewsResource } from './reviews.js'

export function demoResources (store: Store) {
  const authors = defineResource({
    name: 'authors',
    singular: 'author',
    schema: Author,
    store,
    defaultPageSize: 20,
    maxPageSize: 100,
    searchable: ['name'],
    relations: { books: { kind: 'many', resource: 'books', field: 'authorId' } }
  })
  const books = defineResource({
    name: 'books',
    singular: 'book',
    schema: Book,
    store,
    defaultPageSize: 20,
    maxPageSize: 100,
    searchable: ['title'],
    relations: {
      author: { kind: 'one', resource: 'authors', field: 'authorId' },
      reviews: { kind: 'many', resource: 'reviews', field: 'bookId' }
    },
    // A new book has no reviews; each review write recounts them (reviews.ts).
    serverValues: {
      reviewCount: { on: 'create', value: () => 0 },
      averageRating: { on: 'create', value: () => null }
    }
  })
  return [authors, books, reviewsResource(store)]
}
