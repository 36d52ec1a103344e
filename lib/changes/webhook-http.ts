// Where webhooks may go (docs/changes.md "Webhooks"): the URL a subscription names, checked when it
// is written, and each delivery's POST. The POST resolves the URL's host itself, once per
// connection, refuses it when an address is private, loopback, link-local or otherwise not public
// and not allowed, and connects to the very addresses it checked: a second answer of the DNS (a
// rebinding) cannot move the connection somewhere else between the check and the connect.
import type { LookupAddress } from 'node:dns'
import { lookup } from 'node:dns/promises'
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import type { OutgoingHttpHeaders } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { BlockList, isIP } from 'node:net'
import type { LookupFunction } from 'node:net'

/** Resolves a host name to every address it has (dns.lookup with `all`). */
export type ResolveHost = (host: string) => Promise<readonly LookupAddress[]>

export const resolveHost: ResolveHost = async host => await lookup(host, { all: true })

/** A host as URLs carry it: lower case, IPv6 without brackets and in the form URLs and resolvers give it (`0:0::1` is `::1`). */
export function normalHost (host: string): string {
  const plain = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1')
  return isIP(plain) === 6 ? new URL(`http://[${plain}]`).hostname.slice(1, -1) : plain
}

/** Why `url` may not be delivered to; null when it may. */
export function urlRefusal (url: unknown, allowedHosts: ReadonlySet<string>): string | null {
  let parsed: URL
  try {
    parsed = new URL(String(url))
  } catch {
    return 'is not a URL'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must be an http: or https: URL'
  if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials'
  // Only listed hosts: every other name, and every private, loopback or link-local address, is refused.
  if (!allowedHosts.has(normalHost(parsed.hostname))) return `its host '${parsed.hostname}' is not one the server allows webhooks to`
  return null
}

// The addresses that are not public (IANA's special-purpose registries), by kind, the first that
// holds an address naming it. An IPv4-mapped IPv6 address (::ffff:10.0.0.1) is checked as the IPv4
// address it maps (BlockList does so), and NAT64's (64:ff9b::10.0.0.1) as the one it translates to.
const specialRanges = [
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  ['reserved', ['192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4',
    '::/96', '64:ff9b:1::/48', '100::/64', '2001::/23', '2001:db8::/32', '2002::/16', 'fec0::/10']]
] as const

const kinds = specialRanges.map(([kind, ranges]) => {
  const list = new BlockList()
  for (const range of ranges) {
    const [address, bits] = range.split('/')
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    list.addSubnet(address, Number(bits), family)
    if (family === 'ipv4') list.addSubnet(`64:ff9b::${address}`, 96 + Number(bits), 'ipv6')
  }
  return { kind, list }
})

/** What kind of address `address` is when it is not public ('loopback', 'private' …); null when it is. */
export function addressKind (address: string): string | null {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
  return kinds.find(({ list }) => list.check(address, family))?.kind ?? null
}

/**
 * Why `host` may not be connected to at `address`; null when it may: a public address, one listed
 * itself, or a loopback address of `localhost`, which names loopback by definition (RFC 6761 §6.3).
 */
function addressRefusal (host: string, address: string, allowedHosts: ReadonlySet<string>): string | null {
  const kind = addressKind(address)
  if (kind === null || allowedHosts.has(normalHost(address)) || (kind === 'loopback' && /(^|\.)localhost$/.test(host))) return null
  return `its host '${host}' resolves to ${address}, a ${kind} address the server does not allow webhooks to`
}

/** A connection refused by {@link addressRefusal}: its message is the delivery's lastError. */
class AddressRefused extends Error {}

/** The POSTs of the deliveries, and the connections they keep open between them. */
export interface WebhookPoster {
  /** What one attempt gives: the receiver's status, or what kept it from answering. */
  readonly post: (url: string, headers: OutgoingHttpHeaders, body: string) => Promise<{ status: number | null, error: string | null }>
  readonly close: () => void
}

export function webhookPoster (settings: { readonly allowedHosts: ReadonlySet<string>, readonly timeout: number, readonly resolveHost: ResolveHost }, stopping: AbortSignal): WebhookPoster {
  const { allowedHosts, timeout, resolveHost } = settings
  // Called by the socket for a host name (an address in the URL, listed, is connected to as it is).
  // With `autoSelectFamily` net asks for every address and tries those answered, and nothing else:
  // the addresses checked.
  const checkedLookup = ((host: string, _options: unknown, done: (error: Error | null, addresses?: readonly LookupAddress[]) => void) => {
    resolveHost(host).then(addresses => {
      const refusal = addresses.map(({ address }) => addressRefusal(host, address, allowedHosts)).find(reason => reason !== null)
      if (refusal === undefined) done(null, addresses)
      else done(new AddressRefused(`url ${refusal}`))
    }, done)
  }) as unknown as LookupFunction
  // Every connection the agents make resolves through it (kept open between POSTs: each was checked when made).
  const connect = { keepAlive: true, lookup: checkedLookup, autoSelectFamily: true }
  const agents = { 'http:': new HttpAgent(connect), 'https:': new HttpsAgent(connect) }

  async function post (url: string, headers: OutgoingHttpHeaders, body: string): Promise<{ status: number | null, error: string | null }> {
    const refusal = urlRefusal(url, allowedHosts)
    if (refusal !== null) return { status: null, error: `url ${refusal}` }
    const target = new URL(url)
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest
    const timer = AbortSignal.timeout(timeout)
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const request = send(target, {
          method: 'POST',
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
          agent: agents[target.protocol as 'http:' | 'https:'],
          signal: AbortSignal.any([timer, stopping])
        }, response => {
          // Only the status matters: the body is read to its end unseen, so the connection can serve the next POST.
          response.on('error', () => {})
          response.resume()
          resolve(response.statusCode as number)
        })
        request.on('error', reject)
        request.end(body)
      })
      // Redirects are answers like any other: not followed (node:http never does).
      return { status, error: status >= 200 && status < 300 ? null : `answered ${status}` }
    } catch (error) {
      if (timer.aborted) return { status: null, error: `no answer within ${timeout} ms` }
      return { status: null, error: (error as { code?: string }).code ?? (error as Error).message }
    }
  }

  return {
    post,
    close () {
      agents['http:'].destroy()
      agents['https:'].destroy()
    }
  }
}
