// Module hooks (node:module register) that make packages look uninstalled to the process, as Node
// reports a package it cannot find; `broken` ones are found but miss a package of their own.
let missing = []
let broken = []

export function initialize (data) {
  missing = data.missing
  broken = data.broken
}

function notFound (name, parentURL) {
  return Object.assign(new Error(`Cannot find package '${name}' imported from ${parentURL}`), { code: 'ERR_MODULE_NOT_FOUND' })
}

export function resolve (specifier, context, next) {
  if (missing.includes(specifier)) throw notFound(specifier, context.parentURL)
  if (broken.includes(specifier)) throw notFound('a-dependency-of-it', `file:///node_modules/${specifier}/index.js`)
  return next(specifier, context)
}
