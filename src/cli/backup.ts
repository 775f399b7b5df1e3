import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../infra/config.js';
import { BackupDamagedError, BackupError } from '../infra/backup/errors.js';
import { formatBytes, say } from '../infra/backup/progress.js';
import type { RestoredLabelReleases } from '../publishing/releases/restored.js';

// The work is loaded when a command runs, so every other `pier` command starts without it.
const work = async () => ({
  ...(await import('../infra/backup/restore.js')),
  ...(await import('../infra/backup/take.js')),
  ...(await import('../infra/backup/verify.js')),
  ...(await import('./backup-deployment.js')),
});

/**
 * Exit codes: 0 done; 1 failed (a tool is missing, a database refused…); 2 the backup is
 * damaged (the problems are listed); 3 restore refused its target (not empty, other dialect).
 */
async function withExitCodes(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (e) {
    if (!(e instanceof BackupError)) throw e;
    console.error(`pier: ${e.message}`);
    process.exitCode = e.exitCode;
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One label whose releases the restore changed (publishing/releases/restored.ts), and what to do next. */
function releaseChangeLine(r: RestoredLabelReleases): string {
  const parts = [
    ...(r.dropped.length ? [`dropped the records of release${r.dropped.length > 1 ? 's' : ''} ${r.dropped.join(', ')} (copied incomplete or not at all)`] : []),
    ...(r.unrecorded.length ? [`removed release${r.unrecorded.length > 1 ? 's' : ''} ${r.unrecorded.join(', ')} (made after the database snapshot)`] : []),
  ];
  const serves =
    r.current === r.restoredCurrent
      ? ''
      : r.current === null
        ? `; it serves no release now (release it again: pier staff crawl ${r.productId} --label ${r.label})`
        : `; it serves release ${r.current} now (was ${r.restoredCurrent}: crawl it so its nodes follow, pier staff crawl ${r.productId} --label ${r.label})`;
  return `label ${r.label} of product "${r.productId}": ${parts.join(', ') || 'its current release was not restored whole'}${serves}`;
}

export function registerBackupCommands(program: Command): void {
  program
    .command('backup <dir>')
    .description('write a consistent backup of this deployment (same settings as pier serve) to a new or empty folder; it may run while the servers do')
    .option('--verify', 'check the backup in <dir> instead: every file and dump against its size and sha256, SQLite dumps with integrity_check')
    .addHelpText(
      'after',
      '\nExit codes: 0 done, 1 failed, 2 the backup is damaged (--verify lists every problem).\n' +
        'PostgreSQL databases are dumped with pg_dump (custom format); it must be installed.',
    )
    .action((dir: string, opts: { verify?: boolean }) =>
      withExitCodes(async () => {
        const target = path.resolve(dir);
        const { verifyBackup, takeBackup, deploymentPlan } = await work();
        if (opts.verify) {
          const r = await verifyBackup(target);
          for (const w of r.warnings) say(`warning: ${w}`);
          if (r.problems.length) throw new BackupDamagedError(r.problems);
          console.log(
            `Backup ${target} is sound: ${plural(r.manifest.databases.length, 'database')}, ${plural(r.files, 'file')} (${formatBytes(r.bytes)}), ` +
              `taken ${r.manifest.snapshotAt} by Pier ${r.manifest.pierVersion}.`,
          );
          return;
        }
        const started = Date.now();
        const m = await takeBackup(deploymentPlan(loadConfig()), target);
        const bytes = m.files.reduce((n, f) => n + f.size, 0);
        console.log(
          `Backup written to ${target}: ${plural(m.databases.length, 'database')}, ${plural(m.files.length, 'file')} (${formatBytes(bytes)}) ` +
            `in ${((Date.now() - started) / 1000).toFixed(1)} s. Check it with: pier backup --verify ${target}`,
        );
      }),
    );

  program
    .command('restore <dir>')
    .description('restore a backup into an empty data dir / empty database (the settings of pier serve say where), then make records and files agree')
    .addHelpText('after', '\nExit codes: 0 done, 1 failed, 2 the backup is damaged, 3 the target is not empty or does not fit the backup.')
    .action((dir: string) =>
      withExitCodes(async () => {
        const config = loadConfig();
        const source = path.resolve(dir);
        const { restoreBackup, restoreTargets, reconcileRestored } = await work();
        const manifest = await restoreBackup(source, restoreTargets(config));
        say('making the restored records agree with the restored files');
        const { publishing, releases, runner } = await reconcileRestored(config, manifest);
        const changes = [
          ...publishing.removedProducts.map((p) => `removed the files of product "${p}", which the database does not have`),
          ...publishing.reconciled.map((r) => `product "${r.productId}": ${r.added} file records added, ${r.updated} updated, ${r.removed} removed`),
          ...releases.map((r) => releaseChangeLine(r)),
          ...(runner.workflowsDeleted.length ? [`deleted ${plural(runner.workflowsDeleted.length, 'workflow')} whose archives were deleted during the backup`] : []),
          ...(runner.archivesRemoved ? [`removed ${plural(runner.archivesRemoved, 'workflow archive')} uploaded during the backup`] : []),
          ...(runner.outputRecordsDropped ? [`dropped ${plural(runner.outputRecordsDropped, 'run output record')} whose file was deleted during the backup`] : []),
          ...(runner.outputRecordsCorrected ? [`updated ${plural(runner.outputRecordsCorrected, 'run output record')} to the file uploaded again during the backup`] : []),
          ...(runner.outputFilesRemoved ? [`removed ${plural(runner.outputFilesRemoved, 'run output file')} no record names`] : []),
        ];
        for (const c of changes) say(c);
        console.log(
          `Restored ${source} (taken ${manifest.snapshotAt} by Pier ${manifest.pierVersion}): ${plural(manifest.databases.length, 'database')}, ` +
            `${plural(manifest.files.length, 'file')}. Start it with: pier serve`,
        );
      }),
    );
}
