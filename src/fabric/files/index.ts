export { UploadStore, type UploadStoreOptions, type UploadedFile } from './upload-store'
