import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { DatabaseSetupError } from './lib/db/index.js';
import { ApiError, ValidationError } from './lib/http/errors.js';
import { accountsService } from './modules/accounts/accounts.service.js';
import { accountCommand } from './cli/account-commands.js';
import { print, withStore } from './cli/io.js';
import { serve } from './cli/serve.js';
import { OPTIONS, USAGE, UsageError, commandHelp } from './cli/usage.js';
import { worker } from './cli/worker.js';

// The command line (`bin/lanebridge`): its usage and options (src/cli/usage.ts), `serve` (src/cli/serve.ts),
// `worker` (src/cli/worker.ts), `import` (src/cli/import-command.ts) and the account commands
// (src/cli/account-commands.ts).
export { commandHelp };

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [group, action] = positionals;
  // Help asked for is an answer (stdout, exit 0); no command at all is a usage error (stderr, exit 2).
  if (group === 'help' || values.help) {
    const words = group === 'help' ? positionals.slice(1) : positionals;
    const text = commandHelp(words);
    if (text === null) throw new UsageError(`Unknown command '${words.join(' ')}'`);
    process.stdout.write(`${text}\n`);
    return 0;
  }
  if (!group) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  if (group === 'serve') {
    await serve(config);
    return -1; // keeps running
  }
  if (group === 'worker') {
    await worker(config);
    return -1; // keeps running
  }
  if (group === 'import') {
    const file = positionals[1];
    if (!file) throw new UsageError('import needs the FILE to import');
    const { runImportCommand } = await import('./cli/import-command.js');
    return runImportCommand(config, { values, file, print, usage: (m) => new UsageError(m) });
  }
  const command = `${group} ${action ?? ''}`.trim();
  return withStore(config, (store) => accountCommand(accountsService(store), command, values));
}

export async function runCli(argv: string[]) {
  try {
    const code = await main(argv);
    if (code >= 0) process.exitCode = code;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      // The usage of the command that was used (its words come first), not the whole list.
      const words = argv.filter((a) => !a.startsWith('-')).slice(0, 2);
      const usage = err instanceof UsageError && err.opts.usage === false ? null : (commandHelp(words) ?? commandHelp(words.slice(0, 1)) ?? USAGE);
      process.stderr.write(`lanebridge: ${(err as Error).message}\n${usage === null ? '' : `\n${usage}\n`}`);
      process.exitCode = 2;
    } else if (err instanceof ValidationError) {
      process.stderr.write(`lanebridge: ${err.issues.map((i) => i.msg).join('; ')}\n`);
      process.exitCode = 2;
    } else if (err instanceof ApiError || err instanceof ConfigError || err instanceof DatabaseSetupError) {
      process.stderr.write(`lanebridge: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`lanebridge: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    }
  }
}
