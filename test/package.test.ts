// What `npm install fastify-api-conventions` gets: the tarball holds the compiled package
// (dist/lib: .js and .d.ts), package.json, README.md, LICENSE and CHANGELOG.md, and nothing else:
// no demo, tests, benchmarks, and no source map pointing at TypeScript sources that are not shipped.
// The package is built into a temporary directory beside a copy of package.json and packed there,
// so whatever other builds left in this checkout's dist/ cannot hide or add anything.
import t from 'tap'
import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

// Compiling the package and running npm take seconds each on a busy machine.
t.setTimeout(120_000)

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)
const documents = ['README.md', 'LICENSE', 'CHANGELOG.md']

function filesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)])
}

interface Packed { name: string, files: Array<{ path: string }> }

t.test('the tarball holds the compiled package and its documents, nothing else', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'api-conventions-pack-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const file of ['package.json', ...documents]) copyFileSync(join(root, file), join(dir, file))
  await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', join(dir, 'dist')], { cwd: root })
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, env: { ...process.env, npm_config_loglevel: 'silent' } })
  const [packed] = JSON.parse(stdout) as Packed[]
  const paths = packed.files.map(file => file.path).sort()

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
