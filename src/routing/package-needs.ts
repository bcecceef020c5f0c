import { DATA_PACKAGES, isDataPackage, type CodeExecutionAdapter, type DataPackage, type ExecutionRequest } from '../core'
import { scanPython, type PythonScan } from '../runtime/languages/python-scan'

/**
 * What each scan imports of the data packages, kept per scan: scanPython answers code sent again with the scan it
 * made the first time, so a run of code seen before (most of the traffic) finds its answer without a copy.
 */
const scanned = new WeakMap<PythonScan, readonly DataPackage[]>()
const NONE: readonly DataPackage[] = Object.freeze([])

/**
 * The data packages (src/core/packages.ts) a Python request imports, read from the code before anything runs, so
 * routing can send it to a tier that has them instead of a cold start that ends in ModuleNotFoundError.
 */
export function neededPackages(request: ExecutionRequest): readonly DataPackage[] {
  if (request.language !== 'python') return NONE
  let scan: PythonScan
  try {
    scan = scanPython(request.code)
  } catch {
    // code the scanner cannot read is the static check's to report; it needs no package here
    return NONE
  }
  if (scan.imports.length === 0) return NONE
  let names = scanned.get(scan)
  if (!names) {
    names = [...new Set(scan.imports.map(({ name }) => name.split('.')[0]!).filter(isDataPackage))]
    scanned.set(scan, names)
  }
  return names
}

/** The packages the adapter lacks of those the request imports. */
export function missingPackages(adapter: CodeExecutionAdapter, request: ExecutionRequest): readonly DataPackage[] {
  const needed = neededPackages(request)
  if (needed.length === 0) return NONE
  const have = adapter.capabilities.packages ?? []
  return needed.filter((name) => !have.includes(name))
}

/** `pandas (Debian package python3-pandas)`, for refusals. */
export function describePackages(names: readonly DataPackage[]): string {
  return names.map((name) => `${name} (Debian package ${DATA_PACKAGES[name]})`).join(', ')
}

/**
 * What would provide the packages: the process tier after scripts/setup/data-python.sh, the docker tier with the
 * image scripts/setup/podman.sh builds.
 */
export const PACKAGE_PROVIDERS =
  'the process adapter has them once scripts/setup/data-python.sh has installed them (Debian: ' +
  'apt-get install python3-numpy python3-pandas python3-scipy python3-matplotlib ' +
  'python3-sklearn python3-openpyxl); the docker adapter has them with the ' +
  'execgate-sandbox:bookworm image that scripts/setup/podman.sh builds'
