import { isDataPackage, type AdapterRegistry, type SecurityPolicy, type ValidationIssue } from '../core'

/** The module a static check's `import of "pandas.io" is not allowed …` names, at top level. */
function refusedModule(issue: ValidationIssue): string | undefined {
  const match =
    /^(?:import|dynamic import\(\)|require\(\)|static import) of "([^"]+)"/.exec(issue.message) ??
    /of "([^"]+)" is not allowed/.exec(issue.message)
  return match?.[1]?.split(/[./]/)[0]
}

/**
 * The words of a refused import: every module the code imports that the policy refuses (not only the first), with
 * what would allow each: the policy profiles that list it, and for data packages the adapters that have them.
 */
export function describeImportRefusal(
  issues: readonly ValidationIssue[],
  policy: SecurityPolicy,
  profiles: Readonly<Record<string, SecurityPolicy>>,
  registry: AdapterRegistry,
): string | undefined {
  const refused = issues.filter((issue) => issue.code === 'import_not_allowed')
  const modules = [...new Set(refused.map(refusedModule).filter((name): name is string => !!name))]
  if (modules.length === 0) return undefined
  const where = modules.map((name) => {
    const line = refused.find((issue) => refusedModule(issue) === name)?.line
    return line ? `${name} (line ${line})` : name
  })
  const allowingProfiles = Object.entries(profiles)
    .filter(([, profile]) => modules.every((name) => profile.allowedImports.includes(name)))
    .map(([name]) => name)
  const packages = modules.filter(isDataPackage)
  const holders = registry
    .list()
    .filter((adapter) => packages.length > 0 && packages.every((name) => adapter.capabilities.packages?.includes(name)))
    .map((adapter) => adapter.name)
  const allow =
    allowingProfiles.length > 0
      ? `; the policy profile${allowingProfiles.length > 1 ? 's' : ''} ` +
        `${allowingProfiles.map((name) => `"${name}"`).join(', ')} ` +
        `allow${allowingProfiles.length > 1 ? '' : 's'} ${modules.length > 1 ? 'them' : 'it'}`
      : "; no policy profile allows them all: an operator can add them to a profile's allowedImports"
  const adapters =
    packages.length > 0
      ? holders.length > 0
        ? `; adapters with ${packages.join(', ')}: ${holders.join(', ')}`
        : `; no enabled adapter has ${packages.join(', ')}`
      : ''
  return (
    `import${modules.length > 1 ? 's' : ''} not allowed by the policy: ${where.join(', ')} ` +
    `(allowed: ${policy.allowedImports.join(', ') || 'none'})${allow}${adapters}`
  )
}
