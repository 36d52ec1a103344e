// One PGlite per test file: initdb takes seconds, so the first file to
// need one saves an initialised data directory in the temp folder and the others start from it.
import { readFile, rename, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'

// Keyed by PGlite's version: a data directory only fits the PostgreSQL build that wrote it.
const { version } = JSON.parse(await readFile(fileURLToPath(new URL('../package.json', import.meta.resolve('@electric-sql/pglite'))), 'utf8')) as { version: string }
export const template = join(tmpdir(), `apic-pglite-${version}.tar`)

export async function openPglite (): Promise<PGlite> {
  const saved = await readFile(template).catch(() => undefined)
  if (saved !== undefined) return await PGlite.create({ loadDataDir: new Blob([saved]) })
  const db = await PGlite.create()
  const dump = await db.dumpDataDir('none')
  const partial = `${template}.${process.pid}`
  await writeFile(partial, Buffer.from(await dump.arrayBuffer()))
  await rename(partial, template)
  return db
}
