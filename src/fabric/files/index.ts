export { UploadStore, type UploadStoreOptions, type UploadedFile } from './upload-store'
export { RedisUploadIndex, SqliteUploadIndex, type UploadIndex, type IndexedUpload, type AddOutcome } from './upload-index'
