/**
 * Third-party Python packages an adapter may carry (its `packages` capability), by the name code imports, with what
 * provides each: the Debian package the setup scripts install for the process tier and bake into the docker image.
 * Routing reads a run's imports against this table: code importing `pandas` goes to the cheapest tier that has it,
 * and when none does the answer names the package and what would provide it.
 */
export const DATA_PACKAGES = Object.freeze({
  numpy: 'python3-numpy',
  pandas: 'python3-pandas',
  scipy: 'python3-scipy',
  matplotlib: 'python3-matplotlib',
  sklearn: 'python3-sklearn',
  openpyxl: 'python3-openpyxl',
} as const)

export type DataPackage = keyof typeof DATA_PACKAGES

export const DATA_PACKAGE_NAMES = Object.freeze(Object.keys(DATA_PACKAGES)) as readonly DataPackage[]

/** Whether a top-level module name is one of the packages adapters declare. */
export function isDataPackage(name: string): name is DataPackage {
  return Object.prototype.hasOwnProperty.call(DATA_PACKAGES, name)
}
