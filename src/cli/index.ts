import { Command, CommanderError, Option } from 'commander'
import { FILESYSTEM_ACCESS, LANGUAGES, describeError, isExecgateError } from '../core'
import { EXECGATE_VERSION } from '../config/version'
import { registerTaskCommands } from './tasks'
import { registerLedgerCommands } from './ledger'
import { registerPlanCommands } from './plans'
import { registerSandboxCommands } from './sandboxes'
import { adaptersCommand, policyCommand } from './inspect'
import { readSource, runCommand, validateCommand, type RunFlags } from './run'
import { registerServeCommands } from './serve'
import { EXIT_USAGE, positiveInteger } from './usage'

export { EXTENSION_LANGUAGES, operatorPolicy } from './run'

/**
 * The operator's command line. Its flags set the policy for that run (an operator may loosen the configured
 * defaults; requests through the API may only tighten them). Exit code 0 only for `ok`; 2 for bad usage. One file per
 * group of commands: run.ts (run, validate), inspect.ts (adapters, policy), serve.ts (serve, mcp), tasks.ts,
 * plans.ts, sandboxes.ts, ledger.ts; this one builds the tree and runs it.
 */

/** Builds the command tree; `main` runs it. Exposed for tests. */
export function buildProgram(out: NodeJS.WritableStream, setExit: (code: number) => void): Command {
  const program = new Command('execgate')
    .description('Run code for voice and chat agents, safely and fast.')
    .version(EXECGATE_VERSION, '-V, --version', "print execgate's version")
    .exitOverride()
    .configureOutput({ writeOut: (text) => out.write(text), writeErr: (text) => process.stderr.write(text) })
    .showHelpAfterError('(run execgate --help for usage)')

  const languageOption = () =>
    new Option('--lang <language>', 'language of the code (default: from the file extension)').choices([...LANGUAGES])
  const configOption = () => new Option('--config <file>', 'extra JSON config file applied after config/default.json')

  program
    .command('run')
    .description('run a file (or - for standard input) and print the result')
    .argument('[file]', 'file to run; - or nothing reads standard input')
    .addOption(languageOption())
    .option('--adapter <name>', 'run on this adapter instead of routing')
    .option('--timeout <ms>', 'wall-time limit in milliseconds for this run', positiveInteger('--timeout'))
    .option('--memory <mib>', 'memory limit in MiB for this run', positiveInteger('--memory'))
    .addOption(
      new Option(
        '--fs <access>',
        "the code's workspace access (default: security.defaultPolicy.filesystem; sandboxed with --workspace)",
      ).choices([...FILESYSTEM_ACCESS]),
    )
    .option('--workspace <dir>', 'a directory the code reads as its workspace; writes land in memory, never in it')
    .option('--save-files <dir>', 'save the files the code wrote into this directory')
    .option('--out <dir>', 'write the charts, tables and display() items the run made into this directory (output-1.png, …)')
    .option('--profile <name>', 'run under this policy profile from security.profiles (e.g. data: pandas, numpy, matplotlib…)')
    .option(
      '--file <path>',
      'send this file with the request (repeatable); the code reads it from its workspace by its base name',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--json', 'print the ExecutionResult as JSON and nothing else')
    .addOption(configOption())
    .action(async (file: string | undefined, flags: RunFlags) => setExit(await runCommand(file, flags, out)))

  program
    .command('validate')
    .description('check a file against the policy and the adapter without running it')
    .argument('<file>', 'file to check')
    .addOption(languageOption())
    .option('--adapter <name>', 'validate with this adapter')
    .option('--json', 'print the ValidationReport as JSON')
    .addOption(configOption())
    .action(async (file: string, flags: RunFlags) => setExit(await validateCommand(file, flags, out)))

  program
    .command('adapters')
    .description('check and list adapters: languages, health, circuit breaker, the active adapter and its last switch')
    .option('--json', 'print as JSON')
    .addOption(configOption())
    .action(async (flags: { config?: string; json?: boolean }) => setExit(await adaptersCommand(flags, out)))

  registerServeCommands(program, configOption)

  program
    .command('policy')
    .description('show how an adapter enforces each limit of the policy (hard, soft or none)')
    .requiredOption('--adapter <name>', 'the adapter to explain')
    .option('--profile <name>', 'explain this profile from security.profiles instead of the default policy')
    .option('--json', 'print as JSON')
    .addOption(configOption())
    .action(async (flags: { config?: string; json?: boolean; adapter: string; profile?: string }) =>
      setExit(await policyCommand(flags, out)),
    )

  registerTaskCommands(program, { out, setExit, readSource })
  registerLedgerCommands(program, { out, setExit })
  registerPlanCommands(program, { out, setExit })
  registerSandboxCommands(program, { out, setExit, readSource })
  return program
}

/**
 * Runs the CLI; never prints a stack trace for bad input or configuration. `onExitCode` hears a command's exit code as
 * soon as the command knows it: the executable sets `process.exitCode` there, so a process whose event loop empties
 * while it is still closing (seen once in ~50 `plan run --wait` runs: the plan FAILED and printed, exit 0) still exits
 * with the command's code.
 */
export async function main(
  argv: string[] = process.argv,
  out: NodeJS.WritableStream = process.stdout,
  onExitCode: (code: number) => void = () => undefined,
): Promise<number> {
  let exitCode = 0
  const program = buildProgram(out, (code) => onExitCode((exitCode = code)))
  // A command awaits pools, threads and sockets that are unref'd while idle (so a library user's process can end);
  // if every handle is unref'd at one moment mid-command, Node would end the process there with exit code 0 and
  // nothing printed (seen in CI: `plan suspend`, `run --fs none`). This ref'd timer keeps the CLI alive until the
  // command's promise settles.
  const keepAlive = setInterval(() => undefined, 1 << 30)
  try {
    await program.parseAsync(argv)
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not failures; commander has already printed its message.
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help'
        ? 0
        : EXIT_USAGE
    }
    process.stderr.write(`${isExecgateError(error) ? error.message : `[execgate] ${describeError(error)}`}\n`)
    return isExecgateError(error) && error.fault === 'client' ? EXIT_USAGE : 1
  } finally {
    clearInterval(keepAlive)
  }
  return exitCode
}

if (require.main === module) {
  void main(process.argv, process.stdout, (code) => (process.exitCode = code)).then((code) => {
    process.exitCode = code
  })
}
