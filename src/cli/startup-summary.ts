import type { Config } from '../infra/config.js';

export interface StartedParts {
  /** The parts this process started (`pier serve --only …`). */
  parts: readonly string[];
  /** Products in the registry, when the web part started (it has the database open). */
  products?: number;
  /** When the runner started here: its one-time setup link while no user exists, else null. */
  runnerSetupLink?: string | null;
}

/**
 * What `pier serve` prints once every part listens: the public address of each part (what to
 * open or give to vendors) and what a fresh installation still lacks, as plain lines.
 */
export function startupSummary(config: Config, started: StartedParts): string {
  const has = (part: string) => started.parts.includes(part);
  const p = config.publishing;
  const row = (name: string, text: string) => `  ${name.padEnd(17)} ${text}`;
  const lines = ['', 'Pier is running:'];
  if (has('web')) {
    lines.push(row('publishing site', `${p.baseUrl}/ (catalog; product pages at ${p.baseUrl}/product/<product-id>)`));
    lines.push(row('publishing API', `${p.baseUrl}/api/docs (vendors: page fields, releases, trusted publishing)`));
  }
  if (has('downloads')) lines.push(row('download host', `${p.downloadUrl}/ (update sites: ${p.downloadUrl}/<product-id>/<label>/)`));
  if (has('sftp')) lines.push(row('SFTP', `sftp -P ${p.sftpPort} <product-id>@${p.sftpHost}`));
  if (has('runner')) lines.push(row('runner', `${config.runner.url}/ (API docs: ${config.runner.url}/api/docs)`));
  lines.push(`  (listening on ${config.host}; set PIER_HOST=0.0.0.0 to serve a network)`, '', 'Next steps:');
  const steps: string[] = [];
  if (has('web') && started.products === 0) {
    steps.push(
      'Register a first product (prints its edit token and SFTP password once):',
      '    npx pier staff register <product-id> --name "<Product name>"',
    );
  }
  if (has('runner')) {
    if (started.runnerSetupLink) {
      steps.push(
        'The runner has no user yet. Create its first administrator in a browser (one-time link, valid until an administrator exists, also after a restart):',
        `    ${started.runnerSetupLink}`,
        'or from this shell (asks for a password):',
        '    npx pier runner user add --email you@example.com --admin',
      );
    } else if (started.runnerSetupLink === undefined) {
      steps.push('Create a runner user to sign in with, if there is none yet (asks for a password):', '    npx pier runner user add --email you@example.com --admin');
    } else steps.push(`Sign in to the runner's web UI at ${config.runner.url}/`);
    if (config.runner.apiKey === null) {
      steps.push(
        'The runner has no admin key configured (API_KEY is unset), so no executor can register and runs stay queued. Set it',
        '(at least 32 characters) and start again, then give it to `npx pier runner executor`:',
        '    API_KEY=$(openssl rand -hex 32) npm start',
      );
    } else steps.push(`The runner admin key is set (API_KEY): start executors with \`npx pier runner executor --url ${config.runner.url} …\`.`);
  }
  steps.push('Every command: npx pier --help. Guides for vendors, staff, runner users and operators (every setting): docs/.');
  for (const s of steps) lines.push(s.startsWith('    ') ? s : `  ${s}`);
  return `${lines.join('\n')}\n`;
}
