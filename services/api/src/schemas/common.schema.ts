import Joi from 'joi';

export const uuid = () => Joi.string().guid();
export const timestamp = () => Joi.string().isoDate().description('ISO 8601 UTC with milliseconds');

/** `limit` / `offset` of every list endpoint (docs/api.md, Deployments; Listeners). */
export const paginationQuery = {
  limit: Joi.number().integer().min(1).max(100).default(20).description('Maximum number of resources to return'),
  offset: Joi.number()
    .integer()
    .min(0)
    .default(0)
    .description('Pagination offset; pass the returned `offset` for the next page'),
};

export interface PaginationQuery {
  limit: number;
  offset: number;
}

/** The list envelope: `offset` is where the next page starts. */
export const listEnvelope = (item: Joi.Schema, id: string) =>
  Joi.object({
    resources: Joi.array().items(item).required(),
    offset: Joi.number().integer().min(0).required().description('Offset of the next page'),
  }).id(id);

export function envelope<T>(resources: T[], page: PaginationQuery): { resources: T[]; offset: number } {
  return { resources, offset: page.offset + resources.length };
}

export const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
