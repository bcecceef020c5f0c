import { ADAPTERS } from '../../adapters/registry'
import type { SyscallFilterSummary } from '../core'
import { formatTable } from './format'
import { withExecgate } from './run'

/** `execgate adapters` and `execgate policy`: what the adapters are and how each enforces a policy. */

export async function adaptersCommand(flags: { config?: string; json?: boolean }, out: NodeJS.WritableStream): Promise<number> {
  return withExecgate(flags, async (execgate) => {
    const status = await execgate.checkNow()
    const byName = new Map(status.adapters.map((adapter) => [adapter.name, adapter]))
    const admissionByName = new Map(status.admission.adapters.map((item) => [item.adapter, item]))
    const rows = Object.values(ADAPTERS).map((definition) => {
      const adapter = byName.get(definition.name)
      const admission = admissionByName.get(definition.name)
      const health = adapter?.health
      return {
        adapter: definition.name,
        languages: definition.languages.join(', '),
        tier: adapter ? String(adapter.tier) : '',
        enabled: adapter ? 'yes' : 'no',
        health: health
          ? `${health.state}${health.reason ? ` (${health.reason})` : ''}` +
            `${health.latencyMs !== undefined ? ` ${Math.round(health.latencyMs)} ms` : ''}`
          : 'not enabled',
        breaker: adapter ? adapter.breaker : '',
        // In use per lane (interactive/batch) of the adapter's slots, the interactive reservation, waiting per lane.
        slots: admission
          ? `${admission.inUse.interactive}/${admission.inUse.batch} of ` +
            `${admission.slots ?? 'unbounded'}${admission.reserved ? ` (${admission.reserved} interactive)` : ''}`
          : '',
        queued: admission ? `${admission.queued.interactive}/${admission.queued.batch}` : '',
        description: definition.description,
      }
    })
    if (flags.json) {
      out.write(
        JSON.stringify({ active: status.active, lastSwitch: status.lastSwitch ?? null, adapters: rows, admission: status.admission }) +
          '\n',
      )
    } else {
      out.write(formatTable(rows))
      out.write(
        `\nactive adapter: ` +
          `${status.active}${status.active === 'auto' ? ' (routing picks the cheapest available adapter for each request)' : ''}\n`,
      )
      out.write(
        `slots and queued are interactive/batch; batch runs on in-process tiers: ` +
          `${status.admission.inProcessBatch.inUse} of ${status.admission.inProcessBatch.limit}\n`,
      )
      const lastSwitch = status.lastSwitch
        ? `${status.lastSwitch.from ?? 'auto'} → ${status.lastSwitch.to ?? 'auto'} at ${status.lastSwitch.at}: ${status.lastSwitch.reason}`
        : 'none'
      out.write(`last switch: ${lastSwitch}\n`)
    }
    return 0
  })
}

/** The seccomp filter's calls, wrapped to the width of a terminal. */
function formatSyscallFilter(filter: SyscallFilterSummary): string {
  const lines = ['', `seccomp filter on every run: ${filter.denied.length} system calls answer EPERM:`]
  let line = ' '
  for (const call of filter.denied) {
    if (line.length + call.length + 1 > 100) (lines.push(line), (line = ' '))
    line += ` ${call}`
  }
  lines.push(line)
  for (const rule of filter.conditional) lines.push(`  ${rule.call}: ${rule.errno} ${rule.when}`)
  lines.push(`  a call through another architecture's ABI: ${filter.foreignArchitecture}`)
  return `${lines.join('\n')}\n`
}

export async function policyCommand(
  flags: { config?: string; json?: boolean; adapter: string; profile?: string },
  out: NodeJS.WritableStream,
): Promise<number> {
  return withExecgate(flags, async (execgate) => {
    const explanation = execgate.explainPolicy(flags.adapter, flags.profile)
    const { allowPrivateRanges, ...egressCaps } = execgate.config.security.egress
    // The test-only exemption is named whenever it is set, so it cannot sit in a production config unnoticed.
    const exemption = allowPrivateRanges.length
      ? `WARNING: security.egress.allowPrivateRanges exempts ${allowPrivateRanges.join(', ')} ` +
        `from the egress gateway's private-address check (for tests only)`
      : undefined
    if (flags.json) {
      out.write(JSON.stringify({ ...explanation, egress: { ...egressCaps, allowPrivateRanges } }) + '\n')
    } else {
      out.write(
        formatTable(
          explanation.rows.map((row) => ({
            limit: row.limit,
            setting: row.setting,
            enforcement: row.enforcement,
            required: row.required ? (row.satisfied ? 'yes' : 'yes — NOT ENFORCED') : '',
          })),
        ),
      )
      if (explanation.syscallFilter) out.write(formatSyscallFilter(explanation.syscallFilter))
      if (exemption) out.write(`\n${exemption}\n`)
      const verdict = explanation.usable
        ? `${flags.adapter} can run requests under this policy`
        : `${flags.adapter} cannot run requests under this policy: a required limit is not enforced`
      out.write(`\n${verdict}\n`)
    }
    return explanation.usable ? 0 : 1
  })
}
