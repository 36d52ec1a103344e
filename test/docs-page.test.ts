// The reference page (spec "What the service does" 3): `/v1/docs` of the demo loads in headless
// Chromium with no console errors, offline (every request stays on the server), and shows the API's
// title; as a console, its "Test Request" creates a record from the page with the body the console
// prefills from the document's example, unchanged, then lists and retrieves it: from its own origin,
// which the demo accepts besides ALLOWED_ORIGINS (a browser sends Origin on a same-origin POST too),
// with ALLOWED_ORIGINS left at its default.
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

/** Chromium on the demo (memory store, default ALLOWED_ORIGINS) on a free port: its origin and the browser. */
async function demoInBrowser (t: Test) {
  const browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
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

t.test('the console sends the prefilled create body as it stands, then lists and retrieves what it made', { skip: missing }, async t => {
  const { browser, origin } = await demoInBrowser(t)
  const document = await (await fetch(`${origin}/v1/openapi.json`)).json()
  const example = document.paths['/authors'].post.requestBody.content['application/json'].examples.example.value
  const page = await browser.newPage()
  await page.goto(`${origin}/v1/docs`, { waitUntil: 'networkidle' })
  /** Opens an operation's console by its summary in the document; the token, typed once, stays. */
  const openConsole = async (summary: string, button: string) => {
    await page.keyboard.press('Escape')
    await page.getByText(summary).first().click()
    await page.getByRole('button', { name: `Test Request (${button})` }).click()
  }
  /** Sends the console's request, which carries the token; its answer. */
  const send = async (method: string) => {
    const answered = page.waitForResponse(response => response.request().method() === method.toUpperCase() && response.url().startsWith(`${origin}/v1/authors`))
    await page.getByRole('button', { name: new RegExp(`^Send ${method} request`) }).click()
    const response = await answered
    t.equal(await response.request().headerValue('authorization'), 'Bearer dev-token', `${method}: with the token`)
    return response
  }

  await openConsole('Create an author', 'post /authors')
  await page.getByPlaceholder('Token').fill('dev-token')
  // The request body's editor, the last of the request's fields, holds the document's example.
  t.same(JSON.parse(await page.locator('[contenteditable=true]').last().innerText()), example, 'the body prefilled from the document\'s example')
  const createdResponse = await send('post')
  t.equal(await createdResponse.request().headerValue('origin'), origin, 'a same-origin write carries Origin')
  t.same(createdResponse.request().postDataJSON(), example, 'sent unchanged')
  t.equal(createdResponse.status(), 201, await createdResponse.text())
  const created = (await createdResponse.json()).data.author
  t.match(created, { ...example, id: String })

  await openConsole('List authors', 'get /authors')
  const listed = await send('get')
  t.equal(listed.status(), 200)
  t.same((await listed.json()).data.authors, [created], 'the list holds the new author')

  await openConsole('Retrieve an author', 'get /authors/{id}')
  // The path variable's value, the field after its name.
  await page.locator('xpath=//*[@contenteditable="true" and normalize-space()="id"]/following::*[@contenteditable="true"][1]').fill(String(created.id))
  const retrieved = await send('get')
  t.equal(retrieved.url(), `${origin}/v1/authors/${String(created.id)}`)
  t.equal(retrieved.status(), 200)
  t.same((await retrieved.json()).data.author, created)
})
