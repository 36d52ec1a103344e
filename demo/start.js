// `npm start`: builds the demo (tsc -p tsconfig.demo.json, to dist/) only when its sources or its
// build output changed since the last build, then runs the server (dist/demo/server.js) in this
// same process, which npm's `exec` makes npm's own child: the SIGTERM or SIGINT npm passes on
// reaches the server itself (docs/demo-contract.md "Starting it"). Plain JavaScript: it runs before
// anything is compiled.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
// What the compiled JavaScript depends on: every file tsc reads for the demo (the demo imports
// lib/ through its public entry), its settings, and the compiler's own version.
const inputs = ['lib', 'demo', 'tsconfig.json', 'tsconfig.demo.json', 'package.json', 'node_modules/typescript/package.json']
// What the build wrote. Hashed too, so that dist/ changed by anything else (`npm run build`, a
// build from another branch) is never taken for this build.
const outputs = ['dist/lib', 'dist/demo']
// The digests of the inputs the last successful build read and of the outputs it wrote.
const stamp = join(root, 'dist/demo-build.sha256')

/** Every file under `paths` (files or folders, from the root), sorted; missing ones are skipped. */
function filesUnder (paths) {
  return paths.flatMap(path => {
    const full = join(root, path)
    if (!existsSync(full)) return []
    if (!statSync(full).isDirectory()) return [path]
    return filesUnder(readdirSync(full).sort().map(name => join(path, name)))
  })
}

/** One SHA-256 over the names and contents of the files under `paths`. */
function digest (paths) {
  const hash = createHash('sha256')
  for (const file of filesUnder(paths)) {
    const content = readFileSync(join(root, file))
    hash.update(`${file}\0${content.length}\0`).update(content)
  }
  return hash.digest('hex')
}

/** Runs tsc, saying why; true when it succeeded. A signal meanwhile stops tsc too, so nothing is left running. */
async function build (why) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const child = spawn(process.execPath, [tsc, '-p', join(root, 'tsconfig.demo.json')], { stdio: 'inherit' })
  const stop = signal => child.kill(signal)
  process.on('SIGTERM', stop).on('SIGINT', stop)
  // Said once a signal would reach tsc, so that whoever reads it may stop the build.
  console.log(`demo: building to dist/ (${why}): tsc -p tsconfig.demo.json`)
  const [code] = await once(child, 'exit')
  process.off('SIGTERM', stop).off('SIGINT', stop)
  return code === 0
}

const before = digest(inputs)
const built = existsSync(stamp) ? readFileSync(stamp, 'utf8') : ''
if (built === `${before} ${digest(outputs)}`) {
  console.log('demo: dist/ is up to date with the sources, not building')
} else {
  if (!await build(built === '' ? 'no build yet' : 'the sources or dist/ changed since the last build')) {
    // A failed or stopped build never leaves the previous build to run.
    console.error('demo: the build failed or was stopped; not starting')
    process.exit(1)
  }
  // The inputs as read before tsc ran: a file saved during the build makes the next start build again.
  writeFileSync(stamp, `${before} ${digest(outputs)}`)
}
await import('../dist/demo/server.js')
