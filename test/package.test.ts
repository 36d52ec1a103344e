// What `npm install fastify-api-conventions` gets: the tarball holds the compiled package
// (dist/lib: .js and .d.ts), package.json, README.md, LICENSE, CHANGELOG.md and the documents the
// README links to (docs/*.md, CONTRIBUTING.md, SECURITY.md, benchmarks/README.md with its figure),
// and nothing else: no demo, tests, benchmark programs, and no source map pointing at TypeScript
// sources that are not shipped.
// The package is built into a temporary directory (helpers/pack.ts) and packed there.
import t from 'tap'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix, relative, resolve } from 'node:path'
import { buildPackage, documents, npmEnv, root, run } from './helpers/pack.js'

// Compiling the package and running npm take seconds each on a busy machine.
t.setTimeout(120_000)

function filesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)])
}

interface Packed { name: string, files: Array<{ path: string }> }

const dir = mkdtempSync(join(tmpdir(), 'api-conventions-pack-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
t.before(() => buildPackage(dir))

let packedPaths: Promise<string[]> | undefined
/** The paths of the tarball npm would publish, sorted. */
function tarballPaths (): Promise<string[]> {
  packedPaths ??= run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, env: npmEnv })
    .then(({ stdout }) => (JSON.parse(stdout) as Packed[])[0].files.map(file => file.path).sort())
  return packedPaths
}

t.test('the tarball holds the compiled package and its documents, nothing else', async t => {
  const paths = await tarballPaths()

  const unexpected = paths.filter(path => !documents.includes(path) && path !== 'package.json' && !/^dist\/lib\/.+(?<!\.d)\.js$|^dist\/lib\/.+\.d\.ts$/.test(path))
  t.same(unexpected, [], 'every path is dist/lib/**/*.js or *.d.ts, package.json or a document')
  t.same(paths.filter(path => /^dist\/(demo|test|benchmarks)\//.test(path)), [], 'no demo, tests or benchmarks')
  t.same(paths.filter(path => path.endsWith('.map')), [], 'no source maps')
  for (const file of ['package.json', ...documents]) t.ok(paths.includes(file), `${file} is in the tarball`)

  // Every module of lib/ is there, with its declarations: nothing the entry imports is missing.
  const modules = filesUnder(join(root, 'lib')).filter(file => file.endsWith('.ts')).map(file => relative(root, file).replace(/\.ts$/, ''))
  t.ok(modules.includes('lib/index'), 'lib/ is scanned')
  const expected = modules.flatMap(module => [`dist/${module}.js`, `dist/${module}.d.ts`]).sort()
  t.same(paths.filter(path => path.startsWith('dist/')), expected, 'one .js and one .d.ts per module of lib/')

  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { main: string, types: string, exports: Record<string, Record<string, string>> }
  for (const entry of [manifest.main, manifest.types, ...Object.values(manifest.exports['.'])]) {
    t.ok(paths.includes(entry.replace(/^\.\//, '')), `the entry ${entry} is in the tarball`)
  }

  // A compiled file naming a map that is not shipped would send debuggers looking for it.
  const mapped = paths.filter(path => path.startsWith('dist/') && readFileSync(join(dir, path), 'utf8').includes('sourceMappingURL'))
  t.same(mapped, [], 'no compiled file refers to a source map')
})

interface Manifest {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional?: boolean }>
  devDependencies: Record<string, string>
}

// What only one feature needs is an optional peer, imported when the feature is used
// (optional-packages.test.ts); the application's own fastify and TypeBox are the plugin's.
const peers = ['fastify', '@sinclair/typebox']
const optionalPeers = ['pg', '@electric-sql/pglite', '@scalar/fastify-api-reference', 'prom-client', '@opentelemetry/api', '@modelcontextprotocol/sdk', 'nats']

t.test('fastify and TypeBox are peer dependencies; the SQL driver, PGlite, Scalar, prom-client, the OpenTelemetry API and the MCP SDK optional ones', async t => {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
  t.same(Object.keys(manifest.peerDependencies).sort(), [...peers, ...optionalPeers].sort(), 'the peer dependencies')
  t.same(Object.keys(manifest.peerDependenciesMeta).filter(name => manifest.peerDependenciesMeta[name].optional === true).sort(), [...optionalPeers].sort(), 'the optional ones')
  // ioredis is not needed at all: the application passes its own client.
  const installedByAll = Object.keys(manifest.dependencies)
  t.same(installedByAll.filter(name => [...peers, ...optionalPeers, 'ioredis', '@types/pg'].includes(name)), [], 'none is a dependency every user installs')
  // The repository's own tests and demo use every one of them.
  for (const name of [...peers, ...optionalPeers]) t.equal(manifest.devDependencies[name], manifest.peerDependencies[name], `${name} is a development dependency of the same range`)
})

// `import … from '…'`, `export … from '…'` and `import('…')` in a declaration file.
const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*)['"]([^'"]+)['"]/g

/** The packages the declarations reachable from `entry` import, each with the first file importing it. */
function declaredImports (entry: string): Map<string, string> {
  const packages = new Map<string, string>()
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const [, path] of readFileSync(file, 'utf8').matchAll(specifier)) {
      if (path.startsWith('.')) visit(resolve(dirname(file), path.replace(/\.js$/, '.d.ts')))
      else if (!packages.has(path)) packages.set(path, relative(dir, file))
    }
  }
  visit(entry)
  return packages
}

t.test('the entry\'s declarations import only Node, the peers and the plugin\'s own dependencies', async t => {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
  const imported = declaredImports(join(dir, 'dist/lib/index.d.ts'))
  t.ok(imported.has('fastify'), 'the declarations are followed')
  const allowed = (name: string) => name.startsWith('node:') || peers.includes(name) || Object.hasOwn(manifest.dependencies, name)
  t.same([...imported].filter(([name]) => !allowed(name)), [], 'no optional package, and nothing a user may not have installed')
  // The Fastify augmentation (request.principal, request.audit) is reached from the entry.
  t.match(readFileSync(join(dir, 'dist/lib/index.d.ts'), 'utf8'), /from '\.\/security\/index\.js'/)
})

/** The heading anchors of a Markdown text, as GitHub and npm's renderer make them. */
function anchorsOf (markdown: string): Set<string> {
  return new Set(withoutCodeBlocks(markdown).split('\n').flatMap(line => {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1]
    if (heading === undefined) return []
    const text = heading.replaceAll(/\[([^\]]*)\]\([^)]*\)/g, '$1').replaceAll('`', '')
    return [text.trim().toLowerCase().replaceAll(/[^\p{L}\p{N}\- _]/gu, '').replaceAll(' ', '-')]
  }))
}

