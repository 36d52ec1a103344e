// The error table (spec "Errors"; CONTRIBUTING.md "an error code"): every code is raised somewhere,
// documented in the errors table of the README (or of docs/), and, for request errors, served as a
// problem page; codes follow API_ERR_<WHAT>, and a foreign error's status names one code.
import { readdir, readFile } from 'node:fs/promises'
import t from 'tap'
import * as errors from '../lib/errors.js'
import { buildApp } from './helpers/app.js'

const constructors = Object.entries(errors).filter(([name]) => name.endsWith('Error')) as Array<[string, new (...args: unknown[]) => Error & { code: string, statusCode: number }]>
const entries = [...errors.errorTable.values()]

/** The README, or where the docs moved it: the errors table is looked for there and in docs/*.md. */
async function documentation () {
  const docs = new URL('../docs/', import.meta.url)
  const pages = await readdir(docs).catch(() => [] as string[])
  const texts = await Promise.all([
    readFile(new URL('../README.md', import.meta.url), 'utf8'),
    ...pages.filter(name => name.endsWith('.md')).map(name => readFile(new URL(name, docs), 'utf8'))
  ])
  return texts.join('\n')
}

/** Every source file under lib/ but the table itself. */
async function librarySources () {
  const lib = new URL('../lib/', import.meta.url)
  const names = (await readdir(lib, { recursive: true })).filter(name => name.endsWith('.ts') && name !== 'errors.ts')
  return Promise.all(names.map(name => readFile(new URL(name, lib), 'utf8')))
}

t.test('every catalogue error has an API_ERR_ code and appears in the README table', async t => {
  const readme = await documentation()
  t.ok(constructors.length > 20)
  for (const [name, Ctor] of constructors) {
    const error = new Ctor('x', 'y')
    t.match(error.code, /^API_ERR_[A-Z_]+$/, name)
    t.ok(readme.includes(`| \`${error.code}\` |`), `${error.code} is in the README`)
  }
})

t.test('every exported error class is one entry of the table, under its own code and status', async t => {
  t.equal(entries.length, constructors.length)
  for (const [name, Ctor] of constructors) t.ok(entries.some(entry => entry.ErrorClass === Ctor), `${name} is in the table`)
  for (const entry of entries) {
    const error = new entry.ErrorClass('x', 'y')
    t.same([error.code, error.statusCode], [entry.code, entry.status], entry.code)
    t.equal(entry.boot, error instanceof TypeError, `${entry.code} is a boot error exactly when it is a TypeError`)
  }
})

t.test('the errors table documents each code with its status ("boot" for boot errors), and no other code', async t => {
  const text = await documentation()
  for (const entry of entries) {
    t.ok(text.includes(`| \`${entry.code}\` | ${entry.boot ? 'boot' : entry.status} |`), `${entry.code} is documented as ${entry.boot ? 'boot' : entry.status}`)
  }
  const documented = [...text.matchAll(/^\| `(API_ERR_[A-Z_]+)` \|/gm)].map(match => match[1])
  t.same([...new Set(documented)].sort(), entries.map(entry => entry.code).sort())
})

t.test('every code is raised somewhere in lib/', async t => {
  const sources = (await librarySources()).join('\n')
  for (const [name, Ctor] of constructors) {
    t.ok(sources.includes(`new ${name}(`), `${new Ctor().code}: new ${name}( is in lib/`)
  }
})

t.test('every request error has a problem type description, and every description a code', async t => {
  // Boot errors are TypeErrors thrown at registration; they have no problem type.
  const requestCodes = constructors.map(([, Ctor]) => new Ctor('x', 'y')).filter(e => !(e instanceof TypeError)).map(e => e.code)
  t.same([...requestCodes].sort(), Object.keys(errors.problemDescriptions).sort())
})

t.test('every request error has a problem page; boot errors have none', async t => {
  const app = await buildApp(t)
  for (const entry of entries) {
    const res = await app.inject({ url: `/v1/problems/${entry.slug}` })
    t.equal(res.statusCode, entry.boot ? 404 : 200, entry.code)
    if (!entry.boot) t.match(res.body, `<h1>${entry.code}</h1><p>`)
  }
})

t.test('a status several request codes share marks one of them for errors of that status from elsewhere', async t => {
  const requestErrors = entries.filter(entry => !entry.boot)
  for (const status of new Set(requestErrors.map(entry => entry.status))) {
    const codes = requestErrors.filter(entry => entry.status === status)
    const marked = codes.filter(entry => entry.forStatus)
    t.equal(marked.length, codes.length > 1 ? 1 : 0, `${status}: one mark where several codes share it`)
    t.equal(errors.codeOfStatus.get(status), (marked[0] ?? codes[0]).code, `${status} names ${(marked[0] ?? codes[0]).code}`)
  }
})
