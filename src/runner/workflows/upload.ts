import type { Multipart } from '@fastify/multipart';
import { PayloadTooLargeError, ValidationError } from '../../infra/errors.js';
import type { StoredFile, WorkflowStorage } from './storage.js';

/** Largest accepted workflow archive. */
export const MAX_WORKFLOW_BYTES = 100 * 1024 * 1024;

/**
 * Largest text field in bytes: a description of 10,000 characters (the JSON rule) may take four
 * bytes each in UTF-8; the characters are counted by the route's schema.
 */
const MAX_FIELD_BYTES = 40_000;

export interface PartLimits {
  fileSize: number;
  files: number;
  fields: number;
  fieldSize: number;
}

/** The parts of a multipart request, read with these limits (the route hands over `req.parts`). */
export type PartSource = (limits: PartLimits) => AsyncIterable<Multipart>;

export interface Upload {
  fields: Record<string, string>;
  file: StoredFile & { fileName: string };
}

/**
 * Reads a multipart upload with exactly one `file` part and the `allowed` text fields, streaming
 * the file into storage as `workflowId`'s. On any failure nothing stays stored.
 */
export async function readUpload(parts: PartSource, storage: WorkflowStorage, workflowId: string, allowed: string[]): Promise<Upload> {
  const fields: Record<string, string> = {};
  let file: Upload['file'] | null = null;
  try {
    for await (const part of parts({ fileSize: MAX_WORKFLOW_BYTES, files: 1, fields: 10, fieldSize: MAX_FIELD_BYTES })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume();
          throw new ValidationError(`unknown file part "${part.fieldname}"`, [{ field: part.fieldname, message: 'unknown part; send the archive as "file"' }]);
        }
        const stored = await storage.save(workflowId, part.file, () => part.file.truncated, MAX_WORKFLOW_BYTES);
        file = { ...stored, fileName: part.filename || 'workflow.knwf' };
      } else {
        if (!allowed.includes(part.fieldname)) {
          throw new ValidationError(`unknown field "${part.fieldname}"`, [{ field: part.fieldname, message: 'unknown field' }]);
        }
        // The parser cuts a longer value: refused, never stored cut short.
        if (part.valueTruncated) {
          throw new ValidationError(`field "${part.fieldname}" is too long`, [{ field: part.fieldname, message: `is longer than ${MAX_FIELD_BYTES} bytes` }]);
        }
        fields[part.fieldname] = String(part.value);
      }
    }
  } catch (e) {
    if (file) await storage.remove(file.storageKey);
    const code = (e as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw new PayloadTooLargeError(`the workflow archive is larger than ${MAX_WORKFLOW_BYTES} bytes`);
    if (code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') {
      throw new ValidationError('too many parts: send one "file" and at most the documented fields', [{ field: '(body)', message: 'too many parts' }]);
    }
    throw e;
  }
  if (!file) throw new ValidationError('the "file" part is required', [{ field: 'file', message: 'is required' }]);
  return { fields, file };
}
