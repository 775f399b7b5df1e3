import type { AddressInfo, Server } from 'node:net';

/** Listens on `port` (0 = any free one) and answers the address actually bound, or the listen error. */
export function listenOn(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}
