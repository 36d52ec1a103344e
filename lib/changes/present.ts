// Rules at read (docs/changes.md "What a caller sees"): a change is shown to a caller as the caller
// would see the record, judged on the record as it was before and after the change (so the same
// page reads the same later): visible after but not before → `create`; visible before but not
// after → `delete` without data; visible neither time → absent; fields the caller may not read left out.
import type { FilterNode } from '../query/filter/ast.js'
import { compilePredicate } from '../query/filter/evaluate.js'
import { readableFields } from '../query/list-query.js'
import { project } from '../envelope/index.js'
import type { ResourceModel, View } from '../registry/model.js'
import type { Views } from '../rules/view.js'
import type { ChangeRecord, Fields } from '../stores/store.js'

/** A change as the feed answers it (the contract's shape). */
export interface ShownChange {
  readonly id: string
  readonly position: string
  readonly resource: string
  readonly recordId: string
  readonly operation: ChangeRecord['operation']
  readonly version: number
  readonly at: string
  readonly data?: Record<string, Fields>
}

/**
 * A row rule is evaluated on the record the change holds: its own fields. A rule that reaches
 * through a relation finds no related values there (documented in docs/changes.md).
 */
const ownFields = (record: Fields, path: readonly string[]): readonly unknown[] => path.length === 1 ? [record[path[0]]] : []

/** The views of a caller who may see everything: the registered models (the admin's view, for brokers). */
export const unrestricted: Pick<Views, 'forCaller'> = { forCaller: () => model => model }

/** How the changes read for each caller. */
export function changePresenter (models: ReadonlyMap<string, ResourceModel>, views: Pick<Views, 'forCaller'>) {
  const predicates = new WeakMap<FilterNode, (record: Fields) => boolean>()
  const visibleTo = (view: View, record: Fields | null): boolean => {
    if (record === null) return false
    if (view.visible === undefined) return true
    let predicate = predicates.get(view.visible)
    if (predicate === undefined) predicates.set(view.visible, predicate = compilePredicate(view.visible, ownFields))
    return predicate(record)
  }

  /** The change as `principal` sees it; null when it does not see it at all. */
  return function present (principal: unknown, change: ChangeRecord): ShownChange | null {
    const model = models.get(change.resource)
    // A resource no longer served: its changes are no one's to see.
    if (model === undefined) return null
    const view = views.forCaller(principal)(model)
    // Without a row rule, a record existed before every change but its create.
    const before = view.visible === undefined ? change.operation !== 'create' : visibleTo(view, change.previous)
    const after = visibleTo(view, change.data)
    if (!before && !after) return null
    const operation = !after ? 'delete' : before ? change.operation : 'create'
    const shown = { id: change.id, position: change.position, resource: change.resource, recordId: change.recordId, operation, version: change.version, at: change.at.toISOString() }
    return after ? { ...shown, data: { [model.singular]: project(change.data as Fields, readableFields(view)) } } : shown
  }
}
