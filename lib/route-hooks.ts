// Hooks that only some routes need go on those routes as they are added (onRoute), not on every
// request: a GET then runs no body check, no audit log hook and no header hook it has no use for.
import type { RouteOptions } from 'fastify'

type HookName = 'onRequest' | 'preParsing' | 'preValidation' | 'onSend' | 'onResponse'
type HookOf<K extends HookName> = Extract<NonNullable<RouteOptions[K]>, (...args: never[]) => unknown>

/** Appends `hook` to the route's own `name` hooks. */
export function addRouteHook<K extends HookName> (route: RouteOptions, name: K, hook: HookOf<K>) {
  const current = route[name] as HookOf<K> | Array<HookOf<K>> | undefined
  const hooks: Array<HookOf<K>> = current === undefined ? [] : Array.isArray(current) ? current : [current]
  ;(route as unknown as Record<K, Array<HookOf<K>>>)[name] = [...hooks, hook]
}

const bodiless = new Set(['GET', 'HEAD'])

/** Whether requests to the route may carry a body (every method but GET and HEAD may). */
export const mayHaveBody = (route: RouteOptions) => ![route.method].flat().every(method => bodiless.has(method))
