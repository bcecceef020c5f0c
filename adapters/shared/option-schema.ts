/**
 * One option of an adapter, as a convict schema leaf: src/config composes every adapter's leaves under
 * `adapters.<name>`, and the adapter reads its defaults from the same leaves, so each default is written once.
 * `format` is a convict format: a built-in (`String`, `Boolean`), a named format that src/config registers
 * (`'positive-int'`, `'non-negative-int'`), or a function that throws a message saying what is allowed.
 */
export interface OptionLeaf<T> {
  doc: string
  format: unknown
  default: T
  /** The environment variable; src/config checks it is the one derived from the key path, so it cannot drift. */
  env: string
}

export type OptionSchema<Options> = { readonly [K in keyof Options]: OptionLeaf<Options[K]> }

/** Every option the caller left out (or set to undefined) takes the schema's default. */
export function withOptionDefaults<Options>(schema: OptionSchema<Options>, given: Partial<Options>): Options {
  const resolved = {} as Options
  for (const key of Object.keys(schema) as (keyof Options)[]) resolved[key] = given[key] ?? schema[key].default
  return resolved
}
