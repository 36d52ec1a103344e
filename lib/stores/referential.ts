// Referential rules shared by the stores (spec "Errors" 3): an unknown related id is 422, deleting a
// parent that still has children is 409.
import { ConflictError, UnprocessableError, withInvalidParams } from '../errors.js'
import type { ViewRelation } from '../registry/model.js'

export function missingRelatedError (relation: ViewRelation, value: unknown) {
  return withInvalidParams(
    new UnprocessableError(`${relation.field} refers to ${relation.target.singular} '${String(value)}', which does not exist.`),
    [{ name: relation.field, reason: `no ${relation.target.singular} has this id` }])
}

export function hasChildrenError (relation: ViewRelation, singular: string) {
  return new ConflictError(`This ${singular} still has ${relation.name}; delete or move them first.`)
}
