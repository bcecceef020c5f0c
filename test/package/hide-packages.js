'use strict'
// Preloaded (`node -r`) to make the packages named in EXECGATE_TEST_HIDE_PACKAGES unresolvable, exactly as Node
// answers for a package that is not installed (code MODULE_NOT_FOUND, "Cannot find module 'name'"): resolution is
// where a missing package fails, so everything above it (require, import(), require.resolve) sees the real error.
const Module = require('node:module')
const hidden = new Set((process.env.EXECGATE_TEST_HIDE_PACKAGES || '').split(',').filter(Boolean))
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  const name = request.startsWith('@') ? request.split('/').slice(0, 2).join('/') : request.split('/')[0]
  if (hidden.has(name)) {
    const error = new Error(`Cannot find module '${request}'`)
    error.code = 'MODULE_NOT_FOUND'
    throw error
  }
  return resolve.call(this, request, ...rest)
}
