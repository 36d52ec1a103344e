// The package as a user meets it (README "Install and compatibility"): packed, installed from the
// tarball into a new project with TypeScript's strictest settings, the samples of its README and
// docs/ pages and the user files of fixtures/consumer compiled by the TypeScript this repository
// pins and by the current 7.x from npm; then run, without any optional package installed.
import t from 'tap'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { buildPackage, npmEnv, plainEnv, root, run } from './helpers/pack.js'

// Building, packing, installing (from npm's cache when it has the packages) and two compilations.
t.setTimeout(300_000)

const userTsconfig = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node']
  },
  include: ['src']
}

/** The ```ts blocks of a Markdown text, in order. */
function typescriptSamples (markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map(match => match[1])
}

/** How many blocks a reader would take for TypeScript: more than typescriptSamples finds is a sample gone unchecked. */
function typescriptFences (markdown: string): number {
  return markdown.split('\n').filter(line => /^\s*(?:```|~~~)\s*(?:ts|typescript|tsx|mts)\b/i.test(line)).length
}

/**
 * The sample as a module of the user's project. A program of this repository imports the package
 * from its source ('../../lib/index.js'); a user imports it by name. A sample opening with a key
 * (`rules: {`) holds members of an object: the argument of the page context's `resource`.
 * Whatever the sample uses of the names its page's context file offers, and does not import or
 * declare itself, it imports from that file.
 */
function asModule (sample: string, context: { name: string, text: string } | undefined): string {
  const code = /^\w+: /.test(sample)
    ? `resource({\n${sample}})\n`
    : sample.replaceAll(/ from '(?:\.\.\/)+lib\/index\.js'/g, ' from \'fastify-api-conventions\'')
  if (context === undefined) return code
  const offered = [...context.text.matchAll(/^export (?:const|(?:async )?function|interface|type) (\w+)|^export (?:type )?\{([^}]+)\}/gm)]
    .flatMap(([, name, list]) => name !== undefined ? [name] : list.split(',').map(entry => entry.trim().split(/\s+as\s+/).pop() as string))
  const bound = (name: string) => new RegExp(`^import\\b.*\\b${name}\\b|\\b(?:const|let|var|function|class|interface|type) ${name}\\b`, 'm').test(code)
  const used = offered.filter(name => new RegExp(`\\b${name}\\b`).test(code) && !bound(name))
  return used.length === 0 ? code : `import { ${used.join(', ')} } from './${context.name}.js'\n${code}`
}

const work = mkdtempSync(join(tmpdir(), 'api-conventions-consumer-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
const project = join(work, 'project')
const fixtures = join(root, 'test/fixtures/consumer')

/** README.md and every page under docs/, each with its samples and the name its files take. */
const pages = ['README.md', ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' }).filter(path => path.endsWith('.md')).sort().map(path => `docs/${path}`)]
  .map(path => {
    const markdown = readFileSync(join(root, path), 'utf8')
    return { path, name: path.replace(/^docs\//, '').replace(/\.md$/, '').replaceAll('/', '-').toLowerCase(), fences: typescriptFences(markdown), samples: typescriptSamples(markdown) }
  })
const readmeSamples = pages[0].samples

t.before(async () => {
  const build = join(work, 'package')
  mkdirSync(build)
  await buildPackage(build)
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: build, env: npmEnv })
  const [{ filename }] = JSON.parse(stdout) as Array<{ filename: string }>

  mkdirSync(join(project, 'src'), { recursive: true })
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(userTsconfig, null, 2))
  // What a user of postgresStore adds; the Node types of the oldest Node the package supports.
  await run('npm', ['install', '--prefer-offline', '--ignore-scripts', join(work, filename), '@types/node@20', 'pg', '@types/pg', 'typescript@7'], { cwd: project, env: npmEnv })

  const fixtureFiles = readdirSync(fixtures)
  for (const file of fixtureFiles) copyFileSync(join(fixtures, file), join(project, 'src', file))
  for (const { name, samples } of pages) {
    const contextName = `${name}-context`
    const context = fixtureFiles.includes(`${contextName}.ts`) ? { name: contextName, text: readFileSync(join(fixtures, `${contextName}.ts`), 'utf8') } : undefined
    samples.forEach((sample, i) => writeFileSync(join(project, 'src', `${name}-${i + 1}.ts`), asModule(sample, context)))
  }
})

t.test('the README has TypeScript samples, the quick start among them', async t => {
  t.ok(readmeSamples.length >= 2, `${readmeSamples.length} samples`)
  t.ok(readmeSamples.some(sample => sample.includes('await app.register(apiConventions') && sample.includes('memoryStore()')), 'the quick start')
})

t.test('every TypeScript block of the README and of docs/ is a file of the compiled project', async t => {
  const files = readdirSync(join(project, 'src'))
  for (const { path, name, fences, samples } of pages) {
    t.equal(samples.length, fences, `${path}: each block that reads as TypeScript is a \`\`\`ts block`)
    t.equal(files.filter(file => new RegExp(`^${name}-\\d+\\.ts$`).test(file)).length, samples.length, `${path}: ${samples.length} files`)
  }
  // README.md and docs/: metrics, rules, security and stores.
  const withSamples = pages.filter(page => page.samples.length > 0)
  t.ok(withSamples.length >= 5, `${withSamples.length} pages with samples: ${withSamples.map(page => page.path).join(', ')}`)
})

