// The package as npm would publish it, made in a temporary directory: lib/ compiled by the build
// configuration beside a copy of package.json and the documents, so that whatever other builds
// left in this checkout's dist/ cannot hide or add anything.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const root = fileURLToPath(new URL('../..', import.meta.url))
export const run = promisify(execFile)
/**
 * The documents the tarball carries besides package.json: what the README links to, so that its
 * links resolve in node_modules and on file-serving CDNs (package.json "files").
 */
export const documents = [
  'README.md', 'LICENSE', 'CHANGELOG.md', 'CONTRIBUTING.md', 'SECURITY.md',
  ...readdirSync(join(root, 'docs')).filter(name => name.endsWith('.md')).map(name => `docs/${name}`),
  'benchmarks/README.md', 'benchmarks/results/ratios.svg'
].sort()
/** The environment without tap's loaders (NODE_OPTIONS), as a user's shell runs node, tsc and npm. */
export const plainEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS'))
/** npm quiet and without its advisories: the tests read its output. */
export const npmEnv = { ...plainEnv, npm_config_loglevel: 'error', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' }

/** Builds the package into `dir` (dist/ and the files package.json names); prepack's build, without the rest of this checkout. */
export async function buildPackage (dir: string): Promise<void> {
  for (const file of ['package.json', ...documents]) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    copyFileSync(join(root, file), join(dir, file))
  }
  await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', join(dir, 'dist')], { cwd: root })
}
