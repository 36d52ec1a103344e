// The reference page (spec "What the service does" 3): `/v1/docs` of the demo loads in headless
// Chromium with no console errors, offline (every request stays on the server), and shows the API's
// title; as a console, its "Test Request" creates a record from the page: its own origin, listed in
// ALLOWED_ORIGINS as the demo's default lists http://localhost:8080 (a browser sends Origin on a
// same-origin POST too).
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { chromium } from 'playwright-core'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'

const executablePath = '/usr/bin/chromium'

// .ci/run installs Debian's chromium; without it the page cannot be checked, and the test says so.
const missing = existsSync(executablePath) ? false : `no Chromium at ${executablePath} (apt-get install -y chromium)`
if (missing !== false) console.log(`# skipping the browser check: ${missing}`)

/** A port free on 127.0.0.1 now. */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise(resolve => server.close(resolve))
  return port
}

/** Chromium on the demo (memory store) on a free port, its origin allowed: its origin and the browser. */
async function demoInBrowser (t: Test) {
  const browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length', ALLOWED_ORIGINS: origin }))
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port })
  return { browser, origin }
}

t.test('the reference page loads offline in Chromium, without console errors, showing the title', { skip: missing }, async t => {
  const { browser, origin } = await demoInBrowser(t)
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
  t.equal(page.url(), `${origin}/v1/docs`, 'no redirect')
  await page.getByText(title).first().waitFor({ state: 'visible', timeout: 30000 })
  // The first tag's operations, by their summaries in the document.
  await page.getByText('Create an author').first().waitFor({ state: 'visible', timeout: 30000 })
  t.equal(await page.title(), title)
  t.same(offline, [], 'no request leaves the server')
  t.same(problems, [], 'no console errors')
})

t.test('"Test Request" on the page creates an author from the page\'s origin', { skip: missing }, async t => {
  const { browser, origin } = await demoInBrowser(t)
  const page = await browser.newPage()
  await page.goto(`${origin}/v1/docs`, { waitUntil: 'networkidle' })
  // The operation, by its summary in the document, then its console.
  await page.getByText('Create an author').first().click()
  await page.getByRole('button', { name: 'Test Request (post /authors)' }).click()
  await page.getByPlaceholder('Token').fill('dev-token')
  // The request body's editor, the last of the request's fields.
  await page.locator('[contenteditable=true]').last().fill('{ "name": "Ann from the console" }')
  const answered = page.waitForResponse(response => response.request().method() === 'POST')
  await page.getByRole('button', { name: /^Send post request/ }).click()
  const response = await answered
  const sent = await response.request().allHeaders()
  t.same({ origin: sent.origin, authorization: sent.authorization }, { origin, authorization: 'Bearer dev-token' }, 'a same-origin write carries Origin')
  t.equal(response.status(), 201)
  const created = (await response.json()).data.author
  t.match(created, { name: 'Ann from the console', id: String })
  const stored = await fetch(`${origin}/v1/authors/${String(created.id)}`, { headers: { authorization: 'Bearer read-token' } })
  t.same({ status: stored.status, name: (await stored.json()).data.author.name }, { status: 200, name: 'Ann from the console' })
})
