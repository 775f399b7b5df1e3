/**
 * The page fields from `--page <dir>`: text.md, changelog.md, faq.md, license.md and
 * instructions.md become the Markdown fields of the same names, page.json holds any other PATCH
 * field (name, description, contact, style, icon, iconBase64). Only what the folder has is sent
 * (PATCH changes only the fields it names).
 */
import fs from 'node:fs';
import path from 'node:path';
import { FIELD_NAMES, MARKDOWN_FIELDS } from '../../publishing/model/fields.js';
import { EXIT, PublishFailure } from './failure.js';

export function readPage(dir: string): Record<string, unknown> {
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new PublishFailure(EXIT.usage, `--page ${dir}: not a folder`);
  const body: Record<string, unknown> = {};
  const json = path.join(dir, 'page.json');
  if (fs.existsSync(json)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(json, 'utf8'));
    } catch (e) {
      throw new PublishFailure(EXIT.pageFields, `${json}: not valid JSON: ${(e as Error).message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new PublishFailure(EXIT.pageFields, `${json}: must be a JSON object of page fields`);
    const unknown = Object.keys(parsed).filter((k) => !(FIELD_NAMES as readonly string[]).includes(k));
    if (unknown.length) {
      throw new PublishFailure(EXIT.pageFields, `${json}: unknown fields ${unknown.join(', ')}`, [`the page fields are ${FIELD_NAMES.join(', ')}`]);
    }
    Object.assign(body, parsed);
  }
  for (const field of MARKDOWN_FIELDS) {
    const file = path.join(dir, `${field}.md`);
    if (!fs.existsSync(file)) continue;
    if (field in body) throw new PublishFailure(EXIT.pageFields, `${field} is both in ${field}.md and in page.json: keep one`);
    body[field] = fs.readFileSync(file, 'utf8');
  }
  if (Object.keys(body).length === 0) {
    throw new PublishFailure(EXIT.usage, `--page ${dir}: no page.json and none of ${MARKDOWN_FIELDS.map((f) => `${f}.md`).join(', ')}`);
  }
  return body;
}
