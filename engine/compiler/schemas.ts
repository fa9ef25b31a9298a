// JSON Schema validation with ajv. Validators are compiled once per schema digest and cached,
// because compiling costs milliseconds inside the component and a plan reuses its schemas.
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import { canonicalDigest } from '../hash.js';
import { templateSchema } from '../protocol/template-schema.js';

// ajv is CommonJS; its default export is the class under `.default` in ESM interop.
const Ajv = ((AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule) as unknown as typeof AjvModule.default;
const ajv = new Ajv({ allErrors: true, strict: false, logger: false, validateFormats: false });
const cache = new Map<string, ValidateFunction>();
const cacheSizeMax = 512;

export interface SchemaProblem {
  /** JSON pointer into the validated value. */
  pointer: string;
  message: string;
}

// Plans are cached, so the same schema object comes back again and again: look it up by identity
// before paying for a canonical digest.
const byIdentity = new WeakMap<object, ValidateFunction>();

export function compileSchema(schema: unknown): ValidateFunction {
  if (schema !== null && typeof schema === 'object') {
    const known = byIdentity.get(schema);
    if (known) return known;
  }
  const validate = compileByDigest(schema);
  if (schema !== null && typeof schema === 'object') byIdentity.set(schema, validate);
  return validate;
}

function compileByDigest(schema: unknown): ValidateFunction {
  const key = canonicalDigest(schema);
  const cached = cache.get(key);
  if (cached) return cached;
  const validate = ajv.compile(schema as object);
  if (cache.size >= cacheSizeMax) cache.delete(cache.keys().next().value as string);
  cache.set(key, validate);
  return validate;
}

/** A message when the schema itself does not compile. */
export function schemaCompileProblem(schema: unknown): string | undefined {
  try {
    compileSchema(schema);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

export function describeErrors(errors: ErrorObject[] | null | undefined): SchemaProblem[] {
  return (errors ?? []).map((e) => {
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') message = `has unknown property ${JSON.stringify((e.params as any).additionalProperty)}`;
    else if (e.keyword === 'enum') message = `${message}: ${JSON.stringify((e.params as any).allowedValues)}`;
    else if (e.keyword === 'const') message = `must be ${JSON.stringify((e.params as any).allowedValue)}`;
    else if (e.keyword === 'discriminator' && (e.params as any).tagValue !== undefined) message = `${message}, got ${JSON.stringify((e.params as any).tagValue)}`;
    return { pointer: e.instancePath, message };
  });
}

// The template schema's own instance: its bindings use `discriminator`, which this instance
// understands. The instance for the schemas templates carry keeps ajv's default (the keyword
// ignored), so an OpenAPI schema with a `discriminator` ajv cannot compile still compiles there.
// Compiled while the module initialises, i.e. at build time, in the component's snapshot.
const templateValidator = new Ajv({ allErrors: true, strict: false, logger: false, validateFormats: false, discriminator: true }).compile(templateSchema);

/** Checks a value against the template schema. */
export function checkTemplateShape(value: unknown): SchemaProblem[] {
  return templateValidator(value) ? [] : describeErrors(templateValidator.errors);
}

export function checkAgainst(schema: unknown, value: unknown): SchemaProblem[] {
  const validate = compileSchema(schema);
  return validate(value) ? [] : describeErrors(validate.errors);
}

// A second instance for the run input: it writes the schema's `default`s into the value it
// validates (ajv `useDefaults`), so it must only ever see a copy the engine owns.
const ajvWithDefaults = new Ajv({ allErrors: true, strict: false, logger: false, validateFormats: false, useDefaults: true });
const withDefaults = new Map<string, ValidateFunction>();

/**
 * Applies the schema's `default`s to `value` in place (missing properties, also nested), then
 * validates it. The caller passes a copy: the value is changed even when it does not validate.
 */
export function applyDefaultsAndCheck(schema: unknown, value: unknown): SchemaProblem[] {
  const key = canonicalDigest(schema);
  let validate = withDefaults.get(key);
  if (!validate) {
    validate = ajvWithDefaults.compile(schema as object);
    if (withDefaults.size >= cacheSizeMax) withDefaults.delete(withDefaults.keys().next().value as string);
    withDefaults.set(key, validate);
  }
  return validate(value) ? [] : describeErrors(validate.errors);
}
