// Packages only one feature needs (optional peer dependencies: a SQL driver, PGlite, the docs
// page's renderer): imported when that feature is used, so an application without it installs none.
import { OptionsInvalidError } from './errors.js'

/** Node's error for a package it cannot find, naming it (not one of the package's own imports). */
function isMissing (error: unknown, name: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && error.message.includes(`'${name}'`)
}

/**
 * The package `name` (or `specifier`, a module of it), or null when it is not installed; any other
 * failure to load it is thrown. Node names the package in its error, a module hook the specifier.
 */
export async function findOptional<T> (name: string, specifier = name): Promise<T | null> {
  try {
    return await import(specifier) as T
  } catch (error) {
    if (isMissing(error, name) || isMissing(error, specifier)) return null
    throw error
  }
}

/** The package `name` (or `specifier`, a module of it) that `feature` needs: when it is not installed, API_ERR_OPTIONS_INVALID says what to install. */
export async function importOptional<T> (name: string, feature: string, specifier = name): Promise<T> {
  const found = await findOptional<T>(name, specifier)
  if (found === null) throw new OptionsInvalidError(`${feature} needs the package ${name}, which is not installed: npm install ${name}`)
  return found
}
