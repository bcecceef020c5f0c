import fs from 'node:fs'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { Config } from '../config/load'
import { createExecgate } from '../index'
import { checkPlanSteps, verifyReceipt, type ReceiptVerification } from '../fabric/ledger/receipts/verify-receipt'
import type { PlanPredicate, RunPredicate, Statement } from '../fabric/ledger/receipts/statement'
import { EXPORT_FORMATS, type LedgerService, type ExportFormat, type Lineage, type LineageGraph, type VerifyReport } from '../fabric/ledger'

/**
 * `execgate ledger …`: the artifact ledger from the command line (docs/ledger.md). It opens the ledger through the
 * composition root (`createExecgate`, role `client`: the same files or Redis and bucket as `serve`), and starts no
 * adapter, runs nothing. Commands act for one
 * tenant, `--tenant` (default `local`, the library's and the CLI's own); `verify --all` checks every tenant's chain.
 */

export interface LedgerCommandHelpers {
  out: NodeJS.WritableStream
  setExit(code: number): void
}

interface CommonFlags {
  config?: string
  tenant: string
  json?: boolean
}

const whole =
  (flag: string, minimum: number) =>
  (value: string): number => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < minimum)
      throw new InvalidArgumentError(`${flag} must be a whole number of at least ${minimum}, got "${value}"`)
    return parsed
  }

async function withLedger<T>(flags: { config?: string }, body: (ledger: LedgerService, config: Config) => Promise<T>): Promise<T> {
  // The ledger the application builds (what `serve` records into), from an execgate that warms and runs nothing.
  const execgate = await createExecgate({
    file: flags.config,
    warm: false,
    role: 'client',
    overrides: { readiness: { enabled: false } },
  })
  try {
    return await body(execgate.ledger, execgate.config)
  } finally {
    await execgate.dispose()
  }
}

const short = (sha: string) => sha.slice(0, 12)

function describeGraph(graph: LineageGraph): string[] {
  if (graph.activities.length === 0) return ['  (none)']
  const entities = new Map(graph.entities.map((entity) => [entity.sha256, entity]))
  return graph.activities.flatMap((activity) => {
    const where = [
      activity.taskId ? `task ${activity.taskId} attempt ${activity.attempt}` : '',
      activity.planId ? `plan ${activity.planId} v${activity.planVersion}${activity.stepId ? ` step ${activity.stepId}` : ''}` : '',
    ]
      .filter(Boolean)
      .join(', ')
    const head =
      activity.kind === 'run'
        ? `  run ${activity.id}  ${activity.adapter} ${activity.language ?? ''} ${activity.status}  ` +
          `${activity.startedAt}${where ? `  (${where})` : ''}`
        : `  plan version ${activity.id}  ${activity.startedAt}`
    const relations = graph.relations
      .filter((relation) => relation.activity === activity.id)
      .map((relation) => {
        const entity = entities.get(relation.entity)
        const name = entity ? `${entity.paths.join(', ')} (${entity.size} bytes, ${entity.mediaType})` : ''
        return `    ${relation.relation === 'used' ? 'used' : 'generated'} ${relation.role} ${short(relation.entity)} ${name}`
      })
    return [head, ...relations]
  })
}

export function formatLineage(lineage: Lineage): string {
  const { artifact } = lineage
  return (
    [
      `artifact ${artifact.sha256}  ${artifact.paths.join(', ')}  (${artifact.size} bytes, ${artifact.mediaType})`,
      'ancestors (what produced it, and what that used):',
      ...describeGraph(lineage.ancestors),
      'descendants (what used it, and what that produced):',
      ...describeGraph(lineage.descendants),
      ...(lineage.truncated ? ['(truncated: raise --max-depth or --max-activities to see more)'] : []),
    ].join('\n') + '\n'
  )
}

function formatVerify(report: VerifyReport): string {
  if (report.ok)
    return (
      `${report.tenant}: ok, ${report.records} record(s)` +
      `${report.head ? `, head ${report.head.seq} ${report.head.hash}` : ''}` +
      `${report.checkpoint ? `, from checkpoint ${report.checkpoint.seq}` : ''}\n`
    )
  return (
    `${report.tenant}: BROKEN at record ` +
    `${report.broken!.seq}${report.broken!.id ? ` (${report.broken!.id})` : ''}: ` +
    `${report.broken!.reason}\n`
  )
}

