// The error catalogue (spec "Errors"; STYLE §6): every code is documented in the README table,
// every request error has a problem-type description, and codes follow API_ERR_<WHAT>.
import { readFile } from 'node:fs/promises'
import t from 'tap'
import * as errors from '../lib/errors.js'

const constructors = Object.entries(errors).filter(([name]) => name.endsWith('Error')) as Array<[string, new (...args: unknown[]) => Error & { code: string, statusCode: number }]>

t.test('every catalogue error has an API_ERR_ code and appears in the README table', async t => {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
  t.ok(constructors.length > 20)
  for (const [name, Ctor] of constructors) {
    const error = new Ctor('x', 'y')
    t.match(error.code, /^API_ERR_[A-Z_]+$/, name)
    t.ok(readme.includes(`| \`${error.code}\` |`), `${error.code} is in the README`)
  }
})

t.test('every request error has a problem type description, and every description a code', async t => {
  // Boot errors are TypeErrors thrown at registration; they have no problem type.
  const requestCodes = constructors.map(([, Ctor]) => new Ctor('x', 'y')).filter(e => !(e instanceof TypeError)).map(e => e.code)
  t.same([...requestCodes].sort(), Object.keys(errors.problemDescriptions).sort())
})
