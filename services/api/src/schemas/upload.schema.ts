import Joi from 'joi';

/** The token is the credential: anything malformed is a 401 from the service, not a 422. */
export const uploadParams = Joi.object({ token: Joi.string().required() });

export const uploadUrlResponse = Joi.object({
  upload_url: Joi.string()
    .uri()
    .required()
    .description('Absolute URL on this service; PUT the gzip tarball there without an API key'),
  object_path: Joi.string().required().description('Opaque; pass it as source_revision_config.source_tarball_path'),
}).id('UploadUrl');

export const uploadCompleteResponse = Joi.object({}).id('UploadComplete');

export interface UploadUrlView {
  upload_url: string;
  object_path: string;
}
