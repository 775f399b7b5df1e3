import pg from 'pg';

export interface Listener {
  close(): Promise<void>;
}

/**
 * LISTENs on a PostgreSQL channel on one dedicated connection (a pooled one could be handed to
 * a query that resets it) and calls `onMessage` for every NOTIFY. A lost connection is
 * re-opened with a growing delay (up to 10 s); `onMessage` is also called after a reconnect,
 * since notifications sent meanwhile are gone. Sending: `SELECT pg_notify(channel, payload)` on
 * any connection.
 */
export async function listen(url: string, channel: string, onMessage: (payload: string) => void): Promise<Listener> {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
  let client: pg.Client | null = null;
  let closed = false;
  let retryMs = 200;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url });
    c.on('notification', (m) => onMessage(m.payload ?? ''));
    c.on('error', () => {
      // 'end' follows; reconnecting happens there.
    });
    c.on('end', () => {
      if (client === c) client = null;
      if (!closed) schedule();
    });
    await c.connect();
    await c.query(`LISTEN ${channel}`);
    if (closed) {
      await c.end();
      return;
    }
    client = c;
    retryMs = 200;
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      connect().then(
        () => onMessage(''),
        () => {
          retryMs = Math.min(retryMs * 2, 10_000);
          if (!closed) schedule();
        },
      );
    }, retryMs);
    timer.unref();
  };

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
