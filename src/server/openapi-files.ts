/** The upload routes (src/server/file-routes.ts) in the OpenAPI document: files uploaded once, named by digest after. */

const error = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
})
const uploaded = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/UploadedFile' } } },
})
const digest = { name: 'sha256', in: 'path', required: true, schema: { type: 'string', pattern: '^(sha256:)?[0-9a-f]{64}$' } }

export const FILE_SCHEMAS = {
  UploadedFile: {
    type: 'object',
    required: ['sha256', 'bytes', 'createdAt'],
    properties: {
      sha256: { type: 'string' },
      bytes: { type: 'integer' },
      createdAt: { type: 'string', format: 'date-time' },
      reused: { type: 'boolean', description: 'PUT only: the tenant already held these bytes' },
    },
  },
}

export const FILE_PATHS = {
  '/v1/files': {
    put: {
      summary: "Upload a file (the body's raw bytes, any Content-Type), streamed into the upload store; name it as { path, sha256 } after",
      parameters: [
        {
          name: 'sha256',
          in: 'query',
          schema: { type: 'string' },
          description: 'the digest the bytes must have; one already held is not read again',
        },
      ],
      requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      responses: {
        '201': uploaded('stored'),
        '200': uploaded('the tenant already held these bytes (reused: true)'),
        '400': error('the bytes do not hash to the sha256 given (EXECGATE_FILE_DIGEST_MISMATCH)'),
        '413': error("past the tenant's quota, fabric.files.quotaBytes (EXECGATE_FILE_QUOTA); nothing is kept"),
      },
    },
    get: {
      summary: "The tenant's uploads, its bytes used and its quota",
      responses: { '200': { description: '{ files: UploadedFile[], usedBytes, quotaBytes }' } },
    },
  },
  '/v1/files/{sha256}': {
    get: {
      summary: "One of the tenant's uploads (HEAD: whether it holds it, before uploading)",
      parameters: [digest],
      responses: { '200': uploaded('the upload'), '404': error("no such upload for this tenant (another tenant's answers alike)") },
    },
    delete: {
      summary: "Forget an upload: the tenant's quota is freed; the bytes go when no tenant holds them",
      parameters: [digest],
      responses: { '204': { description: 'forgotten' }, '404': error('no such upload for this tenant') },
    },
  },
}
