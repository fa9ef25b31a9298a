// Portable ids: what run, node, template and trigger ids look like everywhere (ASCII, at most 36
// characters, safe in file names, URLs and SQL without quoting).
import { limits } from '../limits.js';

/** The pattern's text, for messages and JSON Schemas. */
export const portableIdSource = `[A-Za-z0-9][A-Za-z0-9._:-]{0,${limits.idLengthMax - 1}}`;

export const portableIdPattern = new RegExp(`^${portableIdSource}$`);

export function isPortableId(value: unknown): value is string {
  return typeof value === 'string' && portableIdPattern.test(value);
}
