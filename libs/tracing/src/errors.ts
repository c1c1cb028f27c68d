/** The refusals of the ingest; shared with the rest of the api (docs/api.md, Errors). */
export { PayloadTooLargeError, UnprocessableError, UnsupportedMediaTypeError } from '@slipway/domain';