function readText(file: string, what: string): string {
  try {
    return fs.readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (error) {
    throw new InvalidArgumentError(`cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
}

/** Reads and verifies one receipt file; a file that is not JSON fails like any other unverifiable receipt. */
function verifyFile(file: string, key: string): ReceiptVerification {
  let envelope: unknown
  try {
    envelope = JSON.parse(readText(file, 'receipt'))
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error
    return { ok: false, reason: `${file} is not JSON` }
  }
  return verifyReceipt(envelope, key)
}

function describeVerified(verified: Extract<ReceiptVerification, { ok: true }>): string {
  const { statement } = verified
  const head =
    verified.kind === 'run'
      ? (({ runId, status, adapter, tenant, startedAt }: RunPredicate) =>
          `run ${runId} (${status} on ${adapter}, tenant ${tenant}, ${startedAt})`)(statement.predicate as RunPredicate)
      : (({ planId, tenant, steps }: PlanPredicate) => `plan ${planId} (tenant ${tenant}, ${steps.length} step run(s))`)(
          statement.predicate as PlanPredicate,
        )
  return (
    [
      `ok: ${head}, signed by key ${verified.keyid}`,
      `payload sha256 ${verified.payloadSha256}`,
      'subjects:',
      ...statement.subject.map((item) => `  ${item.digest.sha256}  ${item.name}`),
    ].join('\n') + '\n'
  )
}

export function registerLedgerCommands(program: Command, helpers: LedgerCommandHelpers): void {
  const { out, setExit } = helpers
  const ledger = program
    .command('ledger')
    .description("the artifact ledger: runs' provenance, artifacts and their lineage (docs/ledger.md)")
  const common = (command: Command) =>
    command
      .option('--tenant <name>', 'whose records (default: local, the library and CLI tenant)', 'local')
      .option('--json', 'print JSON')
      .addOption(new Option('--config <file>', 'extra JSON config file applied after config/default.json'))

  common(ledger.command('lineage').description("an artifact's ancestors and descendants").argument('<sha256>', "the artifact's SHA-256"))
    .option('--max-depth <n>', 'steps to follow each way (default 32)', whole('--max-depth', 1))
    .option('--max-activities <n>', 'runs to list each way (default 1000)', whole('--max-activities', 1))
    .action(async (sha: string, flags: CommonFlags & { maxDepth?: number; maxActivities?: number }) => {
      await withLedger(flags, async (opened) => {
        const lineage = await opened.lineage(
          sha,
          { tenant: flags.tenant },
          {
            ...(flags.maxDepth ? { maxDepth: flags.maxDepth } : {}),
            ...(flags.maxActivities ? { maxActivities: flags.maxActivities } : {}),
          },
        )
        out.write(flags.json ? `${JSON.stringify(lineage, null, 2)}\n` : formatLineage(lineage))
      })
    })

  common(
    ledger
      .command('provenance')
      .description("a run's provenance as PROV-JSON (--record: the stored record)")
      .argument('<run-id>', 'the run id (result.runId)'),
  )
    .option('--record', 'print the stored record, its seq and hashes, instead of PROV-JSON')
    .action(async (runId: string, flags: CommonFlags & { record?: boolean }) => {
      await withLedger(flags, async (opened) => {
        const answer = flags.record
          ? await opened.record(runId, { tenant: flags.tenant })
          : await opened.provenance(runId, { tenant: flags.tenant })
        out.write(`${JSON.stringify(answer, null, 2)}\n`)
      })
    })

  common(ledger.command('artifact').description("an artifact's bytes").argument('<sha256>', "the artifact's SHA-256"))
    .option('--out <file>', 'write the bytes to this file instead of standard output')
    .action(async (sha: string, flags: CommonFlags & { out?: string }) => {
      await withLedger(flags, async (opened) => {
        const artifact = await opened.artifact(sha, { tenant: flags.tenant })
        if (flags.out) fs.writeFileSync(flags.out, artifact.content)
        else out.write(artifact.content)
      })
    })

  common(ledger.command('export').description('every record of the tenant, as PROV-JSON or OpenLineage RunEvents (one JSON per line)'))
    .addOption(new Option('--format <format>', 'prov-json or openlineage').choices([...EXPORT_FORMATS]).default('prov-json'))
    .option('--after-seq <n>', 'only records after this seq (resume an export)', whole('--after-seq', 0))
    .option('--limit <n>', 'at most this many records (default 10000)', whole('--limit', 1))
    .action(async (flags: CommonFlags & { format: ExportFormat; afterSeq?: number; limit?: number }) => {
      await withLedger(flags, async (opened) => {
        const options = {
          ...(flags.afterSeq !== undefined ? { afterSeq: flags.afterSeq } : {}),
          ...(flags.limit ? { limit: flags.limit } : {}),
        }
        const exported = await opened.export(flags.format, { tenant: flags.tenant }, options)
        // OpenLineage's file transport reads one event per line.
        if (Array.isArray(exported)) for (const event of exported) out.write(`${JSON.stringify(event)}\n`)
        else out.write(`${JSON.stringify(exported, null, 2)}\n`)
      })
    })

  common(ledger.command('verify').description('check the hash chain; exit 1 naming the first broken link'))
    .option('--all', 'every tenant with records')
    .action(async (flags: CommonFlags & { all?: boolean }) => {
      await withLedger(flags, async (opened) => {
        const tenants = flags.all ? await opened.tenants() : [flags.tenant]
        const reports = await Promise.all(tenants.map((tenant) => opened.verify({ tenant })))
        out.write(flags.json ? `${JSON.stringify(flags.all ? reports : reports[0], null, 2)}\n` : reports.map(formatVerify).join(''))
        setExit(reports.every((report) => report.ok) ? 0 : 1)
      })
    })

  common(
    ledger
      .command('receipt')
      .description("a run's signed receipt (--plan: a plan's): a DSSE envelope over an in-toto Statement")
      .argument('<id>', 'the run id (result.runId), or the plan id with --plan'),
  )
    .option('--plan', "the id is a plan: its receipt covers its steps' run receipts")
    .option('--out <file>', 'write the receipt to this file instead of standard output')
    .action(async (id: string, flags: CommonFlags & { plan?: boolean; out?: string }) => {
      await withLedger(flags, async (opened) => {
        const envelope = flags.plan
          ? await opened.planReceipt(id, { tenant: flags.tenant })
          : await opened.receipt(id, { tenant: flags.tenant })
        const text = `${JSON.stringify(envelope, null, 2)}\n`
        if (flags.out) fs.writeFileSync(flags.out, text)
        else out.write(text)
      })
    })

  common(ledger.command('public-key').description('the Ed25519 public key receipts are signed with (PEM; --json: with its keyid)')).action(
    async (flags: CommonFlags) => {
      await withLedger(flags, async (opened) => {
        const key = await opened.publicKey()
        out.write(flags.json ? `${JSON.stringify(key, null, 2)}\n` : key.publicKeyPem)
      })
    },
  )

  ledger
    .command('verify-receipt')
    .description('verify a signed receipt offline with a public key; exit 1 with the reason when it does not verify')
    .argument('<file>', 'the receipt (a DSSE envelope as JSON); - reads standard input')
    .requiredOption('--key <pem-file>', 'the Ed25519 public key (PEM) it must be signed with (execgate ledger public-key)')
    .option('--step <file...>', "with a plan's receipt: run receipts that must be among its steps (each is verified too)")
    .option('--json', 'print JSON')
    .action((file: string, flags: { key: string; step?: string[]; json?: boolean }) => {
      const key = readText(flags.key, 'public key')
      let verified = verifyFile(file, key)
      if (verified.ok && flags.step?.length) {
        if (verified.kind !== 'plan') verified = { ok: false, reason: `--step needs a plan's receipt; ${file} is a run's` }
        else {
          const steps: { file: string; payloadSha256: string; statement: Extract<ReceiptVerification, { ok: true }>['statement'] }[] = []
          let failed: string | undefined
          for (const stepFile of flags.step) {
            const step = verifyFile(stepFile, key)
            if (!step.ok) {
              failed = `${stepFile}: ${step.reason}`
              break
            }
            steps.push({ file: stepFile, payloadSha256: step.payloadSha256, statement: step.statement })
          }
          failed ??= checkPlanSteps(verified.statement as Statement<PlanPredicate>, steps)
          if (failed) verified = { ok: false, reason: failed }
        }
      }
      if (flags.json) out.write(`${JSON.stringify(verified, null, 2)}\n`)
      else out.write(verified.ok ? describeVerified(verified) : `FAILED: ${file}: ${verified.reason}\n`)
      setExit(verified.ok ? 0 : 1)
    })

  ledger
    .command('prune')
    .description('apply the retention policy now (fabric.ledger.retention.*, or these flags)')
    .option('--max-age-days <n>', 'remove records older than this', whole('--max-age-days', 0))
    .option(
      '--max-bytes-per-tenant <n>',
      "remove a tenant's oldest records while its artifacts total more",
      whole('--max-bytes-per-tenant', 0),
    )
    .option('--json', 'print JSON')
    .addOption(new Option('--config <file>', 'extra JSON config file applied after config/default.json'))
    .action(async (flags: { config?: string; json?: boolean; maxAgeDays?: number; maxBytesPerTenant?: number }) => {
      await withLedger(flags, async (opened, config) => {
        const configured = config.fabric.ledger.retention
        const policy = {
          maxAgeDays: flags.maxAgeDays ?? configured.maxAgeDays,
          maxBytesPerTenant: flags.maxBytesPerTenant ?? configured.maxBytesPerTenant,
        }
        const report = await opened.applyRetention({ policy })
        if (flags.json) out.write(`${JSON.stringify(report, null, 2)}\n`)
        else {
          for (const tenant of report.tenants)
            out.write(`${tenant.tenant}: removed ${tenant.removedRecords} record(s); ${tenant.bytes} bytes referenced\n`)
          out.write(`removed ${report.removedBlobs.length} blob(s)\n`)
        }
      })
    })
}
