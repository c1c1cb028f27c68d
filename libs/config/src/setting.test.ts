import Joi from 'joi';
import { describe, expect, it } from 'vitest';
import { int, optional, schemaKeysOf, setting, settingsOf, valuesOf } from './setting.js';

const group = {
  port: int('T_PORT', 8124, 'a port', { min: 1, max: 65535 }),
  list: setting<string[]>('T_LIST', Joi.string().default('a,b'), 'a list', { read: (raw: string) => raw.split(',') }),
  nested: { maybe: optional('T_MAYBE', Joi.string(), 'unset is undefined') },
};

describe('settings', () => {
  it('build one joi key per variable and read values in Config shape', () => {
    const schema = Joi.object(schemaKeysOf(group));
    const { value } = schema.validate({ T_PORT: '9000' }, { convert: true });
    expect(valuesOf(group, value)).toEqual({ port: 9000, list: ['a', 'b'], nested: { maybe: undefined } });
    expect(settingsOf(group).map((s) => s.env)).toEqual(['T_PORT', 'T_LIST', 'T_MAYBE']);
  });

  it('refuse two declarations of one variable', () => {
    expect(() => schemaKeysOf(group, { again: int('T_PORT', 1, 'the same variable again') })).toThrow(
      'T_PORT is declared twice',
    );
  });
});
