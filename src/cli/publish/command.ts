import { type Command, CommanderError, Option } from 'commander';
import { EXIT, PublishFailure } from './failure.js';
import type { PublishOptions } from './run.js';

/** Flags people try for secrets: refused by name, since a flag shows in `ps` and in CI logs. */
const SECRET_FLAGS = ['--edit-token', '--token', '--password', '--sftp-password'];

export function registerPublishCommand(program: Command): void {
  const cmd = program
    .command('publish')
    .description('Check a built update site, upload what changed over SFTP, release the label and send the page fields')
    .requiredOption('--server <url>', 'base URL of the publishing service (https://…)')
    .requiredOption('--product <id>', 'product ID')
    .requiredOption('--label <label>', 'update-site label (e.g. the platform release 5.4, or nightly)')
    .requiredOption('--site <dir>', 'the built P2 repository (the folder with content.jar / artifacts.jar)')
    .option('--archive <zip>', "the zipped update site, uploaded as update-site/<label>.zip")
    .option('--assets <dir>', 'files for assets/ (uploaded, none removed)')
    .option('--workflows <dir>', 'example workflows for workflows/ (uploaded, none removed)')
    .option('--page <dir>', 'page fields: text.md, changelog.md, faq.md, license.md, instructions.md, page.json')
    .option('--host-key <fingerprint...>', "the SFTP server's host key, SHA256:… (repeatable); default: the keys GET /api/publishing lists")
    .option('--dry-run', 'check everything, change nothing')
    .option('--timeout <seconds>', 'how long to wait for the release (its crawl)', '600')
    .addHelpText(
      'after',
      `
Secrets come only from the environment: PIER_EDIT_TOKEN and PIER_SFTP_PASSWORD, or trusted
publishing in GitHub Actions (permissions: id-token: write) and GitLab CI (id_tokens: PIER_ID_TOKEN).

Exit codes: 0 published, 2 usage or settings, 3 the site check failed, 4 authentication refused,
5 page fields refused, 6 upload failed, 7 release refused (crawl problems), 8 timed out.`,
    );
  for (const flag of SECRET_FLAGS) cmd.addOption(new Option(`${flag} <secret>`).hideHelp());
  // Usage errors exit 2 (the contract's "usage or settings"), not commander's 1.
  cmd.exitOverride((err) => {
    throw err.exitCode === 0 ? err : new CommanderError(EXIT.usage, err.code, err.message);
  });
  cmd.action(async (raw: Record<string, unknown>) => {
    const secret = SECRET_FLAGS.find((f) => raw[f.slice(2).replace(/-(\w)/g, (_m, c: string) => c.toUpperCase())] !== undefined);
    if (secret) {
      console.error(`pier publish: ${secret} is not accepted: secrets are read from the environment only (PIER_EDIT_TOKEN, PIER_SFTP_PASSWORD), since a flag shows in process lists and CI logs`);
      process.exitCode = EXIT.usage;
      return;
    }
    const options: PublishOptions = {
      server: raw.server as string,
      product: raw.product as string,
      label: raw.label as string,
      site: raw.site as string,
      ...(raw.archive !== undefined ? { archive: raw.archive as string } : {}),
      ...(raw.assets !== undefined ? { assets: raw.assets as string } : {}),
      ...(raw.workflows !== undefined ? { workflows: raw.workflows as string } : {}),
      ...(raw.page !== undefined ? { page: raw.page as string } : {}),
      ...(raw.hostKey !== undefined ? { hostKey: raw.hostKey as string[] } : {}),
      dryRun: raw.dryRun === true,
      timeout: Number(raw.timeout),
    };
    // Loaded here, not with the command line: the SSH client is needed by this action only.
    const { publish } = await import('./run.js');
    try {
      process.exitCode = await publish(options, process.env, { line: (t) => console.log(t), isTTY: process.stderr.isTTY === true });
    } catch (e) {
      if (!(e instanceof PublishFailure)) throw e;
      console.error(`pier publish: ${e.message}`);
      for (const d of e.details) console.error(`  ${d}`);
      process.exitCode = e.exitCode;
    }
  });
}
