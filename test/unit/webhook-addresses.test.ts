// What a webhook delivery may connect to (lib/changes/webhook-http.ts; docs/changes.md "Webhooks"):
// the kind of each address that is not public, as IANA's special-purpose registries list them,
// IPv4-mapped and NAT64 addresses as the IPv4 address they carry; and hosts as URLs write them.
import t from 'tap'
import { addressKind, normalHost } from '../../lib/changes/webhook-http.js'

t.test('an address that is not public is named by its kind; a public one by null', async t => {
  const kinds: Record<string, string | null> = {
    '8.8.8.8': null,
    '93.184.215.14': null,
    '172.32.0.1': null,
    '2606:4700:4700::1111': null,
    '64:ff9b::808:808': null,
    '0.0.0.0': 'unspecified',
    '::': 'unspecified',
    '127.0.0.1': 'loopback',
    '127.255.0.1': 'loopback',
    '::1': 'loopback',
    '::ffff:7f00:1': 'loopback',
    '10.0.0.1': 'private',
    '172.16.0.1': 'private',
    '172.31.255.255': 'private',
    '192.168.1.1': 'private',
    '100.64.0.1': 'private',
    'fd12:3456::1': 'private',
    '::ffff:10.0.0.1': 'private',
    '169.254.169.254': 'link-local',
    'fe80::1': 'link-local',
    '64:ff9b::a9fe:a9fe': 'link-local',
    '224.0.0.1': 'multicast',
    'ff02::1': 'multicast',
    '192.0.2.1': 'reserved',
    '198.18.0.1': 'reserved',
    '255.255.255.255': 'reserved',
    '2001:db8::1': 'reserved',
    '2002:a00:1::1': 'reserved',
    '::7f00:1': 'reserved'
  }
  for (const [address, kind] of Object.entries(kinds)) t.equal(addressKind(address), kind, address)
})

t.test('a host as URLs and resolvers write it: lower case, IPv6 without brackets, compressed', async t => {
  t.equal(normalHost(' Hooks.Example.COM '), 'hooks.example.com')
  t.equal(normalHost('[0:0:0:0:0:0:0:1]'), '::1')
  t.equal(normalHost('::FFFF:127.0.0.1'), '::ffff:7f00:1')
  t.equal(normalHost('127.0.0.1'), '127.0.0.1')
})
