// The reference page (spec "What the service does" 3): `/v1/docs` of the demo loads in headless
// Chromium with no console errors, offline (every request stays on the server), and shows the API's
// title.
import { existsSync } from 'node:fs'
import t from 'tap'
import { chromium } from 'playwright-core'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'

const executablePath = '/usr/bin/chromium'

// .ci/run installs Debian's chromium; without it the page cannot be checked, and the test says so.
const missing = existsSync(executablePath) ? false : `no Chromium at ${executablePath} (apt-get install -y chromium)`
if (missing !== false) console.log(`# skipping the browser check: ${missing}`)

t.test('the reference page loads offline in Chromium, without console errors, showing the title', { skip: missing }, async t => {
  const browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
  t.teardown(() => app.close())
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const title = (await (await fetch(`${origin}/v1/openapi.json`)).json()).info.title as string

  const page = await browser.newPage()
  const problems: string[] = []
  const offline: string[] = []
  page.on('console', message => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
  page.on('pageerror', error => problems.push(`page error: ${error.message}`))
  page.on('requestfailed', request => problems.push(`request failed: ${request.url()}`))
  // Anything not from this server is refused and recorded: the page must not need the network.
  await page.route('**/*', route => {
    const url = route.request().url()
    if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue()
    offline.push(url)
    return route.abort()
  })

  const response = await page.goto(`${origin}/v1/docs`, { waitUntil: 'networkidle' })
  t.equal(response?.status(), 200)
  t.equal(page.url(), `${origin}/v1/docs/`, 'after the redirect to the directory form')
  await page.getByText(title).first().waitFor({ state: 'visible', timeout: 30000 })
  // The first tag's operations, by their summaries in the document.
  await page.getByText('Create an author').first().waitFor({ state: 'visible', timeout: 30000 })
  t.equal(await page.title(), title)
  t.same(offline, [], 'no request leaves the server')
  t.same(problems, [], 'no console errors')
})
