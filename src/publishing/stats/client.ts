import { isIP } from 'node:net';

/**
 * Who a download is counted for (README "Download counts": a file counts once per client and
 * day): an IPv4 address as it is (an IPv4-mapped IPv6 address, `::ffff:a.b.c.d`, is that IPv4
 * address), and an IPv6 address by its /64 prefix. One IPv6 subnet is one site or one
 * connection (RFC 4291 §2.5.4: the interface identifier is the low 64 bits; RFC 8981: hosts
 * change that part freely), so counting whole IPv6 addresses would let one client count again
 * as often as it picks a new address. Anything else (not an address) is taken as it is.
 */
export function countedClient(address: string): string {
  const zone = address.indexOf('%');
  const a = zone >= 0 ? address.slice(0, zone) : address;
  const family = isIP(a);
  if (family === 4) return a;
  if (family !== 6) return address.slice(0, 64);
  const groups = ipv6Groups(a);
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff) {
    const g6 = groups[6] as number;
    const g7 = groups[7] as number;
    return `${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}`;
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`isIP` said 6), `::` and a dotted IPv4 tail expanded. */
function ipv6Groups(a: string): number[] {
  const tail = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const p of part.split(':')) {
      if (p.includes('.')) {
        const [b0 = 0, b1 = 0, b2 = 0, b3 = 0] = p.split('.').map(Number);
        out.push((b0 << 8) | b1, (b2 << 8) | b3);
      } else out.push(Number.parseInt(p, 16));
    }
    return out;
  };
  const gap = a.indexOf('::');
  if (gap < 0) return tail(a);
  const head = tail(a.slice(0, gap));
  const rest = tail(a.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest];
}
