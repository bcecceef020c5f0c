import { DATA_PACKAGES, isDataPackage, type CodeExecutionAdapter, type DataPackage, type ExecutionRequest } from '../core'
import { scanPython } from '../runtime/languages/python-scan'

/** Scans are kept per request object: routing asks about the same request once per candidate adapter. */
const scanned = new WeakMap<ExecutionRequest, readonly DataPackage[]>()

/**
 * The data packages (src/core/packages.ts) a Python request imports, read from the code before anything runs, so
 * routing can send it to a tier that has them instead of a cold start that ends in ModuleNotFoundError.
 */
export function neededPackages(request: ExecutionRequest): readonly DataPackage[] {
  if (request.language !== 'python') return []
  const known = scanned.get(request)
  if (known) return known
  let names: DataPackage[] = []
  try {
    names = [
      ...new Set(
        scanPython(request.code)
          .imports.map(({ name }) => name.split('.')[0]!)
          .filter(isDataPackage),
      ),
    ]
  } catch {
    // code the scanner cannot read is the static check's to report; it needs no package here
  }
  scanned.set(request, names)
  return names
}

/** The packages the adapter lacks of those the request imports. */
export function missingPackages(adapter: CodeExecutionAdapter, request: ExecutionRequest): DataPackage[] {
  const have = adapter.capabilities.packages ?? []
  return neededPackages(request).filter((name) => !have.includes(name))
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
