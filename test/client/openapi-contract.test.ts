import path from 'node:path'
import ts from 'typescript'
import { CLIENT_ROUTES, type RouteName } from '../../src/client'
import { openApiDocument } from '../../src/server/openapi'

/**
 * The client cannot drift from the server: every route it calls (src/client/client-routes.ts, the only routes its
 * transport accepts) is in the server's OpenAPI document with that method and those path parameters, the query
 * parameters it sends are declared there, and the TypeScript types it sends and reads agree with the document's
 * schemas: request fields are the schema's properties, every field the schema requires of a response is a
 * non-optional field of the client's type. The types are read with the TypeScript checker from src/client/index.ts.
 */

type Schema = { $ref?: string; properties?: Record<string, unknown>; required?: string[]; additionalProperties?: boolean }
type Operation = {
  parameters?: { name: string; in: string }[]
  requestBody?: { content?: Record<string, { schema?: Schema }> }
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>
}
type OpenApi = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } }
const document = openApiDocument() as OpenApi
const resolver =
  (doc: OpenApi) =>
  (schema: Schema | undefined): Schema | undefined =>
    schema?.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema
const operationIn =
  (doc: OpenApi) =>
  (name: RouteName): Operation | undefined =>
    doc.paths[CLIENT_ROUTES[name].path]?.[CLIENT_ROUTES[name].method.toLowerCase()]

/** Properties of an exported type of the client (name → optional?), as the compiler sees them. */
const program = ts.createProgram([path.join(__dirname, '../../src/client/index.ts')], {
  strict: true,
  skipLibCheck: true,
  types: ['node'],
  moduleResolution: ts.ModuleResolutionKind.Node10,
  target: ts.ScriptTarget.ES2022,
  resolveJsonModule: true,
})
const checker = program.getTypeChecker()
const clientModule = checker.getSymbolAtLocation(program.getSourceFile(path.join(__dirname, '../../src/client/index.ts'))!)!
function propertiesOf(typeName: string): Map<string, boolean> {
  const symbol = checker.getExportsOfModule(clientModule).find((item) => item.name === typeName)
  if (!symbol) throw new Error(`execgate/client exports no type ${typeName}`)
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  const type = checker.getDeclaredTypeOfSymbol(target)
  return new Map(checker.getPropertiesOfType(type).map((property) => [property.name, (property.flags & ts.SymbolFlags.Optional) !== 0]))
}

/** What each route sends and reads, by the client's type names (its methods' parameter and result types). */
const BODIES: Partial<Record<RouteName, string>> = {
  execute: 'ExecutionRequest',
  submitTask: 'TaskSpec',
  resumeTask: 'ResumeChanges',
  runPlan: 'PlanSpec',
  resumePlan: 'ResumeChanges',
  startSandbox: 'SandboxStartOptions',
  execSandbox: 'SandboxExecRequest',
}
const RESULTS: Partial<Record<RouteName, string>> = {
  execute: 'ExecutionResult',
  execSandbox: 'ExecutionResult',
  snapshotSandbox: 'SandboxSnapshot',
  submitTask: 'Task',
  getTask: 'Task',
  cancelTask: 'Task',
  suspendTask: 'Task',
  resumeTask: 'Task',
  runPlan: 'PlanView',
  getPlan: 'PlanView',
  cancelPlan: 'PlanView',
  suspendPlan: 'PlanView',
  resumePlan: 'PlanView',
  receipt: 'ReceiptEnvelope',
  planReceipt: 'ReceiptEnvelope',
  publicKey: 'LedgerPublicKey',
  uploadFile: 'UploadResult',
  getUpload: 'UploadedFile',
}
const QUERIES: Partial<Record<RouteName, string[]>> = {
  listTasks: [...propertiesOf('ListOptions').keys(), 'intentId'],
  listPlans: [...propertiesOf('ListOptions').keys()],
  lineage: [...propertiesOf('LineageLimits').keys()],
  exportLedger: ['format', ...propertiesOf('ExportOptions').keys()],
  writeSandboxFile: ['sha256'],
  uploadFile: ['sha256'],
}

/**
 * Where the client and a document disagree, by kind, one line each; every test below asks for none against the server's
 * document, and the last one checks that a document drifted on purpose is caught.
 */
