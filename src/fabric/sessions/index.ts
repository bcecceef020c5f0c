export { SessionDirectory, type SessionDirectoryOptions, type SessionWhereabouts } from './session-directory'
export { MemorySessionRegistry, type SessionRecord, type SessionRegistry } from './session-registry'
export { RedisSessionRegistry } from './session-registry-redis'
