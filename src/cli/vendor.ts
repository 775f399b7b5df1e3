/**
 * The vendor's `pier`: only `pier publish` and `pier ci`, bundled into one file that the web part
 * serves at `/cli/pier.mjs` (scripts/build-ui.ts builds it), so a vendor's machine or CI job
 * needs Node.js and nothing else: `curl -fsSLO <base url>/cli/pier.mjs && node pier.mjs publish …`.
 */
import { Command } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import { registerCiCommands } from './ci-init/command.js';
import { registerPublishCommand } from './publish/command.js';
import { runProgram } from './run-program.js';

const program = new Command('pier')
  .description('Pier for vendors: publish an extension (pier publish) and generate its CI pipeline (pier ci)')
  .version(pkg.version)
  .showHelpAfterError();
program.exitOverride();
registerPublishCommand(program);
registerCiCommands(program);
await runProgram(program);