/** A Markdown text without its code blocks, where `#` is no heading and `](` no link. */
function withoutCodeBlocks (markdown: string): string {
  return markdown.replaceAll(/^(```|~~~).*?^\1/gms, '')
}

/** A Markdown text without its code blocks and code spans. */
function proseOf (markdown: string): string {
  return withoutCodeBlocks(markdown).replaceAll(/`[^`\n]*`/g, '')
}

t.test('every relative link of the shipped Markdown names a file (and a heading) in the tarball', async t => {
  const paths = await tarballPaths()
  const pages = paths.filter(path => path.endsWith('.md'))
  t.ok(pages.includes('README.md') && pages.includes('docs/rules.md') && pages.includes('SECURITY.md'), `${pages.length} pages`)
  const dead: string[] = []
  let checked = 0
  for (const page of pages) {
    for (const [, target] of proseOf(readFileSync(join(dir, page), 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z\d+.-]*:/i.test(target)) continue
      checked++
      const [path, fragment] = target.split('#')
      const file = path === '' ? page : posix.normalize(posix.join(posix.dirname(page), path))
      const exists = paths.includes(file) || (file.endsWith('/') && paths.some(shipped => shipped.startsWith(file)))
      if (!exists) dead.push(`${page}: ${target}`)
      else if (fragment !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(join(dir, file), 'utf8')).has(fragment)) dead.push(`${page}: ${target} (no such heading)`)
    }
  }
  t.ok(checked > 50, `${checked} links checked`)
  t.same(dead, [], 'no link leads out of the tarball or to a missing heading')
})

t.test('package.json names no repository, homepage or bugs address: the package has no public one yet', async t => {
  // Set them (and npm's page rewrites the README's relative links to the repository) once one exists.
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>
  t.same(['repository', 'homepage', 'bugs'].filter(key => key in manifest), [])
})
