// JSON Schema checks of the trigger pipeline (ajv, as the engine validates a run's input): a
// binding's literals at publish, and a mapped input before its run is created, so that a bad
// event is refused with 422 instead of becoming a run that fails at start.
import { createRequire } from 'node:module';
import type AjvModule from 'ajv';
import type { ValidateFunction } from 'ajv';
import { canonicalDigest } from '../catalog/catalog.js';

// ajv is loaded by the first check, not when the package is imported: loading it is about a
// third of the CPU of importing the package (bench/cold/README.md), and a process that runs
// workflows without triggers never checks a schema here.
const requireFromHere = createRequire(import.meta.url);
type Ajv = InstanceType<typeof AjvModule.default>;
let ajvInstance: Ajv | undefined;

function ajv(): Ajv {
  if (ajvInstance) return ajvInstance;
  // ajv is CommonJS; the class is also its `default` export.
  const { default: AjvClass } = requireFromHere('ajv') as typeof AjvModule;
  // `useDefaults` as the engine applies the input schema's defaults: only ever given a copy.
  ajvInstance = new AjvClass({ allErrors: true, strict: false, logger: false, validateFormats: false, useDefaults: true });
  return ajvInstance;
}

const cache = new Map<string, ValidateFunction>();
const cacheEntriesMax = 256;

export interface SchemaProblem {
  /** JSON pointer into the checked value. */
  pointer: string;
  message: string;
}

/** Problems of `value` (a copy of it is checked) against `schema`; a schema that does not compile is one problem. */
export function schemaProblems(schema: unknown, value: unknown): SchemaProblem[] {
  let validate: ValidateFunction;
  try {
    const key = canonicalDigest(schema);
    validate = cache.get(key) ?? ajv().compile(schema as object);
    if (!cache.has(key)) {
      if (cache.size >= cacheEntriesMax) cache.delete(cache.keys().next().value as string);
      cache.set(key, validate);
    }
  } catch (err) {
    return [{ pointer: '', message: `the schema does not compile: ${(err as Error).message}` }];
  }
  if (validate(structuredClone(value))) return [];
  return (validate.errors ?? []).map((e) => ({
    pointer: e.instancePath,
    message: e.keyword === 'additionalProperties' ? `has unknown property ${JSON.stringify((e.params as { additionalProperty?: string }).additionalProperty)}` : (e.message ?? 'is invalid'),
  }));
}
