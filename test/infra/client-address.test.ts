import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { clientAddressResolver } from '../../src/infra/client-address.js';
import { countedClient } from '../../src/publishing/stats/client.js';

/** The eight groups of an IPv6 address, by a reference expansion (URL's own IPv6 parser). */
function groupsOf(v6: string): string[] {
  const host = new URL(`http://[${v6}]/`).hostname.slice(1, -1);
  const [head = '', tail] = host.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined ? [] : tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => Number.parseInt(g, 16).toString(16));
}

describe('the counted client of an address', () => {
  test('property: an IPv4 address is itself, also when mapped into IPv6', () => {
    fc.assert(
      fc.property(fc.ipV4(), (v4) => {
        assert.equal(countedClient(v4), v4);
        assert.equal(countedClient(`::ffff:${v4}`), v4);
        assert.equal(countedClient(`::FFFF:${v4}`), v4);
      }),
    );
  });

  test('property: an IPv6 address is its /64; addresses of one /64 are one client, of two /64s two', () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.ipV6(), (a, b) => {
        const ga = groupsOf(a);
        const gb = groupsOf(b);
        const isMapped = (g: string[]) => g.slice(0, 5).every((x) => x === '0') && g[5] === 'ffff';
        fc.pre(!isMapped(ga) && !isMapped(gb));
        assert.equal(countedClient(a), `${ga.slice(0, 4).join(':')}::/64`);
        // The same /64 with another interface identifier.
        const sibling = [...ga.slice(0, 4), ...gb.slice(4)].join(':');
        if (!isMapped(groupsOf(sibling))) assert.equal(countedClient(sibling), countedClient(a));
        assert.equal(countedClient(a) === countedClient(b), ga.slice(0, 4).join(':') === gb.slice(0, 4).join(':'));
      }),
    );
  });

  test('examples: zones, spellings, not an address', () => {
    assert.equal(countedClient('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(countedClient('2001:DB8:0:0:ffff::1'), '2001:db8:0:0::/64');
    assert.equal(countedClient('2001:db8:0:1::1'), '2001:db8:0:1::/64');
    assert.equal(countedClient('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(countedClient('::1'), '0:0:0:0::/64');
    assert.equal(countedClient('::ffff:7f00:1'), '127.0.0.1');
    assert.equal(countedClient('unknown'), 'unknown');
    assert.equal(countedClient('x'.repeat(100)).length, 64);
  });
});

/** proxy-addr's rule written plainly: [peer, …X-Forwarded-For from the right], cut after the first untrusted one. */
function reference(peer: string, chain: string[], trusted: (address: string, hop: number) => boolean): string {
  const addrs = [peer, ...[...chain].reverse()];
  for (let i = 0; i < addrs.length - 1; i++) if (!trusted(addrs[i] as string, i)) return addrs[i] as string;
  return addrs[addrs.length - 1] as string;
}

describe('the client of a request behind proxies (PIER_TRUST_PROXY)', () => {
  const address = fc.oneof(fc.ipV4(), fc.constantFrom('10.0.0.1', '10.1.2.3', '192.168.1.1', '127.0.0.1'));

  test('property: off, the peer; a hop count, that many hops back; a list, back while the hop is in it', () => {
    fc.assert(
      fc.property(address, fc.array(address, { maxLength: 6 }), fc.integer({ min: 0, max: 8 }), (peer, chain, hops) => {
        const xff = chain.join(', ');
        assert.equal(clientAddressResolver(false)(peer, xff), peer);
        assert.equal(clientAddressResolver(hops)(peer, chain.length ? xff : undefined), reference(peer, chain, (_a, i) => i < hops));
        const list = ['10.0.0.0/8', '127.0.0.1'];
        const inList = (a: string) => a.startsWith('10.') || a === '127.0.0.1';
        assert.equal(clientAddressResolver(list)(peer, chain.length ? xff : undefined), reference(peer, chain, (a) => inList(a)));
      }),
    );
  });

  test('property: what a client writes in front of the chain never changes who it is counted as', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.array(fc.oneof(address, fc.string({ maxLength: 20 })), { maxLength: 5 }), (client, forged) => {
        // The client sends its own X-Forwarded-For; the trusted proxy (127.0.0.1) appends the client's address.
        const sent = forged.filter((f) => !f.includes(',')).join(', ');
        const header = sent ? `${sent}, ${client}` : client;
        assert.equal(clientAddressResolver(1)('127.0.0.1', header), client);
        if (!client.startsWith('10.') && client !== '127.0.0.1') assert.equal(clientAddressResolver(['127.0.0.1', '10.0.0.0/8'])('127.0.0.1', header), client);
      }),
    );
  });

  test('examples: repeated fields, empty entries, no peer', () => {
    const one = clientAddressResolver(1);
    assert.equal(one('127.0.0.1', ['198.51.100.1', '203.0.113.9']), '203.0.113.9');
    assert.equal(one('127.0.0.1', '203.0.113.9, '), '127.0.0.1');
    assert.equal(one('127.0.0.1', null), '127.0.0.1');
    assert.equal(one(undefined, '203.0.113.9'), undefined);
    assert.equal(clientAddressResolver(['10.0.0.0/8'])('203.0.113.1', '198.51.100.1'), '203.0.113.1');
  });
});
