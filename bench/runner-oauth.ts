// OAuth costs of the runner, against references in the same run:
//  - the token endpoint's refresh grant (rotation: one write transaction per request), in
//    requests/s against the metadata document through the same client loop (the pipeline floor);
//  - the added cost of GET /api/me authenticated by an OAuth access token (Bearer) over the same
//    request authenticated by a personal access token, as paired autocannon rounds.
// The machine is shared and noisy: read the ratios, not the absolute numbers.
import { createHash, randomBytes } from 'node:crypto';
import { freePort, load, pinToCpu, startPier, tempDir, SETUP_TOKEN } from './lib.js';

const PASSWORD = 'bench password 123';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const WORKERS = 8;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Cookie-keeping form client for the login and consent pages. */
class Session {
  private cookies = new Map<string, string>();
  constructor(private readonly base: string) {}
  async go(path: string, form?: Record<string, string>, json?: unknown): Promise<Response> {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (json) headers['content-type'] = 'application/json';
    const body = form ? new URLSearchParams(form) : json ? JSON.stringify(json) : undefined;
    const res = await fetch(this.base + path, { method: body ? 'POST' : 'GET', headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res;
  }
}

const hidden = (html: string) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, '&')]));

async function tokenRequest(base: string, form: Record<string, string>) {
  const res = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  if (res.status !== 200) throw new Error(`token endpoint: ${res.status} ${await res.text()}`);
  return (await res.json()) as { access_token: string; refresh_token: string };
}

/** One consent over the real pages → tokens. */
async function authorize(base: string, clientId: string, redirectUri: string) {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const s = new Session(base);
  const q = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', scope: 'read' });
  // The web UI's sign-in: the API login that also sets the session cookie the consent page reads.
  const login = await s.go('/api/auth/login', undefined, { email: 'bench@example.com', password: PASSWORD, browserSession: true });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`);
  const consentPage = await s.go(`/oauth/authorize?${q}`);
  const decided = await s.go('/oauth/authorize', { ...hidden(await consentPage.text()), decision: 'approve' });
  const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
  return tokenRequest(base, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, client_id: clientId });
}

/** Requests/s of `step` run back to back by WORKERS concurrent loops for `seconds`. */
async function loop(seconds: number, step: (worker: number) => Promise<void>): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      while (Date.now() < end) {
        await step(w);
        done++;
      }
    }),
  );
  return done / seconds;
}

export async function benchRunnerOAuth(): Promise<string> {
  const dataDir = tempDir('pier-bench-oauth-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = await startPier({ PIER_DATA_DIR: dataDir, RUNNER_PORT: String(port), RUNNER_URL: base, PIER_LOG_LEVEL: 'silent', RUNNER_SETUP_TOKEN: SETUP_TOKEN }, 'runner', `${base}/healthz`);
  pinToCpu(child.pid!, 1);
  pinToCpu(process.pid, 0);
  try {
    const setup = await fetch(`${base}/api/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ setupToken: SETUP_TOKEN, email: 'bench@example.com', password: PASSWORD }) });
    const jwt = ((await setup.json()) as { session: { token: string } }).session.token;
    const patRes = await fetch(`${base}/api/tokens`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${jwt}` }, body: JSON.stringify({ name: 'bench', scope: 'read' }) });
    const pat = ((await patRes.json()) as { token: string }).token;
    const redirectUri = 'http://127.0.0.1:9/cb';
    const reg = await fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'bench' }) });
    const clientId = ((await reg.json()) as { client_id: string }).client_id;
    const chains = await Promise.all(Array.from({ length: WORKERS }, () => authorize(base, clientId, redirectUri)));
    const refreshTokens = chains.map((c) => c.refresh_token);
    const oauthToken = chains[0]!.access_token;

    const refreshStep = async (w: number) => {
      const t = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: refreshTokens[w]!, client_id: clientId });
      refreshTokens[w] = t.refresh_token;
    };
    const floorStep = async () => {
      const res = await fetch(`${base}/.well-known/oauth-authorization-server`);
      await res.arrayBuffer();
    };
    const measurePair = async (url: string, a: string, b: string) => {
      const x = await load({ url, seconds: SECONDS, headers: { authorization: a } });
      const y = await load({ url, seconds: SECONDS, headers: { authorization: b } });
      if (x.errors || y.errors) throw new Error(`errors during load: ${x.errors} ${y.errors}`);
      return { a: x, b: y };
    };

    // Warm-up.
    await loop(1, refreshStep);
    await loop(1, floorStep);
    await measurePair(`${base}/api/me`, `ApiKey ${pat}`, `Bearer ${oauthToken}`);

    const refreshRatios: number[] = [];
    const refreshRps: number[] = [];
    const floorRps: number[] = [];
    const meRatios: number[] = [];
    const patRps: number[] = [];
    const oauthRps: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order within each pair: the second run of a pair tends to be slower here.
      const [r1, f1] = round % 2 ? [await loop(SECONDS, refreshStep), await loop(SECONDS, floorStep)] : [0, 0];
      const [f2, r2] = round % 2 ? [0, 0] : [await loop(SECONDS, floorStep), await loop(SECONDS, refreshStep)];
      const refresh = r1 || r2;
      const floor = f1 || f2;
      refreshRps.push(refresh);
      floorRps.push(floor);
      refreshRatios.push(refresh / floor);
      const pair = round % 2
        ? await measurePair(`${base}/api/me`, `Bearer ${oauthToken}`, `ApiKey ${pat}`).then((p) => ({ pat: p.b, oauth: p.a }))
        : await measurePair(`${base}/api/me`, `ApiKey ${pat}`, `Bearer ${oauthToken}`).then((p) => ({ pat: p.a, oauth: p.b }));
      patRps.push(pair.pat.rps);
      oauthRps.push(pair.oauth.rps);
      meRatios.push(pair.oauth.rps / pair.pat.rps);
    }
    return [
      `rounds ${ROUNDS} × ${SECONDS} s, ${WORKERS} sequential clients for the refresh chain (each refresh rotates its token)`,
      `token endpoint, refresh grant         ${median(refreshRps).toFixed(0).padStart(7)} req/s  (median ${(median(refreshRatios) * 100).toFixed(0)}% of the metadata floor at ${median(floorRps).toFixed(0)} req/s, same client loop)`,
      `GET /api/me, personal access token    ${median(patRps).toFixed(0).padStart(7)} req/s`,
      `GET /api/me, OAuth access token       ${median(oauthRps).toFixed(0).padStart(7)} req/s  (median paired ratio ${median(meRatios).toFixed(3)}: added cost ${((1 - median(meRatios)) * 100).toFixed(1)}% over PAT)`,
    ].join('\n');
  } finally {
    child.kill();
  }
}
