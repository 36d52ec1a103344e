// ts-node's transpiler for the tests (the "ts-node" section of tsconfig.json names it):
// ts-node's own TypeScript transpilation, kept on disk by the content it came from. ts-node
// transpiles every .ts file each process loads, each time: about 7 s of CPU for lib/ alone, paid
// by every test file and every demo process a test starts, for the same output each time. Here a
// file's output (code and source map, so coverage maps to the source) is looked up by a hash of
// everything it depends on: the TypeScript version, the compiler options, the module kind, the
// file's path and its text. A changed file is a new key, so an entry is never stale; entries are
// written to a temporary name and renamed, so processes running at once never read half of one.
// Output with a diagnostic (a syntax error) is returned, never kept.
'use strict'
const { createHash } = require('node:crypto')
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { dirname, join } = require('node:path')

const tsNode = dirname(require.resolve('@isaacs/ts-node-temp-fork-for-pr-2009/package.json'))
// The function ts-node itself calls in transpile-only mode (not among its exports, hence the path).
const { createTsTranspileModule } = require(join(tsNode, 'dist/ts-transpile-module.js'))

/** Where the outputs are kept; TS_TRANSPILE_CACHE moves it. Removing it at any time is safe. */
const cacheDir = process.env.TS_TRANSPILE_CACHE ?? join(tmpdir(), `fastify-api-conventions-ts-${process.getuid?.() ?? 'user'}`)
try { mkdirSync(cacheDir, { recursive: true }) } catch {}

/** ts-node's transpiler factory: one per compiler options and module kind. */
exports.create = ({ service, nodeModuleEmitKind }) => {
  const ts = require(service.projectLocalResolveHelper('typescript', true))
  const compilerOptions = service.config.options
  const transpileModule = createTsTranspileModule(ts, { compilerOptions, reportDiagnostics: true })
  // As ts-node passes it: the package.json type the file is transpiled under.
  const packageType = nodeModuleEmitKind === 'nodeesm' ? 'module' : 'commonjs'
  const context = JSON.stringify([ts.version, compilerOptions, packageType])
  return {
    transpile (code, { fileName }) {
      const key = createHash('sha256').update(context).update('\0').update(fileName).update('\0').update(code).digest('hex')
      const path = join(cacheDir, `${key}.json`)
      try {
        return JSON.parse(readFileSync(path, 'utf8'))
      } catch {}
      const result = transpileModule(code, { fileName }, packageType)
      if (result.diagnostics.length > 0) return result
      const output = { outputText: result.outputText, sourceMapText: result.sourceMapText }
      try {
        const temporary = `${path}.${process.pid}.tmp`
        writeFileSync(temporary, JSON.stringify(output))
        renameSync(temporary, path)
      } catch {} // not kept (a full or read-only disk): transpiled again next time
      return output
    }
  }
}
