// The machinery beneath the contract: worker and process pools, their job protocol, the run controller, session
// stores and caches. Adapters build on it; it is not part of the public API and may change in any release.
export * from './run-controller'
export * from './worker-script'
export * from './worker-pool'
export * from './worker-jobs'
export * from './process-worker'
export * from './session-store'
export * from './lru-cache'
export * from './bedrock-converse'
export * from './languages'
export * from './pool'
export * from './child-process'
export * from './lazy-validator'
