/**
 * The raw baseline the api is measured against: express + joi + TypeORM, one table, no auth,
 * no logging, no outbox. `POST /items` validates a body shaped like an image deployment create
 * and inserts one row; `GET /items/:id` is a primary-key select. Run as its own process by the
 * bench (`node --import tsx bench/support/raw-server.ts`), on DATABASE_URL and PORT.
 */
import express from 'express';
import Joi from 'joi';
import { DataSource, EntitySchema } from 'typeorm';

interface Item {
  id: string;
  name: string;
  imageUri: string;
  secrets: Array<{ name: string; value: string }>;
  createdAt: Date;
}

const ItemSchema = new EntitySchema<Item>({
  name: 'Item',
  tableName: 'raw_items',
  columns: {
    id: { type: 'uuid', primary: true, generated: 'uuid' },
    name: { type: 'text' },
    imageUri: { type: 'text', name: 'image_uri' },
    secrets: { type: 'jsonb' },
    createdAt: { type: 'timestamptz', name: 'created_at', createDate: true },
  },
});

const body = Joi.object({
  name: Joi.string()
    .pattern(/^[a-z][a-z0-9-]*[a-z0-9]$/)
    .min(3)
    .max(63)
    .required(),
  source: Joi.string().valid('external_container').required(),
  source_config: Joi.object({ listener_id: Joi.string().uuid().required() }).unknown(true).required(),
  source_revision_config: Joi.object({ image_uri: Joi.string().max(512).required() })
    .unknown(true)
    .required(),
  secrets: Joi.array()
    .items(Joi.object({ name: Joi.string().required(), value: Joi.string().required() }))
    .default([]),
}).unknown(true);

const dataSource = new DataSource({
  type: 'postgres',
  url: process.env.DATABASE_URL,
  entities: [ItemSchema],
  synchronize: false,
  extra: { max: 10 },
});
await dataSource.initialize();
await dataSource.query(
  `CREATE TABLE IF NOT EXISTS raw_items (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL, image_uri text NOT NULL,
     secrets jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
);
const items = dataSource.getRepository(ItemSchema);

const app = express();
app.use(express.json());
app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
app.post('/items', async (req, res) => {
  const { value, error } = body.validate(req.body, { abortEarly: false });
  if (error) return void res.status(422).json({ detail: error.details.map((d) => d.message) });
  const row = await items.save({
    name: value.name,
    imageUri: value.source_revision_config.image_uri,
    secrets: value.secrets,
  });
  res.status(201).json(row);
});
app.get('/items/:id', async (req, res) => {
  const row = await items.findOneBy({ id: req.params.id });
  if (!row) return void res.status(404).json({ detail: 'not found' });
  res.json(row);
});
app.listen(Number(process.env.PORT), '127.0.0.1');
