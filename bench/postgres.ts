import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { freePort, tempDir } from './lib.js';

/**
 * A PostgreSQL URL for benchmarks: BENCH_DATABASE_URL / TEST_DATABASE_URL if set, else a
 * throwaway cluster started here (Debian's postgresql package), or null when there is none.
 */
export async function benchPostgres(): Promise<{ url: string; stop(): void } | null> {
  const given = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (given) return { url: given, stop() {} };
  const versions = fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql').sort() : [];
  const bin = versions.length ? `/usr/lib/postgresql/${versions.at(-1)}/bin` : null;
  if (!bin) return null;
  const dir = tempDir('pier-bench-pg-');
  const port = await freePort();
  const asPostgres = (cmd: string) => {
    const r = process.getuid?.() === 0 ? spawnSync('su', ['postgres', '-s', '/bin/sh', '-c', cmd], { stdio: 'ignore' }) : spawnSync('sh', ['-c', cmd], { stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`postgres: ${cmd} failed`);
  };
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  asPostgres(`${bin}/initdb -D ${dir} -A trust -U postgres >/dev/null`);
  asPostgres(`${bin}/pg_ctl -D ${dir} -o '-p ${port} -k ${dir} -h 127.0.0.1' -l ${dir}/log -w start >/dev/null`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      try {
        asPostgres(`${bin}/pg_ctl -D ${dir} -m immediate stop >/dev/null`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
