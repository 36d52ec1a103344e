// The demo is built the way any host app is: from the package's public entry (lib/index.ts) only,
// so what it needs from the plugin is a documented export, not an internal module.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = fileURLToPath(new URL('..', import.meta.url))

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [])
}

// `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')`, types included.
const specifier = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g

/** The files under lib/ a source file imports, as paths from the repository root (`lib/index.ts`). */
function libImports (file: string, text = readFileSync(file, 'utf8')): string[] {
  return [...text.matchAll(specifier)]
    .map(match => match[1])
    .filter(path => path.startsWith('.'))
    .map(path => relative(root, resolve(dirname(file), path)).replace(/\.js$/, '.ts'))
    .filter(path => path.startsWith('lib/'))
}

t.test('every demo file imports from lib/ only its public entry, lib/index.ts', async t => {
  const files = sourceFiles(join(root, 'demo'))
  t.ok(files.some(file => file.endsWith('demo/app.ts')) && files.some(file => file.endsWith('demo/schemas/index.ts')), 'the demo and its schemas are scanned')
  const reached = new Set<string>()
  for (const file of files) {
    for (const path of libImports(file)) {
      reached.add(path)
      t.equal(path, 'lib/index.ts', `${relative(root, file)} imports ${path}`)
    }
  }
  t.same([...reached], ['lib/index.ts'], 'the scan finds the imports of the public entry')
})

t.test('the scan sees every import form, and only imports from lib/', async t => {
  const forms = [
    "import { a } from '../lib/problem.js'",
    "import type { B } from '../lib/security/limits.js'",
    "export { c } from '../lib/errors.js'",
    "import '../lib/formats/index.js'",
    "const d = await import('../lib/options.js')",
    "import { e } from './config.js'",
    "import Fastify from 'fastify'"
  ]
  t.same(libImports(join(root, 'demo/example.ts'), forms.join('\n')), ['lib/problem.ts', 'lib/security/limits.ts', 'lib/errors.ts', 'lib/formats/index.ts', 'lib/options.ts'])
})
