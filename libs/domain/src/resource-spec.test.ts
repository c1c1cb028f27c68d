import { describe, expect, it } from 'vitest';
import {
  RESOURCE_SPEC_BOUNDS,
  capResourceSpec,
  resolveResourceSpec,
  resolveResourceSpecWithin,
  resourceSpecInputProblems,
  resourceSpecProblems,
  type ResourceCeilings,
} from './resource-spec.js';

describe('resolveResourceSpec: queue workers', () => {
  it('are off unless queue_min_scale is given, and the queue sizes follow the API ones', () => {
    const spec = resolveResourceSpec({ min_scale: 2, max_scale: 3, memory_mb: 300 }, 'dev');
    expect(spec).toMatchObject({ queue_enabled: false, queue_min_scale: 2, queue_max_scale: 3, queue_memory_mb: 300 });
  });

  it('are on when queue_min_scale is given, even as 0', () => {
    expect(resolveResourceSpec({ queue_min_scale: 2 }, 'dev').queue_enabled).toBe(true);
    expect(resolveResourceSpec({ queue_min_scale: 0 }, 'dev').queue_enabled).toBe(true);
  });

  it('follow queue_enabled when it is given: a spec read back and sent again keeps its mode', () => {
    const readBack = resolveResourceSpec({}, 'prod');
    expect(resolveResourceSpec(readBack, 'prod')).toEqual(readBack);
    expect(resolveResourceSpec({ queue_enabled: true }, 'dev')).toMatchObject({
      queue_enabled: true,
      queue_min_scale: 1,
    });
  });
});

const CEILINGS: ResourceCeilings = { memoryMb: 4096, cpu: 4, diskGi: 50, dbConnections: 200 };
const specLoc = (field: string) => ['body', 'source_config', 'resource_spec', field];

describe('resource_spec of a create or PATCH', () => {
  it('is valid with defaults, and what nobody asked for is lowered to its ceiling', () => {
    expect(resourceSpecInputProblems({}, 'prod', CEILINGS)).toEqual([]);
    // A small ceiling lowers the defaulted limits and database sizes instead of refusing them.
    const small: ResourceCeilings = { memoryMb: 1024, cpu: 1, diskGi: 5, dbConnections: 20 };
    expect(resourceSpecInputProblems({ cpu: 1, memory_mb: 1024 }, 'dev', small)).toEqual([]);
    expect(resolveResourceSpecWithin({ cpu: 1, memory_mb: 1024 }, 'dev', small)).toMatchObject({
      cpu: 1,
      cpu_limit: 1,
      memory_limit_mb: 1024,
      db_memory_limit_mb: 1024,
      db_storage_gi: 5,
      db_max_connections: 20,
    });
  });

  it('refuses a value given above its ceiling, naming the ceiling', () => {
    expect(
      resourceSpecInputProblems(
        { memory_mb: 5000, memory_limit_mb: 6000, cpu: 1, db_storage_gi: 60, db_max_connections: 100 },
        'dev',
        CEILINGS,
      ),
    ).toEqual([
      {
        loc: specLoc('memory_mb'),
        msg: "Input should be less than or equal to 4096 (the server's ceiling SLIPWAY_MAX_MEMORY_MB; memory_mb is 5000)",
        type: 'less_than_equal',
      },
      {
        loc: specLoc('memory_limit_mb'),
        msg: "Input should be less than or equal to 4096 (the server's ceiling SLIPWAY_MAX_MEMORY_MB; memory_limit_mb is 6000)",
        type: 'less_than_equal',
      },
      {
        loc: specLoc('db_storage_gi'),
        msg: "Input should be less than or equal to 50 (the server's ceiling SLIPWAY_MAX_DISK_GI; db_storage_gi is 60)",
        type: 'less_than_equal',
      },
    ]);
    expect(
      capResourceSpec({ cpu: 8 }, resolveResourceSpec({ cpu: 8 }, 'dev'), CEILINGS).problems.map((p) => p.loc.at(-1)),
    ).toEqual(['cpu']);
  });

  it('refuses a request above its limit and a minimum above its maximum, after defaults', () => {
    expect(
      resourceSpecInputProblems(
        { min_scale: 3, max_scale: 2, cpu: 2, cpu_limit: 1, queue_min_scale: 4, queue_max_scale: 1 },
        'dev',
        CEILINGS,
      ),
    ).toEqual([
      { loc: specLoc('min_scale'), msg: 'Value error, min_scale must not exceed max_scale', type: 'value_error' },
      {
        loc: specLoc('queue_min_scale'),
        msg: 'Value error, queue_min_scale must not exceed queue_max_scale',
        type: 'value_error',
      },
      { loc: specLoc('cpu'), msg: 'Value error, cpu must not exceed cpu_limit', type: 'value_error' },
    ]);
    // Every `<x>_limit` bounds its `<x>`, every `<x>max_scale` its `<x>min_scale`.
    const limits = Object.keys(resolveResourceSpec({}, 'dev')).filter(
      (f) => f.endsWith('_limit') || f.endsWith('_limit_mb') || f.endsWith('max_scale'),
    );
    expect(RESOURCE_SPEC_BOUNDS.map(([, high]) => high).sort()).toEqual(limits.sort());
    for (const [low, high] of RESOURCE_SPEC_BOUNDS) {
      const spec = { ...resolveResourceSpec({}, 'dev'), [low]: 2, [high]: 1 };
      expect(resourceSpecProblems(spec), low).toEqual([
        { loc: specLoc(low), msg: `Value error, ${low} must not exceed ${high}`, type: 'value_error' },
      ]);
    }
  });

  it('lists ceilings before order, the order checked on the lowered spec', () => {
    // cpu_limit defaults to 4 (its ceiling), below the cpu asked for: both problems are cpu's.
    expect(resourceSpecInputProblems({ cpu: 6 }, 'dev', CEILINGS).map((p) => [p.loc.at(-1), p.type])).toEqual([
      ['cpu', 'less_than_equal'],
      ['cpu', 'value_error'],
    ]);
  });
});
