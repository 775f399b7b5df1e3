// The attacker of `bench runner-hostile`, in a process of its own: its CPU (building requests,
// reading answers) would be another machine's in life, so it must not slow the measuring
// client. Started with a JSON plan; attacks from `go` on stdin until stdin closes.
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeZipOf, multipart } from '../test/runner/helpers.js';

export interface RunnerAttackPlan {
  base: string;
  token: string;
  projectId: string;
  workflowId: string;
  bigRun: string;
  attacks: string[];
}

/** Answers the attacker got, by attack and status: how much of it the runner served. */
const answers = new Map<string, number>();
const count = (kind: string, status: number) => answers.set(`${kind} ${status}`, (answers.get(`${kind} ${status}`) ?? 0) + 1);

/** The attacks, each a loop until `stop`; resolves when all have ended. */
function attack(plan: RunnerAttackPlan, stop: () => boolean): Promise<unknown> {
  const { base, attacks } = plan;
  const auth = { authorization: `Bearer ${plan.token}` };
  const loop = async (f: () => Promise<unknown>) => {
    while (!stop()) await f().catch(() => sleep(50));
  };
  const get = async (p: string, kind: string) => {
    const res = await fetch(`${base}${p}`, { headers: auth });
    await res.arrayBuffer();
    count(kind, res.status);
  };
  const jobs: Promise<unknown>[] = [];
  if (attacks.includes('runs')) {
    const pages = ['/api/runs?limit=100', '/api/runs?limit=100&status=failed', `/api/runs?limit=100&project=${plan.projectId}&status=failed`, `/api/runs?limit=100&workflow=${plan.workflowId}`];
    for (let c = 0; c < 4; c++) jobs.push(loop(() => get(pages[c]!, 'runs')));
  }
  if (attacks.includes('schedules')) for (let c = 0; c < 2; c++) jobs.push(loop(() => get('/api/schedules?limit=200', 'schedules')));
  if (attacks.includes('streams')) {
    jobs.push(
      (async () => {
        const { hostname, port } = new URL(base);
        const sockets: net.Socket[] = [];
        for (let i = 0; i < 64 && !stop(); i++) {
          const s = net.connect(Number(port), hostname);
          s.write(`GET /api/runs/${plan.bigRun}/logs/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${plan.token}\r\n\r\n`);
          s.once('data', (d: Buffer) => {
            count('streams', Number(/^HTTP\/1\.1 (\d+)/.exec(d.toString('latin1'))?.[1] ?? 0));
            s.pause();
          });
          s.on('error', () => undefined);
          sockets.push(s);
          await sleep(20);
        }
        while (!stop()) await sleep(100);
        for (const s of sockets) s.destroy();
      })(),
    );
  }
  if (attacks.includes('archives')) {
    // 64 settings.xml of 256 KiB each, made of the text a backtracking pattern chokes on.
    const crafted = 'key="factory"value="'.repeat(Math.floor((256 * 1024) / 20));
    const files: [string, string][] = [['workflow/workflow.knime', '<workflow/>']];
    for (let i = 0; i < 64; i++) files.push([`workflow/n${i}/settings.xml`, `<config>${crafted}</config>`]);
    const zip = makeZipOf(files);
    jobs.push(
      loop(async () => {
        const m = multipart([{ name: 'file', file: zip }]);
        const res = await fetch(`${base}/api/projects/${plan.projectId}/workflows`, { method: 'POST', headers: { ...auth, ...m.headers }, body: new Uint8Array(m.payload) });
        await res.arrayBuffer();
        count('archives', res.status);
      }),
    );
  }
  return Promise.all(jobs);
}

const plan = JSON.parse(process.argv[2] ?? '{}') as RunnerAttackPlan;
let stopped = false;
process.stdin.once('end', () => {
  stopped = true;
});
process.stdin.resume();
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
const began = performance.now();
await attack(plan, () => stopped);
const seconds = (performance.now() - began) / 1000;
const summary = [...answers].sort().map(([k, n]) => `${k}: ${n} (${(n / seconds).toFixed(0)}/s)`);
process.stderr.write(`  attacker's answers in ${seconds.toFixed(1)} s: ${summary.join(', ')}\n`);
process.exit(0);