/** The compiler's diagnostics, one per line; empty when the project compiles. `command` runs it. */
async function compile (command: readonly string[]): Promise<string> {
  try {
    const [file, ...args] = command
    await run(file, [...args, '-p', '.'], { cwd: project, env: plainEnv, maxBuffer: 16 * 1024 * 1024 })
    return ''
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string, stderr?: string }
    return `${stdout ?? ''}${stderr ?? ''}` || String(error)
  }
}

t.test('the user files compile under strict settings with the pinned TypeScript', async t => {
  const { version } = JSON.parse(readFileSync(join(root, 'node_modules/typescript/package.json'), 'utf8')) as { version: string }
  t.match(version, /^5\./)
  t.equal(await compile([process.execPath, join(root, 'node_modules/typescript/bin/tsc')]), '', `TypeScript ${version}: no diagnostics`)
})

t.test('the user files compile under strict settings with TypeScript 7', async t => {
  const { version } = JSON.parse(readFileSync(join(project, 'node_modules/typescript/package.json'), 'utf8')) as { version: string }
  t.match(version, /^7\./)
  // TypeScript 7's `tsc` is a script starting a native compiler: started here directly, since tap's
  // process tracking, which it adds to every Node process this test starts, cannot load the script.
  const getExePath = (await import(pathToFileURL(join(project, 'node_modules/typescript/lib/getExePath.js')).href) as { default: () => string }).default
  t.equal(await compile([getExePath()]), '', `TypeScript ${version}: no diagnostics`)
})

t.test('a memoryStore application runs without PGlite, Scalar or ioredis installed', async t => {
  const installed = readdirSync(join(project, 'node_modules')).flatMap(name =>
    name.startsWith('@') ? readdirSync(join(project, 'node_modules', name)).map(inner => `${name}/${inner}`) : [name])
  t.same(['@electric-sql/pglite', '@scalar/fastify-api-reference', 'ioredis'].filter(name => installed.includes(name)), [], 'none is installed')
  writeFileSync(join(project, 'run.js'), `
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineResource, memoryStore, pgliteStore } from 'fastify-api-conventions'
const Book = Type.Object({ id: Type.Readonly(Type.String()), title: Type.String() }, { additionalProperties: false })
const resources = [defineResource({ name: 'books', singular: 'book', schema: Book, store: memoryStore() })]
const app = Fastify()
await app.register(apiConventions, { prefix: '/v1', resources })
const created = await app.inject({ method: 'POST', url: '/v1/books', payload: { title: 'Dune' } })
const docs = await app.inject({ url: '/v1/docs' })
const openapi = await app.inject({ url: '/v1/openapi.json' })
const pglite = await pgliteStore({ dataDir: 'data' }).then(() => 'opened', error => error.message)
const asked = Fastify()
const docsPage = await asked.register(apiConventions, { resources, docsPage: true }).ready().then(() => 'served', error => error.message)
console.log(JSON.stringify({ created: created.statusCode, docs: docs.statusCode, openapi: openapi.statusCode, pglite, docsPage }))
`)
  const { stdout } = await run(process.execPath, ['run.js'], { cwd: project, env: plainEnv })
  t.same(JSON.parse(stdout), {
    created: 201,
    docs: 404,
    openapi: 200,
    pglite: 'Invalid api-conventions options: pgliteStore needs the package @electric-sql/pglite, which is not installed: npm install @electric-sql/pglite',
    docsPage: 'Invalid api-conventions options: docsPage needs the package @scalar/fastify-api-reference, which is not installed: npm install @scalar/fastify-api-reference'
  })
})