function drift(doc: OpenApi): Record<'routes' | 'pathParameters' | 'queries' | 'requests' | 'responses', string[]> {
  const operation = operationIn(doc)
  const resolve = resolver(doc)
  const found = {
    routes: [] as string[],
    pathParameters: [] as string[],
    queries: [] as string[],
    requests: [] as string[],
    responses: [] as string[],
  }
  for (const [name, route] of Object.entries(CLIENT_ROUTES) as [RouteName, (typeof CLIENT_ROUTES)[RouteName]][]) {
    // Routes of features still landing are checked as soon as the server documents them.
    const optional = 'optional' in route && !doc.paths[route.path]
    const op = operation(name)
    if (!op) {
      if (!optional) found.routes.push(`${route.method} ${route.path}`)
      continue
    }
    const ours = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort()
    const theirs = (op.parameters ?? [])
      .filter((parameter) => parameter.in === 'path')
      .map((parameter) => parameter.name)
      .sort()
    if (ours.join() !== theirs.join()) found.pathParameters.push(`${name}: client {${ours.join()}}, document {${theirs.join()}}`)
  }
  for (const [name, sent] of Object.entries(QUERIES) as [RouteName, string[]][]) {
    const declared = (operation(name)?.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name)
    for (const query of sent) if (!declared.includes(query)) found.queries.push(`${name}: ?${query} undeclared`)
  }
  for (const [name, typeName] of Object.entries(BODIES) as [RouteName, string][]) {
    const schema = resolve(operation(name)?.requestBody?.content?.['application/json']?.schema)
    if (!schema) {
      found.requests.push(`${name}: no request schema`)
      continue
    }
    const ours = propertiesOf(typeName)
    for (const field of schema.required ?? [])
      if (!ours.has(field) || ours.get(field) === true) found.requests.push(`${typeName}.${field}: required by the document`)
    if (schema.properties) {
      const theirs = Object.keys(schema.properties)
      for (const field of ours.keys()) if (!theirs.includes(field)) found.requests.push(`${typeName}.${field}: not in the schema`)
      for (const field of theirs) if (!ours.has(field)) found.requests.push(`${typeName}.${field}: not in the type`)
    }
  }
  for (const [name, typeName] of Object.entries(RESULTS) as [RouteName, string][]) {
    const responses = Object.entries(operation(name)?.responses ?? {}).filter(([status]) => status.startsWith('2'))
    const schema = responses.map(([, response]) => resolve(response.content?.['application/json']?.schema)).find(Boolean)
    if (!schema?.required) {
      found.responses.push(`${name}: no response schema with required fields`)
      continue
    }
    const ours = propertiesOf(typeName)
    for (const field of schema.required)
      if (ours.get(field) !== false) found.responses.push(`${typeName}.${field}: required by the document`)
  }
  return found
}

describe('execgate/client against the OpenAPI document', () => {
  const found = drift(document)

  test('every route the client calls is in the document with its method', () => {
    expect(found.routes).toEqual([])
  })

  test("the client's path parameters are the document's", () => {
    expect(found.pathParameters).toEqual([])
  })

  test('every query parameter the client sends is declared', () => {
    expect(found.queries).toEqual([])
  })

  test("request bodies: the client's type has the schema's fields, and the schema's required ones are required", () => {
    expect(found.requests).toEqual([])
  })

  test("responses: every field the document requires is a non-optional field of the client's type", () => {
    expect(found.responses).toEqual([])
  })

  test('the check notices drift: a document changed on purpose fails each kind of check', () => {
    const drifted = structuredClone(document)
    delete drifted.paths['/v1/tasks/{id}/suspend']
    const getPlan = drifted.paths['/v1/plans/{id}']!.get!
    for (const parameter of getPlan.parameters ?? []) if (parameter.name === 'id') parameter.name = 'planId'
    for (const parameter of drifted.paths['/v1/tasks']!.get!.parameters ?? []) if (parameter.name === 'cursor') parameter.name = 'page'
    const executionRequest = resolver(drifted)(drifted.paths['/v1/executions']!.post!.requestBody!.content!['application/json']!.schema)!
    executionRequest.properties = { ...executionRequest.properties, retries: { type: 'integer' } }
    const result = resolver(drifted)({ $ref: '#/components/schemas/ExecutionResult' })!
    result.required = [...(result.required ?? []), 'value']
    const caught = drift(drifted)
    expect(caught.routes).toEqual(['POST /v1/tasks/{id}/suspend'])
    expect(caught.pathParameters).toContain('getPlan: client {id}, document {planId}')
    expect(caught.queries).toContain('listTasks: ?cursor undeclared')
    expect(caught.requests).toContain('ExecutionRequest.retries: not in the type')
    expect(caught.responses).toEqual(expect.arrayContaining(['ExecutionResult.value: required by the document']))
    // And the untouched document still passes: the failures above are the drift, not the check.
    expect(Object.values(drift(document)).flat()).toEqual([])
  })
})
